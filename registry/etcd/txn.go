package etcd

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Commit implements registry.Session: one etcd Txn whose If holds the
// conditions (CreateRevision == 0 for absence, ModRevision == version
// otherwise) and whose Then holds the writes; ephemeral puts carry the
// session's lease, persistent puts of an existing key keep its lease. The
// Else branch reads the condition keys to name the one that failed.
func (s *session) Commit(ctx context.Context, txn registry.Txn) (registry.Version, error) {
	if err := txn.Check(); err != nil {
		return 0, err
	}
	first := txn.Conds[0].Key
	c, cancel, err := s.begin(ctx, "commit", first)
	if err != nil {
		return 0, err
	}
	defer cancel()
	cmps := make([]clientv3.Cmp, 0, len(txn.Conds))
	reads := make([]clientv3.Op, 0, len(txn.Conds))
	exists := make(map[string]bool, len(txn.Conds))
	for _, cond := range txn.Conds {
		k := s.repo.full(cond.Key)
		if cond.Version == 0 {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", int64(cond.Version)))
			exists[cond.Key] = true
		}
		reads = append(reads, clientv3.OpGet(k, clientv3.WithKeysOnly()))
	}
	ops := make([]clientv3.Op, 0, len(txn.Ops))
	for _, o := range txn.Ops {
		k := s.repo.full(o.Key)
		switch {
		case o.Delete:
			ops = append(ops, clientv3.OpDelete(k))
		case o.Ephemeral:
			ops = append(ops, clientv3.OpPut(k, string(o.Value), clientv3.WithLease(s.cs.Lease())))
		case exists[o.Key]:
			ops = append(ops, clientv3.OpPut(k, string(o.Value), clientv3.WithIgnoreLease()))
		default:
			ops = append(ops, clientv3.OpPut(k, string(o.Value)))
		}
	}
	resp, err := s.repo.client.Txn(c).If(cmps...).Then(ops...).Else(reads...).Commit()
	if err != nil {
		return 0, s.convertError(ctx, "commit", first, err)
	}
	if resp.Succeeded {
		return registry.Version(resp.Header.Revision), nil
	}
	for i, cond := range txn.Conds {
		kvs := resp.Responses[i].GetResponseRange().Kvs
		switch {
		case cond.Version == 0 && len(kvs) > 0:
			return 0, &registry.OpError{Op: "commit", Key: cond.Key, Err: registry.ErrExists}
		case cond.Version != 0 && len(kvs) == 0:
			return 0, &registry.OpError{Op: "commit", Key: cond.Key, Err: registry.ErrNotFound}
		case cond.Version != 0 && registry.Version(kvs[0].ModRevision) != cond.Version:
			return 0, &registry.OpError{Op: "commit", Key: cond.Key,
				Err: fmt.Errorf("%w: expected %d, found %d", registry.ErrBadVersion, cond.Version, kvs[0].ModRevision)}
		}
	}
	// Every condition holds now: it failed at the Txn's revision only.
	return 0, &registry.OpError{Op: "commit", Key: first, Err: fmt.Errorf("%w: a condition changed during the transaction", registry.ErrBadVersion)}
}
