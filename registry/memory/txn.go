package memory

import (
	"context"
	"fmt"
	"slices"

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
	if err := s.repo.checkSize("commit", txn.Conds[0].Key, txn.Size()); err != nil {
		return 0, err
	}
	st := s.repo.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := s.alive("commit", txn.Conds[0].Key); err != nil {
		return 0, err
	}
	if err := st.failedCond(txn); err != nil {
		return 0, err
	}
	return s.apply(txn), nil
}

// CommitFirst implements registry.FirstCommitter: the alternatives are
// tried in order under the store's lock.
func (s *session) CommitFirst(ctx context.Context, alts []registry.Txn) (int, registry.Version, error) {
	if err := registry.CheckAlternatives(alts); err != nil {
		return -1, 0, err
	}
	if err := s.repo.check(ctx, "commit", "/"); err != nil {
		return -1, 0, err
	}
	size := 0
	for _, t := range alts {
		size += t.Size()
	}
	if err := s.repo.checkSize("commit-first", alts[0].Conds[0].Key, size); err != nil {
		return -1, 0, err
	}
	st := s.repo.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := s.alive("commit", alts[0].Conds[0].Key); err != nil {
		return -1, 0, err
	}
	none := &registry.NoneApplied{Errs: make([]error, 0, len(alts))}
	for i, t := range alts {
		if err := st.failedCond(t); err != nil {
			none.Errs = append(none.Errs, err)
			continue
		}
		return i, s.apply(t), nil
	}
	return -1, 0, none
}

// failedCond returns the error of txn's first failing condition, or nil;
// called with st.mu held.
func (st *store) failedCond(txn registry.Txn) error {
	for _, c := range txn.Conds {
		e, ok := st.kv[c.Key]
		switch {
		case c.Version == 0 && ok:
			return &registry.OpError{Op: "commit", Key: c.Key, Err: registry.ErrExists}
		case c.Version != 0 && !ok:
			return &registry.OpError{Op: "commit", Key: c.Key, Err: registry.ErrNotFound}
		case c.Version != 0 && registry.Version(e.version) != c.Version:
			return &registry.OpError{Op: "commit", Key: c.Key, Err: fmt.Errorf("%w: expected %d, found %d", registry.ErrBadVersion, c.Version, e.version)}
		}
	}
	return nil
}

// apply writes txn's ops at one new revision, as etcd gives, and returns
// it; called with st.mu held.
func (s *session) apply(txn registry.Txn) registry.Version {
	st := s.repo.st
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
	return registry.Version(rev)
}

// GetMany implements registry.MultiGetter: one read of the store.
func (r *Repo) GetMany(ctx context.Context, keys []string) ([]registry.KV, error) {
	for _, k := range keys {
		if err := r.check(ctx, "get", k); err != nil {
			return nil, err
		}
	}
	out := make([]registry.KV, len(keys))
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	for i, k := range keys {
		out[i] = registry.KV{Key: k}
		if e, ok := r.st.kv[k]; ok {
			out[i].Value, out[i].Version = slices.Clone(e.value), registry.Version(e.version)
		}
	}
	return out, nil
}
