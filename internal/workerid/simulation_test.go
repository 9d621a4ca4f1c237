package workerid

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// The simulation runs the worker-id protocol exactly as cluster.Node drives
// it (acquire, first reservation, renew every W/3, stop on a lost fence or
// session, release on leave) for several nodes over the memory registry, in
// virtual time on one goroutine, with a seeded schedule of faults: pauses
// longer than the session TTL (the registry expires the session and another
// node takes the id while the paused node still believes it holds it),
// clock steps both ways, crashes without release, graceful leaves. The
// worker-id pool is cut to a few ids so takeovers happen all the time.
// A checker records every key: exact duplicates, and (worker id,
// millisecond) pairs stamped by two different holders.

var (
	simSeeds = flag.Int("sim.seeds", 40, "simulation: number of seeds")
	simKeys  = flag.Int("sim.keys", 25000, "simulation: keys to issue per seed")
)

const (
	simBase   = int64(1_800_000_000_000) // virtual time 0, unix ms
	simTTL    = 300                      // session TTL, ms
	simW      = 150                      // reservation ahead, ms
	simNodes  = 5
	simPool   = 3 // free worker ids
	simFiller = "filler"
)

type simResult struct {
	keys, duplicates, overlaps, takeovers, expiries, losses, stalls, clockErrors int
}

func (r *simResult) add(o simResult) {
	r.keys += o.keys
	r.duplicates += o.duplicates
	r.overlaps += o.overlaps
	r.takeovers += o.takeovers
	r.expiries += o.expiries
	r.losses += o.losses
	r.stalls += o.stalls
	r.clockErrors += o.clockErrors
}

// world is the virtual time every node's clock derives from.
type world struct{ now int64 } // ms since simBase

// simClock is one node's clock: the world's time plus the node's skew.
// Sleeping advances the world (the simulation is single-threaded).
type simClock struct {
	w    *world
	skew *int64
}

func (c simClock) UnixNano() int64 { return (simBase + c.w.now + *c.skew) * int64(time.Millisecond) }
func (c simClock) Sleep(d time.Duration) {
	c.w.now += int64((d + time.Millisecond - 1) / time.Millisecond)
}

type simNode struct {
	name        string
	repo        registry.Repository
	skew        int64
	sess        registry.Session
	h           *Holding
	gen         *snowflake.Generator
	holder      int // incarnation number of the current holding
	pausedUntil int64
	lastAlive   int64
	lastRenew   int64
	nextAcquire int64
}

func (n *simNode) nowMs(w *world) int64 { return simBase + w.now + n.skew }

func runSimulation(t *testing.T, seed uint64, keys int, fenced bool) simResult {
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel() // key calls never block: a wait for a new reservation fails at once
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	store := memory.New()
	for id := simPool; id < Count; id++ {
		key, _ := paths.Reservation(id)
		if _, err := store.Put(ctx, key, []byte(simFiller)); err != nil {
			t.Fatal(err)
		}
	}
	w := &world{}
	nodes := make([]*simNode, simNodes)
	for i := range nodes {
		nodes[i] = &simNode{name: fmt.Sprintf("node-%d", i), repo: store.Clone()}
	}
	var res simResult
	owner := map[int64]int{}       // (worker<<42 | ms) -> holder incarnation
	seen := map[int64]struct{}{}   // every key
	lastHolder := map[int]string{} // worker id -> node name of the last acquire
	incarnations := 0
	buf := make([]int64, 0, 4096)

	stop := func(n *simNode) {
		if n.gen != nil {
			n.gen.Revoke()
		}
		n.gen, n.h = nil, nil
	}
	acquire := func(n *simNode) {
		if n.sess == nil || closedChan(n.sess.Done()) {
			s, err := n.repo.NewSession(ctx, registry.SessionOptions{TTL: simTTL * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			n.sess = s
			n.lastAlive = w.now
		}
		h, err := Acquire(ctx, n.repo, n.sess, n.name, Options{NowMillis: func() int64 { return n.nowMs(w) }, Rand: rng})
		if errors.Is(err, ErrExhausted) {
			return
		}
		if err != nil {
			t.Fatalf("seed %d: acquire: %v", seed, err)
		}
		cfg := snowflake.Config{WorkerID: int64(h.WorkerID), MaxVibrationOffset: 1, MaxTolerateTimeDifference: 10 * time.Millisecond,
			Fenced: fenced, Clock: simClock{w: w, skew: &n.skew}}
		gen, err := snowflake.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if fenced {
			if err := h.Reserve(ctx, n.nowMs(w)+simW); err != nil {
				return
			}
			gen.SetWindow(h.Floor, h.ReservedUntil())
		}
		if prev, ok := lastHolder[h.WorkerID]; ok && prev != n.name {
			res.takeovers++
		}
		lastHolder[h.WorkerID] = n.name
		incarnations++
		n.h, n.gen, n.holder, n.lastRenew = h, gen, incarnations, w.now
	}

	type orphan struct {
		sess      registry.Session
		lastAlive int64
	}
	var orphans []orphan
	for res.keys < keys {
		if w.now > 3_600_000 {
			t.Fatalf("seed %d: an hour of virtual time for %d keys: the cluster stopped issuing", seed, res.keys)
		}
		w.now += 1 + int64(rng.IntN(4))
		// The registry expires sessions whose owner went silent for a TTL,
		// including those of crashed incarnations.
		live := orphans[:0]
		for _, o := range orphans {
			if w.now-o.lastAlive > simTTL {
				memory.Expire(o.sess)
				res.expiries++
			} else {
				live = append(live, o)
			}
		}
		orphans = live
		for _, n := range nodes {
			if n.sess != nil && !closedChan(n.sess.Done()) && w.now-n.lastAlive > simTTL {
				memory.Expire(n.sess)
				res.expiries++
			}
		}
		for _, i := range rng.Perm(len(nodes)) {
			n := nodes[i]
			if w.now < n.pausedUntil {
				continue
			}
			// Faults.
			switch p := rng.IntN(1000); {
			case p < 4: // a pause, often past the TTL
				n.pausedUntil = w.now + int64(rng.IntN(3*simTTL))
				continue
			case p < 7: // a clock step, back or forward
				n.skew += int64(rng.IntN(2001) - 1000)
			case p < 9: // crash: no release, the session lingers until its TTL
				stop(n)
				if n.sess != nil {
					orphans = append(orphans, orphan{n.sess, n.lastAlive})
				}
				n.sess = nil
			case p < 11: // graceful leave
				if n.h != nil {
					n.gen.Revoke()
					last, ok := n.gen.Last()
					if !ok {
						last = n.h.Floor
					}
					_ = n.h.Release(ctx, last)
				}
				stop(n)
				if n.sess != nil {
					n.sess.Close(ctx)
					n.sess = nil
				}
			}
			// A resumed node issues first, before it notices anything.
			if n.gen != nil {
				var err error
				buf, err = n.gen.AppendIDs(done, buf[:0], 1+rng.IntN(8))
				switch {
				case errors.Is(err, snowflake.ErrReservationExpired):
					res.stalls++
				case errors.Is(err, snowflake.ErrClockBackwards):
					res.clockErrors++
				}
				for _, k := range buf {
					if _, dup := seen[k]; dup {
						res.duplicates++
					}
					seen[k] = struct{}{}
					p := snowflake.Decompose(k)
					slot := p.WorkerID<<42 | p.Millis
					if o, ok := owner[slot]; ok && o != n.holder {
						res.overlaps++
					}
					owner[slot] = n.holder
				}
				res.keys += len(buf)
			}
			if n.sess != nil && !closedChan(n.sess.Done()) {
				n.lastAlive = w.now
			}
			// It notices a lost session, renews, or acquires.
			switch {
			case n.sess != nil && closedChan(n.sess.Done()):
				if n.h != nil {
					res.losses++
				}
				stop(n)
				n.sess = nil
			case n.h != nil && fenced && w.now-n.lastRenew >= simW/3:
				if err := n.h.Reserve(ctx, n.nowMs(w)+simW); err == nil {
					n.gen.SetWindow(n.h.Floor, n.h.ReservedUntil())
					n.lastRenew = w.now
				} else if errors.Is(err, ErrLost) {
					res.losses++
					stop(n)
				}
			case n.h == nil && w.now >= n.nextAcquire:
				n.nextAcquire = w.now + 20 // a retry backoff, as the node has
				acquire(n)
			}
		}
	}
	return res
}

func closedChan(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestSimulationNoDuplicates is the deterministic simulation: many seeds,
// at least a million keys in all, zero duplicates and zero (worker, ms)
// overlaps between holders. The negative control runs the same schedules
// with the fence off and must find duplicates, or the schedule proves
// nothing.
func TestSimulationNoDuplicates(t *testing.T) {
	var fenced, control simResult
	for seed := uint64(1); seed <= uint64(*simSeeds); seed++ {
		r := runSimulation(t, seed, *simKeys, true)
		if r.duplicates != 0 || r.overlaps != 0 {
			t.Errorf("seed %d: fenced run found %d duplicate keys and %d (worker, ms) overlaps", seed, r.duplicates, r.overlaps)
		}
		fenced.add(r)
		control.add(runSimulation(t, seed, *simKeys, false))
	}
	t.Logf("fenced:           %d seeds, %d keys, %d takeovers, %d session expiries, %d losses, %d stalls, %d clock errors: %d duplicates, %d overlaps",
		*simSeeds, fenced.keys, fenced.takeovers, fenced.expiries, fenced.losses, fenced.stalls, fenced.clockErrors, fenced.duplicates, fenced.overlaps)
	t.Logf("negative control: %d seeds, %d keys, %d takeovers, %d session expiries, %d losses: %d duplicates, %d overlaps",
		*simSeeds, control.keys, control.takeovers, control.expiries, control.losses, control.duplicates, control.overlaps)
	if fenced.keys < 1_000_000 && *simSeeds*(*simKeys) >= 1_000_000 {
		t.Errorf("only %d keys issued", fenced.keys)
	}
	if fenced.takeovers == 0 || fenced.expiries == 0 {
		t.Errorf("the schedule caused no takeovers (%d) or expiries (%d): it proves nothing", fenced.takeovers, fenced.expiries)
	}
	if control.duplicates == 0 {
		t.Errorf("the negative control (fence off) found no duplicates: the schedule cannot catch the bug it is meant to catch")
	}
}
