// Package workerid gives a node a Snowflake worker id (0-1023) from the
// registry and keeps it safely, with ShardingSphere's layout:
//   - /reservation/worker_id/{id}: the holder's instance id, ephemeral,
//     created exclusively;
//   - /nodes/compute_nodes/worker_id/{instanceId}: the decimal id, ephemeral;
//   - /reservation/worker_id_fence/{id}: the fence (see Fence), persistent;
//   - /reservation/worker_id_hint/{instanceId}: the id a node with a stable
//     instance id held last, persistent (only for Options.Stable);
//   - /reservation/worker_id_ledger: written once every fence exists (see
//     EnsureLedger); from then on a missing fence was deleted.
//
// Acquire needs a constant number of round trips whatever the number of
// nodes starting at once, and one atomic commit claims the id. It lists the
// reservation names, reads the hint (stable instances) and the fences of a
// few candidates in one request, and claims the first candidate still free
// in one request (registry.CommitFirst). It prefers the hint (unless its
// floor is more than a second ahead), then random free ids whose fence is
// not in the future, then the free ids whose fence ends first; ids below
// UpstreamRange come after all of them (they are ShardingSphere's, see
// UpstreamRange). A starter that finds every candidate taken lists again.
// A missing or corrupt fence never gives floor 0 once the ledger exists:
// its floor is unknown (see Acquire).
//
// Guarantee: two holders of the same worker id never stamp keys with the
// same millisecond, given a linearizable registry that is never rolled
// back and, for a fence deleted or corrupted by someone, clocks within
// MaxClockSkew of each other. The Snowflake generator must be driven by Holding.Floor and the
// limits Holding.Reserve commits; clocks, pauses, TTLs and lease bugs then
// cost availability, never uniqueness.
package workerid

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Count is the number of worker ids: 0 to 1023.
const Count = paths.MaxWorkerID + 1

// ErrExhausted is returned when every worker id is reserved. Its text and
// code are ShardingSphere's WorkerIdAssignedException; every refusal with
// its code matches it with errors.Is.
var ErrExhausted = &sqlerr.Error{Code: 17001, SQLState: "HY000", Kind: sqlerr.Conflict, Message: "Worker ID assigned failed, which should be in [0, 1024)."}

// ErrLost is returned by Reserve when the fence or the reservation is no
// longer this holder's, and by Watch also when its worker_id node is not:
// another holder took the id, or the session ended. The caller must stop
// issuing at once.
var ErrLost = errors.New("worker id lost: its fence, reservation or worker_id node changed")

// Options tune Acquire. The zero value is usable.
type Options struct {
	// NowMillis returns the current unix time in milliseconds; nil means the
	// system clock. Only used to rank candidates; never for safety.
	NowMillis func() int64
	// Rand picks among candidates; nil means a random source.
	Rand *rand.Rand
	// MaxAttempts bounds the claims tried before giving up; 0 means 32.
	MaxAttempts int
	// Stats, when set, counts lost races (for benchmarks; count round
	// trips with a fault.Counter around the repository).
	Stats *Stats
	// Logger reports corrupt fence records (skipped); nil means
	// slog.Default().
	Logger *slog.Logger
	// Stable says the instance id is configured, not random: the claim
	// then records the id in the instance's hint, and Acquire prefers the
	// hinted id, so a restarted node gets its old id back.
	Stable bool
	// UnsafeTrustAbsentFence reads an absent fence as a never-used id
	// (floor 0) even on a ledgered cluster, where it means the fence was
	// deleted. For negative controls only.
	UnsafeTrustAbsentFence bool
	// LedgerSeen says the caller saw this cluster's ledger before: if it
	// is gone now, someone deleted it (with the fences, as `registry rm
	// /reservation --force` does), so a missing fence is never read as a
	// never-used id.
	LedgerSeen bool
}

// Stats counts the races Acquire calls lost: claims (one CommitFirst of
// several candidates) that applied none of them because each candidate's
// id, fence or ledger had changed. Safe for concurrent use.
type Stats struct {
	conflicts atomic.Int64
}

// Conflicts returns the number of claims that applied no candidate.
func (s *Stats) Conflicts() int64 { return s.conflicts.Load() }

func (s *Stats) add(conflicts int64) {
	if s != nil {
		s.conflicts.Add(conflicts)
	}
}

// Holding is a claimed worker id. Its methods are safe for concurrent use.
type Holding struct {
	WorkerID   int
	InstanceID string
	// Epoch is this holder's fence epoch.
	Epoch int64
	// Floor is the previous holder's reservation: never stamp a key <= Floor.
	Floor int64
	// Ledgered says the claim saw the cluster's ledger (see EnsureLedger).
	// False means it did not look or there was none.
	Ledgered bool

	repo          registry.Repository
	sess          registry.Session
	resVersion    registry.Version // of /reservation/worker_id/{id}
	nodeVersion   registry.Version // of /nodes/compute_nodes/worker_id/{instanceId}
	mu            sync.Mutex
	fenceVersion  registry.Version
	reservedUntil int64
}

// Acquire claims a free worker id for instanceID, held through sess: the
// reservation and worker_id nodes are ephemerals of sess, and the fence
// epoch is advanced in the same atomic commit. No key may be issued before
// the first successful Reserve. ctx bounds the whole call. Errors:
// ErrExhausted when all 1024 ids are reserved; registry errors otherwise.
//
// The floor of the claimed id is its fence's reservation. A fence that is
// missing on a ledgered cluster (see EnsureLedger), or missing while
// Options.LedgerSeen, or corrupt, is unknown: its floor is now +
// MaxReservation + MaxClockSkew, and an id with a known floor is preferred
// to it.
//
// Registry calls, in order: list the reservation names (Children), read
// the hint (Get, stable instances only), read the fences of up to
// Alternatives candidates (one GetMany), and claim the first of them that
// is still free (one CommitFirst: a nested Txn on etcd, one multi per
// candidate tried on ZooKeeper). When no candidate could be claimed, it
// lists again and repeats with other candidates; a fence found reserved
// ahead sends it to other candidates first (see choose).
func Acquire(ctx context.Context, repo registry.Repository, sess registry.Session, instanceID string, opts Options) (*Holding, error) {
	if err := registry.ValidateName(instanceID); err != nil {
		return nil, fmt.Errorf("acquire worker id: instance id: %w", err)
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 32
	}
	rng := opts.Rand
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	now := opts.NowMillis
	if now == nil {
		now = systemMillis
	}
	nodeKey, err := paths.WorkerID(instanceID)
	if err != nil {
		return nil, err
	}
	hintKey, err := paths.WorkerIDHint(instanceID)
	if err != nil {
		return nil, err
	}
	var nodeVersion registry.Version // of our own worker_id node, if a previous session left it
	var conflicts int64
	defer func() { opts.Stats.add(conflicts) }()

	var view *occupancy
	ledgered := false               // learnt from a claim refused because the ledger exists
	fences := map[int]registry.KV{} // fences read (Version 0: absent), kept across views: a claim is conditioned on their versions
	future := map[int]bool{}        // ids whose fence was found reserved ahead
	for attempt := 0; attempt < opts.MaxAttempts; attempt++ {
		if view == nil {
			if view, err = readOccupancy(ctx, repo, instanceID, opts.Stable); err != nil {
				return nil, err
			}
			view.log, view.used, view.trustAbsent, view.ledgered = logger(opts), opts.LedgerSeen, opts.UnsafeTrustAbsentFence, ledgered
			view.fences, view.future = fences, future
		}
		ids := view.choose(rng, alternatives(repo))
		if len(ids) == 0 {
			if view.age == 0 {
				return nil, ErrExhausted
			}
			view = nil // perhaps ids were freed since we read
			continue
		}
		view.age++
		if err := view.readFences(ctx, repo, ids); err != nil {
			return nil, err
		}
		cands, retry := view.candidates(ids, now())
		if retry {
			continue // every candidate was reserved ahead: try others first
		}
		if len(cands) == 0 {
			view = nil // the ids found ahead were reserved meanwhile
			continue
		}
		txns := make([]registry.Txn, len(cands))
		nexts := make([]Fence, len(cands))
		for i, cand := range cands {
			res, _ := paths.Reservation(cand.id)
			fk, _ := paths.Fence(cand.id)
			next := Fence{Epoch: cand.fence.Epoch + 1, Holder: instanceID, ReservedUntil: cand.fence.ReservedUntil}
			if cand.unknown {
				next.Epoch = max(now(), cand.fence.Epoch+1, 1)
			}
			txn := registry.Txn{
				Conds: []registry.Cond{{Key: res}, {Key: fk, Version: cand.fenceVersion}, {Key: nodeKey, Version: nodeVersion}},
				Ops: []registry.Op{
					{Key: res, Value: []byte(instanceID), Ephemeral: true},
					{Key: fk, Value: next.encode()},
					{Key: nodeKey, Value: []byte(strconv.Itoa(cand.id)), Ephemeral: true},
				},
			}
			if cand.unused && !view.trustAbsent {
				// A missing fence read as never used: only while no ledger exists.
				txn.Conds = append(txn.Conds, registry.Cond{Key: paths.Ledger})
			}
			if opts.Stable && view.hint != cand.id {
				txn.Conds = append(txn.Conds, registry.Cond{Key: hintKey, Version: view.hintVersion})
				txn.Ops = append(txn.Ops, registry.Op{Key: hintKey, Value: []byte(strconv.Itoa(cand.id))})
			}
			txns[i], nexts[i] = txn, next
		}
		i, v, err := registry.CommitFirst(ctx, sess, txns)
		if err == nil {
			cand, next := cands[i], nexts[i]
			if cand.unknown {
				logger(opts).Warn("claimed a worker id whose fence was missing or corrupt: its floor is unknown, keys start after the longest reservation a previous holder may have made",
					"worker_id", cand.id, "floor_ms", next.ReservedUntil)
			}
			return &Holding{
				WorkerID: cand.id, InstanceID: instanceID, Epoch: next.Epoch, Floor: next.ReservedUntil,
				Ledgered: view.ledgered, repo: repo, sess: sess, resVersion: v, nodeVersion: v, fenceVersion: v, reservedUntil: next.ReservedUntil,
			}, nil
		}
		var none *registry.NoneApplied
		if !errors.As(err, &none) || len(none.Errs) != len(cands) {
			return nil, fmt.Errorf("acquire worker id %d: %w", cands[0].id, err)
		}
		conflicts++
		stale, nodeMoved := false, false
		for j, cerr := range none.Errs {
			var op *registry.OpError
			if !errors.As(cerr, &op) {
				return nil, fmt.Errorf("acquire worker id %d: %w", cands[j].id, cerr)
			}
			res, _ := paths.Reservation(cands[j].id)
			fk, _ := paths.Fence(cands[j].id)
			switch op.Key {
			case res:
				// Someone else holds the id: the view is too old.
				view.reserved[cands[j].id] = true
				stale = true
			case fk:
				delete(fences, cands[j].id) // read it again
			case nodeKey:
				nodeMoved = true
			case paths.Ledger:
				// The missing fence was read as never used, but the ledger
				// exists: it was deleted. Its floor is unknown.
				ledgered, view.ledgered = true, true
			default:
				stale = true // the hint moved under us: read again
			}
		}
		if nodeMoved {
			// Our instance id's worker_id node is left from an earlier
			// session (a restart within the TTL): overwrite it.
			kv, gerr := repo.Get(ctx, nodeKey)
			switch {
			case gerr == nil:
				nodeVersion = kv.Version
			case errors.Is(gerr, registry.ErrNotFound):
				nodeVersion = 0
			default:
				return nil, fmt.Errorf("acquire worker id: %w", gerr)
			}
		}
		if stale {
			view = nil
		}
	}
	return nil, fmt.Errorf("acquire worker id: gave up after %d conflicting attempts", opts.MaxAttempts)
}

func logger(o Options) *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

// ReservedUntil is the last committed reservation: keys may be stamped up
// to this unix millisecond.
func (h *Holding) ReservedUntil() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reservedUntil
}

// Reserve commits a new reservation: keys may be stamped up to until (unix
// ms) once it returns nil. The write is conditioned on the fence and the
// reservation being unchanged since this holder's last write. It returns an
// error wrapping ErrLost when they changed (stop issuing at once). On any
// other error the outcome is unknown: keep using the previous limit; the
// next Reserve finds out (it re-reads the fence and adopts a write of its
// own that did land). That re-read has its own deadline (RereadTimeout),
// not what is left of ctx: when it cannot answer either, the outcome stays
// unknown (not ErrLost). A reservation never goes down: until below the
// current limit is a no-op.
func (h *Holding) Reserve(ctx context.Context, until int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if until <= h.reservedUntil {
		return nil
	}
	return h.write(ctx, until)
}

// Release lowers the reservation to lastIssued (unix ms of the last key
// stamped, never below the floor), so that a successor can start at once.
// The caller must have stopped issuing first. ErrLost as for Reserve.
func (h *Holding) Release(ctx context.Context, lastIssued int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if lastIssued < h.Floor {
		lastIssued = h.Floor
	}
	if lastIssued >= h.reservedUntil {
		return nil
	}
	return h.write(ctx, lastIssued)
}

// write commits ReservedUntil = until; called with h.mu held.
func (h *Holding) write(ctx context.Context, until int64) error {
	fk, _ := paths.Fence(h.WorkerID)
	res, _ := paths.Reservation(h.WorkerID)
	rec := Fence{Epoch: h.Epoch, Holder: h.InstanceID, ReservedUntil: until}
	v, err := h.sess.Commit(ctx, registry.Txn{
		Conds: []registry.Cond{{Key: fk, Version: h.fenceVersion}, {Key: res, Version: h.resVersion}},
		Ops:   []registry.Op{{Key: fk, Value: rec.encode()}},
	})
	if err == nil {
		h.fenceVersion, h.reservedUntil = v, until
		return nil
	}
	if errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrNotFound) || errors.Is(err, registry.ErrExists) {
		// Perhaps our own earlier write landed with an unknown outcome:
		// adopt it if the fence is still ours and the reservation
		// unchanged. The re-read has a deadline of its own: ctx may be
		// spent by the commit that failed, and a re-read that cannot
		// answer leaves the outcome unknown, not lost.
		rctx, cancel := rereadContext(ctx)
		ours, rerr := h.adopt(rctx, fk, res)
		cancel()
		switch {
		case rerr != nil:
			return fmt.Errorf("reserve worker id %d: the outcome is unknown (%v) and the fence could not be re-read: %w", h.WorkerID, err, rerr)
		case ours:
			return h.write(ctx, until)
		}
		return fmt.Errorf("reserve worker id %d: %w (%v)", h.WorkerID, ErrLost, err)
	}
	if errors.Is(err, registry.ErrSessionExpired) || errors.Is(err, registry.ErrClosed) {
		return fmt.Errorf("reserve worker id %d: %w (%v)", h.WorkerID, ErrLost, err)
	}
	return fmt.Errorf("reserve worker id %d: %w", h.WorkerID, err)
}

// RereadTimeout bounds the re-read that resolves a renewal whose
// condition failed (was it this holder's own earlier write that landed?),
// whatever is left of the renewal's context.
const RereadTimeout = 5 * time.Second

// rereadContext is a context for that re-read: it ends after
// RereadTimeout or when ctx is cancelled, not when ctx's deadline passes.
func rereadContext(ctx context.Context) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RereadTimeout)
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	return rctx, func() { stop(); cancel() }
}

// adopt re-reads the fence and reservation; if both are still this
// holder's, it takes the fence's version and reservation as current and
// reports true. It reports false when the registry answered that they
// are not (changed or gone), and an error when a read failed otherwise:
// then nobody knows.
func (h *Holding) adopt(ctx context.Context, fk, res string) (bool, error) {
	repoKV, err := h.repo.Get(ctx, fk)
	if errors.Is(err, registry.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	f, err := decodeFence(repoKV.Value)
	if err != nil || f.Epoch != h.Epoch || f.Holder != h.InstanceID || repoKV.Version == h.fenceVersion {
		return false, nil
	}
	resKV, err := h.repo.Get(ctx, res)
	if errors.Is(err, registry.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if resKV.Version != h.resVersion || string(resKV.Value) != h.InstanceID {
		return false, nil
	}
	h.fenceVersion = repoKV.Version
	if f.ReservedUntil > h.reservedUntil {
		h.reservedUntil = f.ReservedUntil
	}
	return true, nil
}

// Alternatives is the number of candidate ids one claim tries where the
// registry reads many keys in one request (etcd): Acquire reads their
// fences in one GetMany and claims the first one still free in one
// CommitFirst, so a node that loses the race for one id takes another in
// the same round trip. On ZooKeeper, where each fence read and each claim
// tried is a request of its own, it tries AlternativesOneByOne.
//
// Measured with 1024 nodes starting at once on a fresh etcd (tools/workeridbench):
// registry calls per node 5.5-6.0 with one candidate, 4.0 with 4, 3.7-3.9
// with 8 and 3.4 with 16.
const (
	Alternatives         = 16
	AlternativesOneByOne = 4
)

// alternatives returns the number of candidates one claim tries on repo.
func alternatives(repo registry.Repository) int {
	if registry.ListIsRangeRead(repo) {
		return Alternatives
	}
	return AlternativesOneByOne
}

// maxFutureReads bounds the fences Acquire reads that turn out to be
// reserved ahead: then it takes the ones of them whose reservation ends
// first (and waits) rather than read more.
const maxFutureReads = 8

// farAhead: the hinted id is not preferred when its floor is further ahead
// than this and other ids are free (its keys would wait that long).
const farAhead = time.Second

// candidate is a free worker id with its fence (zero if it has none).
type candidate struct {
	id           int
	fence        Fence
	fenceVersion registry.Version
	unused       bool // no fence, read as never used (floor 0)
	unknown      bool // fence missing or corrupt: floor set to now + unknownFloorAhead
}

// occupancy is what Acquire read of /reservation: the reserved ids, the
// instance's hint, and the fences it read (shared with later views).
type occupancy struct {
	reserved    map[int]bool
	ledgered    bool                // the ledger is known to exist
	used        bool                // Options.LedgerSeen
	trustAbsent bool                // Options.UnsafeTrustAbsentFence
	fences      map[int]registry.KV // fences read; Version 0: absent
	future      map[int]bool        // ids whose fence was found reserved ahead
	hint        int                 // the instance's hinted id, or -1
	hintVersion registry.Version
	age         int // claims tried on this view
	log         *slog.Logger
}

// readOccupancy reads the reservation names and, for a stable instance,
// its hint. It does not read the fences: with the ledger there are 1024 of
// them, and a read of all of them by every node of a mass start costs the
// registry far more than a read of each node's candidates.
func readOccupancy(ctx context.Context, repo registry.Repository, instanceID string, stable bool) (*occupancy, error) {
	o := &occupancy{reserved: map[int]bool{}, fences: map[int]registry.KV{}, future: map[int]bool{}, hint: -1}
	hintKey, _ := paths.WorkerIDHint(instanceID)
	names, err := repo.Children(ctx, paths.ReservationRoot)
	if err != nil {
		return nil, fmt.Errorf("acquire worker id: list reservations: %w", err)
	}
	for _, name := range names {
		if id, err := paths.ParseWorkerID(name); err == nil {
			o.reserved[id] = true
		}
	}
	if stable {
		kv, err := repo.Get(ctx, hintKey)
		switch {
		case err == nil:
			o.setHint(kv)
		case !errors.Is(err, registry.ErrNotFound):
			return nil, fmt.Errorf("acquire worker id: read hint: %w", err)
		}
	}
	return o, nil
}

func (o *occupancy) setHint(kv registry.KV) {
	o.hintVersion = kv.Version
	if id, err := paths.ParseWorkerID(string(kv.Value)); err == nil {
		o.hint = id
	}
}

// readFences reads, in one GetMany, the fences of ids not read yet.
func (o *occupancy) readFences(ctx context.Context, repo registry.Repository, ids []int) error {
	var need []int
	var keys []string
	for _, id := range ids {
		if _, ok := o.fences[id]; !ok {
			fk, _ := paths.Fence(id)
			need, keys = append(need, id), append(keys, fk)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	kvs, err := registry.GetMany(ctx, repo, keys)
	if err != nil {
		return fmt.Errorf("acquire worker id: read fences: %w", err)
	}
	for i, id := range need {
		o.fences[id] = kvs[i]
	}
	return nil
}

// candidates resolves the fences of ids (all read) at now and returns the
// claim's alternatives in order: the ids whose fence is not reserved ahead
// (the hint: not more than farAhead ahead), in the order given. When all
// are ahead it records them and asks for a retry (other ids first), unless
// maxFutureReads fences were found ahead or no other free id is left: then
// the alternatives are those found ahead, the earliest reservation first.
func (o *occupancy) candidates(ids []int, now int64) (cands []candidate, retry bool) {
	for _, id := range ids {
		kv := o.fences[id]
		c := o.resolve(id, kv, kv.Version != 0, now)
		ahead := now
		if id == o.hint {
			ahead += farAhead.Milliseconds()
		}
		if c.fence.ReservedUntil >= ahead && !o.future[id] {
			o.future[id] = true // its last holder may still be issuing: try elsewhere first
			continue
		}
		if !o.future[id] {
			cands = append(cands, c)
		}
	}
	if len(cands) > 0 {
		return cands, false
	}
	if len(o.future) < maxFutureReads && o.unread() {
		return nil, true
	}
	var ahead []candidate
	for id := range o.future {
		if kv, read := o.fences[id]; read && o.free(id) {
			ahead = append(ahead, o.resolve(id, kv, kv.Version != 0, now))
		}
	}
	slices.SortFunc(ahead, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.fence.ReservedUntil, b.fence.ReservedUntil), cmp.Compare(a.id, b.id))
	})
	return ahead[:min(len(ahead), Alternatives)], false
}

// unread reports whether a free id's fence is still unread.
func (o *occupancy) unread() bool {
	for id := 0; id < Count; id++ {
		if _, read := o.fences[id]; o.free(id) && !read && !o.future[id] {
			return true
		}
	}
	return false
}

// resolve turns id's fence record (present false: none) into a candidate:
// a valid record gives its floor; a missing one is a never-used id (floor
// 0) only before the ledger exists, on a cluster not known to be used (or
// with trustAbsent); otherwise, and for a corrupt record, the floor is
// unknown: now + unknownFloorAhead.
func (o *occupancy) resolve(id int, kv registry.KV, present bool, now int64) candidate {
	c := candidate{id: id}
	if !present {
		if o.trustAbsent || (!o.ledgered && !o.used) {
			c.unused = true
			return c
		}
	} else {
		c.fenceVersion = kv.Version
		f, err := decodeFence(kv.Value)
		if err == nil && f.ReservedUntil > now+maxFenceAhead.Milliseconds() {
			err = fmt.Errorf("corrupt fence record %q: reserved more than %v ahead of this clock", kv.Value, maxFenceAhead)
		}
		if err == nil {
			c.fence = f
			return c
		}
		o.log.Warn("a worker id's fence record is corrupt: its floor is unknown", "worker_id", id, "err", err)
		c.fence.Epoch = f.Epoch // 0 unless only the time was absurd
	}
	c.unknown = true
	c.fence.ReservedUntil = now + unknownFloorAhead.Milliseconds()
	return c
}

func (o *occupancy) free(id int) bool { return !o.reserved[id] }

// UpstreamRange is the number of lowest worker ids (0 to 127) that Acquire
// leaves to ShardingSphere nodes in a mixed cluster. Upstream takes the
// smallest id that no /nodes/compute_nodes/worker_id node names, and leaves
// no persistent trace of the ids it held (its nodes are ephemeral and it
// writes no fence), so the ids upstream nodes have held are the lowest
// ones: an upstream node takes id k only while ids 0 to k-1 are all taken.
// Acquire takes an id below UpstreamRange (the restart hint included) only
// when no id from UpstreamRange up is free, so an id it takes was never
// held by an upstream node unless UpstreamRange ids were taken at once, and
// a starting upstream node, which goes for the lowest free id, does not
// race a shardkeeper node for it.
const UpstreamRange = 128

// choose picks up to n free ids for the next claim, in preference order,
// leaving out those whose fence was found reserved ahead: the hinted id
// (unless it is below UpstreamRange while higher ids are free), then
// random ids from UpstreamRange up; ids below UpstreamRange only when every
// free id from UpstreamRange up is already among the picks, so that they
// are claimed only if all of those were taken (on etcd in the same atomic
// step). It returns nil when every free id was found ahead and (see
// candidates) those are to be taken, or when no id is free.
func (o *occupancy) choose(rng *rand.Rand, n int) []int {
	var high, low []int
	for id := 0; id < Count; id++ {
		if !o.free(id) || o.future[id] || id == o.hint {
			continue
		}
		if id < UpstreamRange {
			low = append(low, id)
		} else {
			high = append(high, id)
		}
	}
	var out []int
	hintOK := o.hint >= 0 && o.free(o.hint) && !o.future[o.hint]
	if hintOK && o.hint >= UpstreamRange {
		out = append(out, o.hint)
	}
	out = appendRandom(out, high, n-len(out), rng)
	if len(out) < n && len(out) == len(high)+boolInt(hintOK && o.hint >= UpstreamRange) {
		if hintOK && o.hint < UpstreamRange {
			out = append(out, o.hint)
		}
		out = appendRandom(out, low, n-len(out), rng)
	}
	if len(out) == 0 {
		// Only ids found ahead are free: candidates takes the earliest.
		for id := range o.future {
			if o.free(id) {
				out = append(out, id)
			}
		}
		slices.Sort(out)
	}
	return out
}

// appendRandom appends k distinct random elements of from (all of them
// when it has no more than k) to out; it reorders from.
func appendRandom(out, from []int, k int, rng *rand.Rand) []int {
	for i := 0; i < k && i < len(from); i++ {
		j := i + rng.IntN(len(from)-i)
		from[i], from[j] = from[j], from[i]
		out = append(out, from[i])
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func splitLast(key string) (parent, name string) {
	i := strings.LastIndexByte(key, '/')
	return key[:i], key[i+1:]
}
