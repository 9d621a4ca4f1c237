// Package workerid gives a node a Snowflake worker id (0-1023) from the
// registry and keeps it safely, with ShardingSphere's layout:
//   - /reservation/worker_id/{id}: the holder's instance id, ephemeral,
//     created exclusively;
//   - /nodes/compute_nodes/worker_id/{instanceId}: the decimal id, ephemeral;
//   - /reservation/worker_id_fence/{id}: the fence (see Fence), persistent.
//
// Acquire takes one listing of /reservation and one atomic Commit in the
// common case, whatever the number of nodes starting at once: it prefers
// the id this instance held before (found through the fence's holder), then
// a random free id whose fence is in the past, then a random free id never
// used, then the free id with the oldest fence.
//
// Guarantee: two holders of the same worker id never stamp keys with the
// same millisecond, given only a linearizable registry that is never rolled
// back. The Snowflake generator must be driven by Holding.Floor and the
// limits Holding.Reserve commits; clocks, pauses, TTLs and lease bugs then
// cost availability, never uniqueness.
package workerid

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Count is the number of worker ids: 0 to 1023.
const Count = paths.MaxWorkerID + 1

// ErrExhausted is returned when every worker id is reserved. Its text and
// code are ShardingSphere's WorkerIdAssignedException.
var ErrExhausted = &CodedError{Code: 17001, SQLState: "HY000", Message: "Worker ID assigned failed, which should be in [0, 1024)."}

// ErrLost is returned by Reserve when the fence or the reservation is no
// longer this holder's: another holder took the id, or the session ended.
// The caller must stop issuing at once.
var ErrLost = errors.New("worker id lost: the fence or the reservation changed")

// CodedError is an error with ShardingSphere's vendor code and SQL state.
type CodedError struct {
	Code     int
	SQLState string
	Message  string
}

func (e *CodedError) Error() string { return e.Message }

// Options tune Acquire. The zero value is usable.
type Options struct {
	// NowMillis returns the current unix time in milliseconds; nil means the
	// system clock. Only used to rank candidates; never for safety.
	NowMillis func() int64
	// Rand picks among candidates; nil means a random source.
	Rand *rand.Rand
	// MaxAttempts bounds the claims tried before giving up; 0 means 32.
	MaxAttempts int
	// Stats, when set, counts registry round trips (for benchmarks).
	Stats *Stats
}

// Stats counts registry round trips of Acquire calls. Safe for concurrent
// use.
type Stats struct {
	mu         sync.Mutex
	RoundTrips int64
	Conflicts  int64
}

func (s *Stats) add(trips, conflicts int64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.RoundTrips += trips
	s.Conflicts += conflicts
	s.mu.Unlock()
}

// Holding is a claimed worker id. Its methods are safe for concurrent use.
type Holding struct {
	WorkerID   int
	InstanceID string
	// Epoch is this holder's fence epoch.
	Epoch int64
	// Floor is the previous holder's reservation: never stamp a key <= Floor.
	Floor int64

	repo          registry.Repository
	sess          registry.Session
	resVersion    registry.Version // of /reservation/worker_id/{id}
	mu            sync.Mutex
	fenceVersion  registry.Version
	reservedUntil int64
}

// Acquire claims a free worker id for instanceID, held through sess: the
// reservation and worker_id nodes are ephemerals of sess, and the fence
// epoch is advanced in the same atomic Commit. No key may be issued before
// the first successful Reserve. ctx bounds the whole call. Errors:
// ErrExhausted when all 1024 ids are reserved; registry errors otherwise.
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
	var nodeVersion registry.Version // of our own worker_id node, if a previous session left it
	var trips, conflicts int64
	defer func() { opts.Stats.add(trips, conflicts) }()

	var view *occupancy
	for attempt := 0; attempt < opts.MaxAttempts; attempt++ {
		if view == nil {
			kvs, err := repo.List(ctx, "/reservation")
			trips++
			if err != nil {
				return nil, fmt.Errorf("acquire worker id: list reservations: %w", err)
			}
			view = readOccupancy(kvs)
		}
		cand, ok := view.choose(instanceID, now(), rng)
		if !ok {
			return nil, ErrExhausted
		}
		res, _ := paths.Reservation(cand.id)
		fk, _ := paths.Fence(cand.id)
		next := Fence{Epoch: cand.fence.Epoch + 1, Holder: instanceID, ReservedUntil: cand.fence.ReservedUntil}
		v, err := sess.Commit(ctx, registry.Txn{
			Conds: []registry.Cond{{Key: res}, {Key: fk, Version: cand.fenceVersion}, {Key: nodeKey, Version: nodeVersion}},
			Ops: []registry.Op{
				{Key: res, Value: []byte(instanceID), Ephemeral: true},
				{Key: fk, Value: next.encode()},
				{Key: nodeKey, Value: []byte(strconv.Itoa(cand.id)), Ephemeral: true},
			},
		})
		trips++
		if err == nil {
			return &Holding{
				WorkerID: cand.id, InstanceID: instanceID, Epoch: next.Epoch, Floor: cand.fence.ReservedUntil,
				repo: repo, sess: sess, resVersion: v, fenceVersion: v, reservedUntil: cand.fence.ReservedUntil,
			}, nil
		}
		var op *registry.OpError
		if !errors.As(err, &op) || !(errors.Is(err, registry.ErrExists) || errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrNotFound)) {
			return nil, fmt.Errorf("acquire worker id %d: %w", cand.id, err)
		}
		conflicts++
		switch op.Key {
		case nodeKey:
			// Our instance id's worker_id node is left from an earlier
			// session (a restart within the TTL): overwrite it.
			kv, gerr := repo.Get(ctx, nodeKey)
			trips++
			switch {
			case gerr == nil:
				nodeVersion = kv.Version
			case errors.Is(gerr, registry.ErrNotFound):
				nodeVersion = 0
			default:
				return nil, fmt.Errorf("acquire worker id: %w", gerr)
			}
		default:
			// Someone else won the id or moved its fence: look again, since
			// a starter that lost once is likely among many.
			view = nil
		}
	}
	return nil, fmt.Errorf("acquire worker id: gave up after %d conflicting attempts", opts.MaxAttempts)
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
// own that did land). A reservation never goes down: until below the
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
		// adopt it if the fence is still ours and the reservation unchanged.
		if h.adopt(ctx, fk, res) {
			return h.write(ctx, until)
		}
		return fmt.Errorf("reserve worker id %d: %w (%v)", h.WorkerID, ErrLost, err)
	}
	if errors.Is(err, registry.ErrSessionExpired) || errors.Is(err, registry.ErrClosed) {
		return fmt.Errorf("reserve worker id %d: %w (%v)", h.WorkerID, ErrLost, err)
	}
	return fmt.Errorf("reserve worker id %d: %w", h.WorkerID, err)
}

// adopt re-reads the fence and reservation; if both are still this
// holder's, it takes the fence's version and reservation as current and
// reports true.
func (h *Holding) adopt(ctx context.Context, fk, res string) bool {
	repoKV, err := h.repo.Get(ctx, fk)
	if err != nil {
		return false
	}
	f, err := decodeFence(repoKV.Value)
	if err != nil || f.Epoch != h.Epoch || f.Holder != h.InstanceID || repoKV.Version == h.fenceVersion {
		return false
	}
	resKV, err := h.repo.Get(ctx, res)
	if err != nil || resKV.Version != h.resVersion || string(resKV.Value) != h.InstanceID {
		return false
	}
	h.fenceVersion = repoKV.Version
	if f.ReservedUntil > h.reservedUntil {
		h.reservedUntil = f.ReservedUntil
	}
	return true
}

// candidate is a free worker id with its fence (zero if it has none).
type candidate struct {
	id           int
	fence        Fence
	fenceVersion registry.Version
}

// occupancy is what one listing of /reservation says.
type occupancy struct {
	reserved map[int]bool
	fences   map[int]candidate
	corrupt  map[int]bool // fence unreadable: never claimed (floor unknown)
}

func readOccupancy(kvs []registry.KV) *occupancy {
	o := &occupancy{reserved: map[int]bool{}, fences: map[int]candidate{}, corrupt: map[int]bool{}}
	for _, kv := range kvs {
		parent, name := splitLast(kv.Key)
		id, err := paths.ParseWorkerID(name)
		if err != nil {
			continue
		}
		switch parent {
		case paths.ReservationRoot:
			o.reserved[id] = true
		case paths.FenceRoot:
			f, err := decodeFence(kv.Value)
			if err != nil {
				o.corrupt[id] = true
				continue
			}
			o.fences[id] = candidate{id: id, fence: f, fenceVersion: kv.Version}
		}
	}
	return o
}

// choose picks the next candidate: the id this instance held before if it
// is free, then a random free id whose fence is in the past, then a random
// free id with no fence, then the free id whose fence ends first.
func (o *occupancy) choose(instanceID string, now int64, rng *rand.Rand) (candidate, bool) {
	var past, fresh []candidate
	var future *candidate
	for id := 0; id < Count; id++ {
		if o.reserved[id] || o.corrupt[id] {
			continue
		}
		c, fenced := o.fences[id]
		switch {
		case fenced && c.fence.Holder == instanceID:
			return c, true
		case !fenced:
			fresh = append(fresh, candidate{id: id})
		case c.fence.ReservedUntil < now:
			past = append(past, c)
		case future == nil || c.fence.ReservedUntil < future.fence.ReservedUntil:
			cc := c
			future = &cc
		}
	}
	switch {
	case len(past) > 0:
		return past[rng.IntN(len(past))], true
	case len(fresh) > 0:
		return fresh[rng.IntN(len(fresh))], true
	case future != nil:
		return *future, true
	}
	return candidate{}, false
}

func splitLast(key string) (parent, name string) {
	i := strings.LastIndexByte(key, '/')
	return key[:i], key[i+1:]
}
