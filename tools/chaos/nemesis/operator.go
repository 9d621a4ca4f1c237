package nemesis

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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

// deletePoll is how often the operator lane reads who holds the pool's
// worker ids, and looks for ids to delete once its pause is over.
const deletePoll = 250 * time.Millisecond

// targetFor is how long after its pause the operator lane waits for ids
// whose new holder would stamp again what was stamped on them (see
// fenceDelete); then it deletes the ids it finds, so that a run where such
// ids are rare still has its deletions.
const targetFor = 3 * time.Second

// stampWindow is how long a node that claimed a deleted worker id is
// counted on to issue keys before a fault stops it.
const stampWindow = time.Second

// keepUsable is how many usable worker ids of the pool a deletion leaves: a
// fenced node cannot stamp on a deleted id for unknownFloorAhead, so after
// deletions every id could be out of use while the run goes on with nothing
// to check.
const keepUsable = 1

// operatorLane deletes, every deleteEvery on average, the reservations and
// fences of two worker ids of the pool that are held and swaps their
// holders' hints (see fenceDelete), as an operator's etcdctl txn or
// `registry rm --force` of those keys would. Every deletePoll it reads
// which holders issue on which ids (the spans restamps looks at); after
// each pause it looks at each poll for ids to delete, so that a deletion
// hands a worker id to a node whose clock is behind the milliseconds
// stamped on it (the deletions a fence must survive and the negative
// control (iii) must fail on), and after targetFor more it takes what it
// finds. It holds clocks for writing
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
	due := time.Now().Add(m.deletePause(rng))
	pick := rng.Uint64()
	for retry.Sleep(ctx, deletePoll) {
		if repo == nil {
			c, cancel := context.WithTimeout(ctx, 10*time.Second)
			var err error
			repo, err = m.cfg.Open(c)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					m.cfg.Log.Warn("operator lane: registry not reachable", "err", err)
				}
				repo = nil
				continue
			}
		}
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := m.observe(c, repo)
		cancel()
		if err != nil || time.Now().Before(due) {
			continue
		}
		m.clocks.Lock()
		// The holders renew their fences every W/3, and the registry may be
		// failing over: read and try again a few times.
		var rec record.FaultRecord
		var deleted []int
		for try := 0; try < 10; try++ {
			relaxed := time.Since(due) > targetFor
			if rec, deleted, err = m.fenceDelete(ctx, repo, pick, relaxed); err == nil || !retry.Sleep(ctx, 50*time.Millisecond) {
				break
			}
		}
		if err == nil && len(deleted) > 0 {
			err = waitFences(ctx, repo, deleted)
		}
		m.clocks.Unlock()
		if rec.Start == 0 {
			// Nothing to delete yet: look again at the next poll.
			if err != nil && ctx.Err() == nil {
				m.cfg.Log.Warn("operator lane: no fence deleted", "err", err)
				due, pick = time.Now().Add(m.deletePause(rng)), rng.Uint64()
			}
			continue
		}
		rec.End = time.Now().UnixNano()
		if err != nil {
			rec.Detail += "; error: " + err.Error()
		}
		m.cfg.Record(rec)
		due, pick = time.Now().Add(m.deletePause(rng)), rng.Uint64()
	}
}

// deletePause returns the operator lane's random pause after a deletion.
func (m *nemesis) deletePause(rng *rand.Rand) time.Duration {
	return time.Duration(float64(m.cfg.DeleteEvery) * (0.5 + rng.Float64()))
}

// span is a time during which the operator lane saw a worker id's holder
// issuing keys.
type span struct {
	holder   string
	behind   time.Duration // how far behind the holder's clock is
	from, to time.Time
}

// observe reads the pool's held worker ids and extends m.spans with those
// whose holder is issuing. Spans older than maxRestartBehind and a little
// more, beyond the clock differences between nodes, are dropped.
func (m *nemesis) observe(ctx context.Context, repo registry.Repository) error {
	held, _, err := readHeld(ctx, repo, m.cfg.Pool, math.MaxInt64)
	if err != nil {
		return err
	}
	now := time.Now()
	behind, _ := m.nodeClocks()
	if m.spans == nil {
		m.spans = map[int][]span{}
	}
	for id, spans := range m.spans {
		m.spans[id] = slices.DeleteFunc(spans, func(s span) bool { return now.Sub(s.to) > maxRestartBehind+10*time.Second })
	}
	for _, h := range held {
		if !m.issuing(h, behind, now) {
			continue
		}
		spans := m.spans[h.id]
		if n := len(spans); n > 0 && spans[n-1].holder == h.holder && now.Sub(spans[n-1].to) <= time.Second {
			spans[n-1].to = now
			continue
		}
		m.spans[h.id] = append(spans, span{holder: h.holder, behind: behind[h.holder], from: now, to: now})
	}
	return nil
}

// nodeClocks returns, by current incarnation, how far behind its clock
// is and whether it is reachable (no partition, one-way loss, pause or
// kill in progress on its node).
func (m *nemesis) nodeClocks() (behind map[string]time.Duration, reachable map[string]bool) {
	behind, reachable = map[string]time.Duration{}, map[string]bool{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.cfg.Nodes {
		inc, d := p.Current()
		behind[inc] = d
		reachable[inc] = !m.unreachable[p.Name()]
	}
	return behind, reachable
}

// issuing says whether h's holder is a running incarnation whose fence is
// reserved between a second before and W after its clock's now (not
// waiting for a floor ahead, not cut off).
func (m *nemesis) issuing(h heldFence, behind map[string]time.Duration, now time.Time) bool {
	d, running := behind[h.holder]
	clock := now.Add(-d)
	return running && h.reservedUntil >= clock.Add(-time.Second).UnixMilli() &&
		h.reservedUntil <= clock.Add(m.cfg.Reservation+500*time.Millisecond).UnixMilli()
}

// restamps says whether a node whose clock is b behind, claiming worker id
// id now and trusting its missing fence, would stamp in its first
// stampWindow milliseconds that a holder of id was seen stamping: one
// whose clock was at least minSkew less behind, issuing b minus its own
// clock's lag ago.
func (m *nemesis) restamps(id int, b time.Duration, now time.Time) bool {
	for _, s := range m.spans[id] {
		if b < s.behind+minSkew {
			continue
		}
		t0 := now.Add(s.behind - b)
		if !s.from.After(t0.Add(stampWindow)) && !s.to.Before(t0) {
			return true
		}
	}
	return false
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
// takes the first worker id, issuing holders first and the least behind
// first (ties in the order pick shuffles), for which another holder would
// stamp again milliseconds the operator lane saw stamped on it (see
// restamps), and of those holders the one whose clock is the least
// behind. When it can delete one id only, or one id is held, it deletes it
// alone if another node would stamp again what was stamped on it. It
// considers only claimers without a partition, one-way loss, pause or
// kill in progress, which would not see the deletion or claim again until
// it ends, and deletes nothing when it finds no such pair or claimer (a
// deletion whose claimers stamp only milliseconds nobody stamped tests
// nothing) unless relaxed: then it takes the first held id in that order
// and the held id whose holder's clock is the most behind. It deletes fewer ids, or none, so as to leave keepUsable ids of
// the pool usable (their fence exists and is not ahead). It deletes
// nothing while the cluster has no ledger: until the ledger exists a
// missing fence reads as a worker id never used (a new cluster), the case
// the guarantee leaves open. It returns the fault (Start 0 when nothing
// was deleted) and the deleted ids.
func (m *nemesis) fenceDelete(ctx context.Context, repo registry.Repository, pick uint64, relaxed bool) (record.FaultRecord, []int, error) {
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
	behind, reachable := m.nodeClocks()
	now := time.Now()
	// The least behind, issuing ones first; then the others, least behind
	// first.
	slices.SortStableFunc(held, func(a, b heldFence) int {
		ia, ib := m.issuing(a, behind, now), m.issuing(b, behind, now)
		if ia != ib {
			if ia {
				return -1
			}
			return 1
		}
		return cmp.Compare(behind[a.holder], behind[b.holder])
	})
	var first heldFence
	var second []heldFence
	found := false
	for i, h := range held {
		if n == 2 && len(held) > 1 {
			// The holder to hand h's worker id to: the least behind of
			// those that would stamp again what was stamped on it.
			for j, o := range held {
				d := behind[o.holder]
				if j != i && reachable[o.holder] && m.restamps(h.id, d, now) &&
					(len(second) == 0 || d < behind[second[0].holder]) {
					second = []heldFence{o}
				}
			}
			if found = len(second) > 0; found {
				first = h
				break
			}
			continue
		}
		// One id to delete: another node whose clock is behind may claim it.
		for inc, d := range behind {
			if inc != h.holder && reachable[inc] && m.restamps(h.id, d, now) {
				first, found = h, true
			}
		}
		if found {
			break
		}
	}
	if !found && relaxed && len(held) > 0 {
		// The least behind, issuing if any, and the most behind of the
		// others.
		first, second, found = held[0], nil, true
		if n == 2 && len(held) > 1 {
			second = []heldFence{slices.MaxFunc(held[1:], func(a, b heldFence) int {
				return cmp.Compare(behind[a.holder], behind[b.holder])
			})}
		}
	}
	if !found {
		return record.FaultRecord{}, nil, nil
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
