package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/registry"
)

// List implements registry.Repository.
func (r *Repo) List(ctx context.Context, prefix string) ([]registry.KV, error) {
	if err := r.check(ctx, "list", prefix); err != nil {
		return nil, err
	}
	under := strings.TrimSuffix(prefix, "/") + "/"
	r.st.mu.Lock()
	var out []registry.KV
	for k, e := range r.st.kv {
		if strings.HasPrefix(k, under) {
			out = append(out, registry.KV{Key: k, Value: slices.Clone(e.value), Version: registry.Version(e.version)})
		}
	}
	r.st.mu.Unlock()
	slices.SortFunc(out, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

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

// ListIsRangeRead implements registry.RangeReader: List reads the store once.
func (r *Repo) ListIsRangeRead() bool { return true }
