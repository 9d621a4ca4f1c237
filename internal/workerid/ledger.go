package workerid

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// ledgerBatch is the number of fences one initialisation transaction
// creates: with the lock's condition it stays within etcd's default limit
// of 128 operations per transaction.
const ledgerBatch = 127

// EnsureLedger makes sure the cluster has its ledger: once the ledger
// exists every worker id has a fence, so a missing fence was deleted and
// Acquire treats its floor as unknown. When there is none, one node (the
// holder of the ephemeral ledger lock, taken through sess) creates every
// missing fence at epoch 0, in batches, then the ledger; every other caller
// returns at once. The fences it creates have floor 0, unless
// opts.LedgerSeen (the ledger existed and was deleted, with the fences) or
// the id is reserved (its fence was deleted under its holder): then the
// unknown floor. It reports whether the ledger exists on return (false
// while another node creates it). It is safe to call at any time and from
// any number of nodes; Acquire never waits for it.
func EnsureLedger(ctx context.Context, repo registry.Repository, sess registry.Session, instanceID string, opts Options) (bool, error) {
	now := opts.NowMillis
	if now == nil {
		now = systemMillis
	}
	_, err := repo.Get(ctx, paths.Ledger)
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, registry.ErrNotFound):
		return false, fmt.Errorf("worker id ledger: %w", err)
	}
	// Reading the lock first spares the registry a failing transaction
	// from every node that starts while another creates the ledger.
	_, err = repo.Get(ctx, paths.LedgerLock)
	switch {
	case err == nil:
		return false, nil
	case !errors.Is(err, registry.ErrNotFound):
		return false, fmt.Errorf("worker id ledger: %w", err)
	}
	lockV, err := sess.Commit(ctx, registry.Txn{
		Conds: []registry.Cond{{Key: paths.LedgerLock}, {Key: paths.Ledger}},
		Ops:   []registry.Op{{Key: paths.LedgerLock, Value: []byte(instanceID), Ephemeral: true}},
	})
	if errors.Is(err, registry.ErrExists) {
		return false, nil // being created by another node, or created
	}
	if err != nil {
		return false, fmt.Errorf("worker id ledger: lock: %w", err)
	}
	kvs, err := repo.List(ctx, paths.ReservationTop)
	if err != nil {
		return false, fmt.Errorf("worker id ledger: read: %w", err)
	}
	fences, reserved := map[int]bool{}, map[int]bool{}
	for _, kv := range kvs {
		parent, name := splitLast(kv.Key)
		id, err := paths.ParseWorkerID(name)
		if err != nil {
			continue
		}
		switch parent {
		case paths.ReservationRoot:
			reserved[id] = true
		case paths.FenceRoot:
			fences[id] = true
		}
	}
	used := opts.LedgerSeen
	unknown := Fence{ReservedUntil: now() + unknownFloorAhead.Milliseconds()}.encode()
	rec := ledgerRecord{CreatedBy: instanceID, CreatedAt: now()}
	free := Fence{}.encode()
	if used {
		rec.AbsentFloor, free = now()+unknownFloorAhead.Milliseconds(), unknown
	}
	var missing []int
	for id := 0; id < Count; id++ {
		if !fences[id] {
			missing = append(missing, id)
		}
	}
	for len(missing) > 0 {
		batch := missing[:min(ledgerBatch, len(missing))]
		txn := registry.Txn{Conds: []registry.Cond{{Key: paths.LedgerLock, Version: lockV}}}
		for _, id := range batch {
			fk, _ := paths.Fence(id)
			txn.Conds = append(txn.Conds, registry.Cond{Key: fk})
			value := free
			if reserved[id] {
				// Held, but its fence is gone: its holder stamped keys up
				// to a time no one knows.
				value = unknown
			}
			txn.Ops = append(txn.Ops, registry.Op{Key: fk, Value: value})
		}
		_, err := sess.Commit(ctx, txn)
		var op *registry.OpError
		switch {
		case err == nil:
			missing = missing[len(batch):]
		case errors.As(err, &op) && op.Key != paths.LedgerLock && errors.Is(err, registry.ErrExists):
			// Claimed meanwhile (a claim creates its fence): skip it.
			missing = removeKey(missing, op.Key)
		default:
			return false, fmt.Errorf("worker id ledger: create fences: %w", err)
		}
	}
	b, _ := json.Marshal(rec)
	_, err = sess.Commit(ctx, registry.Txn{
		Conds: []registry.Cond{{Key: paths.Ledger}, {Key: paths.LedgerLock, Version: lockV}},
		Ops:   []registry.Op{{Key: paths.Ledger, Value: b}, {Key: paths.LedgerLock, Delete: true}},
	})
	if err != nil {
		return false, fmt.Errorf("worker id ledger: create: %w", err)
	}
	logger(opts).Info("created the worker id ledger and every missing fence", "absent_floor_ms", rec.AbsentFloor)
	return true, nil
}

// removeKey drops the id whose fence key is key from ids.
func removeKey(ids []int, key string) []int {
	out := ids[:0]
	for _, id := range ids {
		if fk, _ := paths.Fence(id); fk != key {
			out = append(out, id)
		}
	}
	return out
}
