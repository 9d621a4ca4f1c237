package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Commit implements registry.Session with one multi on the session's
// connection. Conditions on a version are read first (Mzxid compared, then
// the znode's data version checked inside the multi, as Update does);
// absence is asserted by the create of the key, or by a create and delete
// pair when the key is not written. Missing parents of created keys are
// made first, as persistent znodes. Ephemeral puts create ephemeral znodes;
// a put of an existing znode sets its data and keeps its kind.
func (s *session) Commit(ctx context.Context, txn registry.Txn) (registry.Version, error) {
	if err := txn.Check(); err != nil {
		return 0, err
	}
	first := txn.Conds[0].Key
	if err := s.check(ctx, "commit", first); err != nil {
		return 0, err
	}
	for _, c := range txn.Conds {
		if c.Key == "/" {
			return 0, &registry.OpError{Op: "commit", Key: c.Key, Err: fmt.Errorf("%w: / is the namespace root, not a key", registry.ErrBadKey)}
		}
	}
	stats, err := s.statConds(txn.Conds)
	if err != nil {
		return 0, err
	}
	ops := make(map[string]registry.Op, len(txn.Ops))
	for _, o := range txn.Ops {
		ops[o.Key] = o
	}
	var reqs []any
	var creates []string
	versionAt := -1 // index of a request whose Stat carries the multi's zxid
	for _, c := range txn.Conds {
		p := s.r.full(c.Key)
		o, written := ops[c.Key]
		switch {
		case c.Version == 0 && (!written || o.Delete):
			reqs = append(reqs, &zk.CreateRequest{Path: p, Acl: s.r.acl}, &zk.DeleteRequest{Path: p, Version: -1})
			creates = append(creates, p)
		case c.Version == 0:
			flags := int32(0)
			if o.Ephemeral {
				flags = zk.FlagEphemeral
			}
			reqs = append(reqs, &zk.CreateRequest{Path: p, Data: o.Value, Acl: s.r.acl, Flags: flags})
			creates = append(creates, p)
			if versionAt < 0 {
				// A set at version 0 right after the create returns the Stat.
				reqs = append(reqs, &zk.SetDataRequest{Path: p, Data: o.Value, Version: 0})
				versionAt = len(reqs) - 1
			}
		case !written:
			reqs = append(reqs, &zk.CheckVersionRequest{Path: p, Version: stats[c.Key].Version})
		case o.Delete:
			reqs = append(reqs, &zk.DeleteRequest{Path: p, Version: stats[c.Key].Version})
		default:
			reqs = append(reqs, &zk.SetDataRequest{Path: p, Data: o.Value, Version: stats[c.Key].Version})
			versionAt = len(reqs) - 1
		}
	}
	for attempt := 0; ; attempt++ {
		res, err := multi(s.conn, reqs...)
		if err == nil {
			if versionAt >= 0 {
				return registry.Version(res[versionAt].Stat.Mzxid), nil
			}
			return 0, nil // only deletes and checks: no written key to version
		}
		failed := err
		if errors.Is(failed, zk.ErrNoNode) && attempt < 3 && s.makeParents(creates) {
			continue
		}
		if errors.Is(failed, zk.ErrNodeExists) || errors.Is(failed, zk.ErrNoNode) || errors.Is(failed, zk.ErrBadVersion) {
			return 0, s.whichFailed(txn.Conds, failed)
		}
		return 0, s.convert("commit", first, failed)
	}
}

// statConds reads the Stat of every condition with a version, in parallel,
// and checks the Mzxid; it returns the failure of the first condition (in
// order) that does not hold.
func (s *session) statConds(conds []registry.Cond) (map[string]*zk.Stat, error) {
	stats := make(map[string]*zk.Stat, len(conds))
	errs := make([]error, len(conds))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range conds {
		if c.Version == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, stat, err := s.conn.Exists(s.r.full(c.Key))
			switch {
			case err != nil:
				errs[i] = s.convert("commit", c.Key, err)
			case !ok:
				errs[i] = &registry.OpError{Op: "commit", Key: c.Key, Err: registry.ErrNotFound}
			case registry.Version(stat.Mzxid) != c.Version:
				errs[i] = &registry.OpError{Op: "commit", Key: c.Key,
					Err: fmt.Errorf("%w: expected %d, found %d", registry.ErrBadVersion, c.Version, stat.Mzxid)}
			default:
				mu.Lock()
				stats[c.Key] = stat
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return stats, nil
}

// whichFailed names the first condition that does not hold now; if all
// hold again (a race), it reports the multi's own failure.
func (s *session) whichFailed(conds []registry.Cond, failed error) error {
	for _, c := range conds {
		ok, stat, err := s.conn.Exists(s.r.full(c.Key))
		switch {
		case err != nil:
			return s.convert("commit", c.Key, err)
		case c.Version == 0 && ok:
			return &registry.OpError{Op: "commit", Key: c.Key, Err: registry.ErrExists}
		case c.Version != 0 && !ok:
			return &registry.OpError{Op: "commit", Key: c.Key, Err: registry.ErrNotFound}
		case c.Version != 0 && registry.Version(stat.Mzxid) != c.Version:
			return &registry.OpError{Op: "commit", Key: c.Key,
				Err: fmt.Errorf("%w: expected %d, found %d", registry.ErrBadVersion, c.Version, stat.Mzxid)}
		}
	}
	return &registry.OpError{Op: "commit", Key: conds[0].Key, Err: fmt.Errorf("%w: a condition changed during the transaction: %v", registry.ErrBadVersion, failed)}
}

// makeParents creates the missing parents of the created paths; it reports
// whether it could.
func (s *session) makeParents(creates []string) bool {
	for _, p := range creates {
		if err := mkdirs(s.conn, s.r.acl, parent(p)); err != nil {
			return false
		}
	}
	return true
}
