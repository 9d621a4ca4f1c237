package etcd

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
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
	if err := s.repo.checkSize("commit", first, len(txn.Conds)+len(txn.Ops), txn.Size()); err != nil {
		return 0, err
	}
	c, cancel, err := s.begin(ctx, "commit", first)
	if err != nil {
		return 0, err
	}
	defer cancel()
	cmps, ops, reads := s.build(txn)
	resp, err := s.repo.client.Txn(c).If(cmps...).Then(ops...).Else(reads...).Commit()
	if err != nil {
		return 0, s.convertError(ctx, "commit", first, err)
	}
	if resp.Succeeded {
		return registry.Version(resp.Header.Revision), nil
	}
	return 0, whichFailed(txn, resp.Responses)
}

// CommitFirst implements registry.FirstCommitter: one nested etcd Txn
// (etcd 3.3 and later). Level i's If holds alternative i's conditions, its
// Then alternative i's writes, and its Else the reads that name the failed
// condition followed by level i+1; so the server applies the first
// alternative whose conditions hold, atomically, in one round trip.
func (s *session) CommitFirst(ctx context.Context, alts []registry.Txn) (int, registry.Version, error) {
	if err := registry.CheckAlternatives(alts); err != nil {
		return -1, 0, err
	}
	first := alts[0].Conds[0].Key
	keys, size := 0, 0
	for _, t := range alts {
		keys, size = keys+len(t.Conds)+len(t.Ops), size+t.Size()
	}
	if err := s.repo.checkSize("commit", first, keys, size); err != nil {
		return -1, 0, err
	}
	c, cancel, err := s.begin(ctx, "commit", first)
	if err != nil {
		return -1, 0, err
	}
	defer cancel()
	// Build from the last alternative up: each level's Else ends with the
	// next level.
	var next []clientv3.Op
	var top struct {
		cmps []clientv3.Cmp
		then []clientv3.Op
		els  []clientv3.Op
	}
	for i := len(alts) - 1; i >= 0; i-- {
		cmps, ops, reads := s.build(alts[i])
		els := reads
		if next != nil {
			els = append(els, next...)
		}
		if i == 0 {
			top.cmps, top.then, top.els = cmps, ops, els
			break
		}
		next = []clientv3.Op{clientv3.OpTxn(cmps, ops, els)}
	}
	resp, err := s.repo.client.Txn(c).If(top.cmps...).Then(top.then...).Else(top.els...).Commit()
	if err != nil {
		return -1, 0, s.convertError(ctx, "commit", first, err)
	}
	rev := registry.Version(resp.Header.Revision)
	succeeded, responses := resp.Succeeded, resp.Responses
	none := &registry.NoneApplied{Errs: make([]error, 0, len(alts))}
	for i, t := range alts {
		if succeeded {
			return i, rev, nil
		}
		none.Errs = append(none.Errs, whichFailed(t, responses))
		if i == len(alts)-1 {
			break
		}
		nested := responses[len(t.Conds)].GetResponseTxn()
		if nested == nil {
			return -1, 0, &registry.OpError{Op: "commit", Key: first, Err: fmt.Errorf("etcd answered a nested transaction without its result")}
		}
		succeeded, responses = nested.Succeeded, nested.Responses
	}
	return -1, 0, none
}

// build returns txn's comparisons, writes and the reads of its condition
// keys (for whichFailed).
func (s *session) build(txn registry.Txn) (cmps []clientv3.Cmp, ops, reads []clientv3.Op) {
	cmps = make([]clientv3.Cmp, 0, len(txn.Conds))
	reads = make([]clientv3.Op, 0, len(txn.Conds)+1)
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
	ops = make([]clientv3.Op, 0, len(txn.Ops))
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
	return cmps, ops, reads
}

// whichFailed names txn's first failing condition from the reads of its
// condition keys, the first len(txn.Conds) of responses.
func whichFailed(txn registry.Txn, responses []*etcdserverpb.ResponseOp) error {
	for i, cond := range txn.Conds {
		kvs := responses[i].GetResponseRange().Kvs
		switch {
		case cond.Version == 0 && len(kvs) > 0:
			return &registry.OpError{Op: "commit", Key: cond.Key, Err: registry.ErrExists}
		case cond.Version != 0 && len(kvs) == 0:
			return &registry.OpError{Op: "commit", Key: cond.Key, Err: registry.ErrNotFound}
		case cond.Version != 0 && registry.Version(kvs[0].ModRevision) != cond.Version:
			return &registry.OpError{Op: "commit", Key: cond.Key,
				Err: fmt.Errorf("%w: expected %d, found %d", registry.ErrBadVersion, cond.Version, kvs[0].ModRevision)}
		}
	}
	// Every condition holds now: it failed at the Txn's revision only.
	return &registry.OpError{Op: "commit", Key: txn.Conds[0].Key, Err: fmt.Errorf("%w: a condition changed during the transaction", registry.ErrBadVersion)}
}

// GetMany implements registry.MultiGetter: one etcd Txn of reads, one
// revision.
func (r *Repo) GetMany(ctx context.Context, keys []string) ([]registry.KV, error) {
	if len(keys) == 0 {
		return []registry.KV{}, nil
	}
	for _, k := range keys {
		if err := registry.ValidateKey(k); err != nil {
			return nil, &registry.OpError{Op: "get", Key: k, Err: err}
		}
	}
	c, cancel, err := r.begin(ctx, "get", keys[0])
	if err != nil {
		return nil, err
	}
	defer cancel()
	reads := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		reads[i] = clientv3.OpGet(r.full(k))
	}
	resp, err := r.client.Txn(c).Then(reads...).Commit()
	if err != nil {
		return nil, r.convertError(ctx, "get", keys[0], err)
	}
	out := make([]registry.KV, len(keys))
	for i, k := range keys {
		out[i] = registry.KV{Key: k}
		if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
			out[i].Value, out[i].Version = kvs[0].Value, registry.Version(kvs[0].ModRevision)
		}
	}
	return out, nil
}
