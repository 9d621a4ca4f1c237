package nemesis

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/retry"
	"github.com/shardkeeper/shardkeeper/internal/workerid"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
)

// operatorStream is the operator lane's generator stream (the registry
// lane's is 0, the node lanes' 1 to Nodes).
const operatorStream = 1 << 20

// unknownFloorAhead is how far ahead of its own clock a node puts the floor
// of a worker id whose fence is missing on a cluster that has been used:
// the longest reservation any node may hold plus the documented bound on
// clock skew between nodes.
const unknownFloorAhead = workerid.MaxReservation + workerid.MaxClockSkew

// deletableAhead bounds the fences the operator lane deletes: only those
// reserved at most this far ahead of the harness's clock. A node's clock is
// at most maxRestartBehind behind the harness's while no clock step is in
// progress, so the floor its successor takes for the missing fence,
// unknownFloorAhead ahead of its clock, is above every key the previous
// holders stamped. A fence further ahead (an hour-ahead clock step left
// it) is the case the skew bound leaves open, and is left alone.
const deletableAhead = unknownFloorAhead - maxRestartBehind - time.Second

// minSkew is how much further behind than the other holder's clock the
// clock of the holder handed a deleted worker id must be. A claim after a
// deletion takes well under a second while the registry answers, so a node
// that far behind stamps again, trusting the missing fence, milliseconds
// the other holder stamped before the deletion; with clocks closer it
// stamps only milliseconds nobody stamped, and the deletion tests nothing.
const minSkew = time.Second

// deletePoll is how often the operator lane looks again for worker ids to
// delete once its pause is over and it found none.
const deletePoll = 250 * time.Millisecond

// keepUsable is how many usable worker ids of the pool a deletion leaves: a
// fenced node cannot stamp on a deleted id for unknownFloorAhead, so after
// deletions every id could be out of use while the run goes on with nothing
// to check.
const keepUsable = 1

// operatorLane deletes, every deleteEvery on average, the reservations and
// fences of two worker ids of the pool that are held and swaps their
// holders' hints (see fenceDelete), as an operator's etcdctl txn or
// `registry rm --force` of those keys would. After each pause it looks
// every deletePoll until it finds ids to delete, so that each deletion
// happens when a holder is issuing and a node whose clock is behind the
// holder's can take its worker id (the deletions a fence must survive and
// the negative control (iii) must fail on). It holds clocks for writing
// from before it reads the fences until every deleted fence has been
// written again by a new holder (so no node's clock is stepped meanwhile),
// and records the fault from the deletion to then.
func (m *nemesis) operatorLane(ctx context.Context, rng *rand.Rand) {
	var repo registry.Repository
	defer func() {
		if repo != nil {
			_ = repo.Close()
		}
	}()
	for m.deleteGap(ctx, rng) {
		pick := rng.Uint64()
		var rec record.FaultRecord
		var err error
		for {
			if repo == nil {
				c, cancel := context.WithTimeout(ctx, 10*time.Second)
				repo, err = m.cfg.Open(c)
				cancel()
				if err != nil {
					repo = nil
					break
				}
			}
			m.clocks.Lock()
			// The holders renew their fences every W/3, and the registry
			// may be failing over: read and try again a few times.
			var deleted []int
			for try := 0; try < 10; try++ {
				if rec, deleted, err = m.fenceDelete(ctx, repo, pick); err == nil || !retry.Sleep(ctx, 50*time.Millisecond) {
					break
				}
			}
			if err == nil && len(deleted) > 0 {
				err = waitFences(ctx, repo, deleted)
			}
			m.clocks.Unlock()
			// Nothing to delete yet: look again soon.
			if err != nil || rec.Start != 0 || !retry.Sleep(ctx, deletePoll) {
				break
			}
		}
		if ctx.Err() != nil && rec.Start == 0 {
			return
		}
		if rec.Start == 0 {
			m.cfg.Log.Warn("operator lane: no fence deleted", "err", err)
			continue
		}
		rec.End = time.Now().UnixNano()
		if err != nil {
			rec.Detail += "; error: " + err.Error()
		}
		m.cfg.Record(rec)
	}
}

// deleteGap waits the operator lane's random pause; false when ctx ended.
func (m *nemesis) deleteGap(ctx context.Context, rng *rand.Rand) bool {
	d := time.Duration(float64(m.cfg.DeleteEvery) * (0.5 + rng.Float64()))
	return retry.Sleep(ctx, d)
}

// heldFence is a worker id of the pool whose reservation and fence exist.
type heldFence struct {
	id                   int
	holder               string
	reservation, fence   registry.KV
	epoch, reservedUntil int64
}

// fenceDelete deletes, in one transaction conditioned on the versions it
// read, the reservation and fence of two held worker ids whose fences are
// at most deletableAhead ahead, and swaps their holders' restart hints, as
// an operator's transaction might: each holder, claiming a worker id
// again, prefers the other's (and takes it, should it trust the missing
// fence, stamping keys the other stamped when its clock is behind). It
// takes the issuing holder whose clock is the least behind (ties in the
// order pick shuffles) and, of the other holders whose clocks are at least
// minSkew further behind, the one the least so: the fewer milliseconds
// the clocks are apart, the more likely the first held its worker id
// through the milliseconds the second stamps again. When it can delete
// one id only, or only the first holds one, it deletes the first's worker
// id alone if another node's clock is that far behind, for that node to
// claim. It considers only nodes without a
// partition, one-way loss, pause or kill in progress, which would not see
// the deletion or claim again until it ends. It deletes nothing when no
// holder is issuing or no node's clock is minSkew behind the issuing
// holder's. It
// deletes fewer ids, or none, so as to leave keepUsable ids of the pool
// usable (their fence exists and is not ahead), and with one id it swaps
// no hints. It deletes nothing while the cluster has no ledger: until the
// ledger exists a missing fence reads as a worker id never used (a new
// cluster), the case the guarantee leaves open. It returns the fault
// (Start 0 when nothing was deleted) and the deleted ids.
func (m *nemesis) fenceDelete(ctx context.Context, repo registry.Repository, pick uint64) (record.FaultRecord, []int, error) {
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := repo.Get(c, paths.Ledger); err != nil {
		if errors.Is(err, registry.ErrNotFound) {
			err = nil
		}
		return record.FaultRecord{}, nil, err
	}
	held, usable, err := readHeld(c, repo, m.cfg.Pool, time.Now().Add(deletableAhead).UnixMilli())
	if err != nil || len(held) == 0 {
		return record.FaultRecord{}, nil, err
	}
	// Keep keepUsable usable worker ids: fenced nodes cannot stamp on a
	// deleted id for unknownFloorAhead (its new fence is reserved that far
	// ahead, so it is not usable), and the nodes need ids to keep issuing
	// and to take over.
	n := min(2, usable-keepUsable)
	if n < 1 {
		return record.FaultRecord{}, nil, nil
	}
	rng := rand.New(rand.NewPCG(pick, 0))
	rng.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
	behind := map[string]time.Duration{} // by incarnation; absent: not running
	reachable := map[string]bool{}       // by incarnation: no partition, loss, pause or kill in progress
	m.mu.Lock()
	for _, p := range m.cfg.Nodes {
		inc, d := p.Current()
		behind[inc] = d
		reachable[inc] = !m.unreachable[p.Name()]
	}
	m.mu.Unlock()
	// A holder is issuing when it is a running incarnation and its fence
	// is reserved between a second before and W after its clock's now (not
	// waiting for a floor ahead, not cut off).
	now := time.Now()
	issuing := func(h heldFence) bool {
		d, running := behind[h.holder]
		clock := now.Add(-d)
		return running && h.reservedUntil >= clock.Add(-time.Second).UnixMilli() &&
			h.reservedUntil <= clock.Add(m.cfg.Reservation+500*time.Millisecond).UnixMilli()
	}
	// The least behind, issuing ones first; then the others, least behind
	// first.
	slices.SortStableFunc(held, func(a, b heldFence) int {
		ia, ib := issuing(a), issuing(b)
		if ia != ib {
			if ia {
				return -1
			}
			return 1
		}
		return cmp.Compare(behind[a.holder], behind[b.holder])
	})
	first := held[0]
	if !issuing(first) || !reachable[first.holder] {
		return record.FaultRecord{}, nil, nil
	}
	skewed := func(d time.Duration) bool { return d >= behind[first.holder]+minSkew }
	var second []heldFence
	if n == 2 {
		for _, h := range held[1:] {
			d := behind[h.holder]
			if reachable[h.holder] && skewed(d) && (len(second) == 0 || behind[h.holder] < behind[second[0].holder]) {
				second = []heldFence{h}
			}
		}
	}
	if len(second) == 0 && n == 2 && len(held) > 1 {
		// Wait for a holder to hand the first's worker id to: the first,
		// its hint unchanged, would claim it again itself.
		return record.FaultRecord{}, nil, nil
	}
	if len(second) == 0 {
		// One id to delete: a node whose clock is behind may claim it.
		claimer := false
		for inc, d := range behind {
			claimer = claimer || (inc != first.holder && reachable[inc] && skewed(d))
		}
		if !claimer {
			return record.FaultRecord{}, nil, nil
		}
	}
	held = append([]heldFence{first}, second...)
	var txn registry.Txn
	var ids []int
	var parts []string
	for i, h := range held {
		for _, kv := range []registry.KV{h.reservation, h.fence} {
			txn.Conds = append(txn.Conds, registry.Cond{Key: kv.Key, Version: kv.Version})
			txn.Ops = append(txn.Ops, registry.Op{Key: kv.Key, Delete: true})
		}
		ids = append(ids, h.id)
		part := fmt.Sprintf("%d (%s, clock %v behind, epoch %d, reserved %+dms)", h.id, h.holder, behind[h.holder],
			h.epoch, h.reservedUntil-time.Now().UnixMilli())
		if len(held) == 2 {
			other := held[1-i].id
			key, err := paths.WorkerIDHint(h.holder)
			if err != nil {
				return record.FaultRecord{}, nil, err
			}
			hint, err := repo.Get(c, key)
			if err != nil && !errors.Is(err, registry.ErrNotFound) {
				return record.FaultRecord{}, nil, err
			}
			txn.Conds = append(txn.Conds, registry.Cond{Key: key, Version: hint.Version})
			txn.Ops = append(txn.Ops, registry.Op{Key: key, Value: []byte(strconv.Itoa(other))})
			part += fmt.Sprintf(", hint set to %d", other)
		}
		parts = append(parts, part)
	}
	sess, err := repo.NewSession(c, registry.SessionOptions{})
	if err != nil {
		return record.FaultRecord{}, nil, err
	}
	defer func() { _ = sess.Close(context.Background()) }()
	rec := record.FaultRecord{Kind: record.FaultFenceDelete, Target: "operator", Start: time.Now().UnixNano(),
		Detail: "reservation and fence deleted of worker ids " + strings.Join(parts, "; ")}
	if _, err := sess.Commit(c, txn); err != nil {
		return record.FaultRecord{}, nil, fmt.Errorf("delete: %w", err)
	}
	return rec, ids, nil
}

// readHeld returns the worker ids below pool whose reservation and fence
// both exist and whose fence is reserved at most until untilMax (unix ms),
// and the number of usable ids below pool: those whose fence exists and is
// reserved at most until untilMax, held or not.
func readHeld(ctx context.Context, repo registry.Repository, pool int, untilMax int64) ([]heldFence, int, error) {
	var held []heldFence
	usable := 0
	for id := range pool {
		rkey, err := paths.Reservation(id)
		if err != nil {
			return nil, 0, err
		}
		fkey, err := paths.Fence(id)
		if err != nil {
			return nil, 0, err
		}
		fence, err := repo.Get(ctx, fkey)
		if errors.Is(err, registry.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		var f struct {
			Epoch         int64 `json:"epoch"`
			ReservedUntil int64 `json:"reservedUntil"`
		}
		if json.Unmarshal(fence.Value, &f) != nil || f.ReservedUntil > untilMax {
			continue
		}
		usable++
		res, err := repo.Get(ctx, rkey)
		if errors.Is(err, registry.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		held = append(held, heldFence{id: id, holder: string(res.Value), reservation: res, fence: fence,
			epoch: f.Epoch, reservedUntil: f.ReservedUntil})
	}
	return held, usable, nil
}

// waitFences waits until the fence of every id exists again (a node claimed
// the id), or ctx ends.
func waitFences(ctx context.Context, repo registry.Repository, ids []int) error {
	for _, id := range ids {
		key, err := paths.Fence(id)
		if err != nil {
			return err
		}
		for {
			c, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := repo.Get(c, key)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil
			}
			if !retry.Sleep(ctx, 50*time.Millisecond) {
				return nil
			}
		}
	}
	return nil
}
