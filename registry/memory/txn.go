package memory

import (
	"context"
	"fmt"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Commit implements registry.Session.
func (s *session) Commit(ctx context.Context, txn registry.Txn) (registry.Version, error) {
	if err := txn.Check(); err != nil {
		return 0, err
	}
	if err := s.repo.check(ctx, "commit", "/"); err != nil {
		return 0, err
	}
	st := s.repo.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := s.alive("commit", txn.Conds[0].Key); err != nil {
		return 0, err
	}
	for _, c := range txn.Conds {
		e, ok := st.kv[c.Key]
		switch {
		case c.Version == 0 && ok:
			return 0, &registry.OpError{Op: "commit", Key: c.Key, Err: registry.ErrExists}
		case c.Version != 0 && !ok:
			return 0, &registry.OpError{Op: "commit", Key: c.Key, Err: registry.ErrNotFound}
		case c.Version != 0 && registry.Version(e.version) != c.Version:
			return 0, &registry.OpError{Op: "commit", Key: c.Key, Err: fmt.Errorf("%w: expected %d, found %d", registry.ErrBadVersion, c.Version, e.version)}
		}
	}
	// One revision for the whole transaction, as etcd gives.
	st.rev++
	rev := st.rev
	for _, o := range txn.Ops {
		if o.Delete {
			st.removeAt(o.Key, rev)
			continue
		}
		owner := (*session)(nil)
		if o.Ephemeral {
			owner = s
		} else if e, ok := st.kv[o.Key]; ok {
			owner = e.owner
		}
		st.writeAt(o.Key, o.Value, owner, rev)
	}
	return registry.Version(rev), nil
}
