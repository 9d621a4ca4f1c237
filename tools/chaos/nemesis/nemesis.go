// Package nemesis injects a chaos run's faults on lanes: one lane per node
// (partitions, one-way loss, pauses, kills and restarts with the clock
// behind, clock steps and skews of that node, one at a time), one lane for
// the registry (its leader killed or paused, one at a time) and one for an
// operator who deletes worker ids' reservations and fences. Each lane draws
// its schedule from its own generator seeded from the run's seed, so a
// negative-control run with the same seed gets the same schedule.
package nemesis

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/retry"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/tools/chaos/ensemble"
	"github.com/shardkeeper/shardkeeper/tools/chaos/netns"
	"github.com/shardkeeper/shardkeeper/tools/chaos/node"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
)

// nodeFaultKinds are drawn in shuffled rounds, so every kind comes up
// equally often on every lane.
var nodeFaultKinds = []string{record.FaultPartition, record.FaultOneWay, record.FaultPause, record.FaultKill, record.FaultClockStep, record.FaultClockSkew}

// registryFaultKinds alternate on the registry lane.
var registryFaultKinds = []string{record.FaultLeaderKill, record.FaultLeaderPause}

// ttlMultiples sweep pauses and partitions around the session TTL.
var ttlMultiples = []float64{0.5, 0.9, 1.0, 1.1, 2, 5}

// leaderHolds sweep registry leader faults around the election timeout
// (etcd: 1 s; ZooKeeper: a few ticks of 200 ms).
var leaderHolds = []time.Duration{500 * time.Millisecond, 900 * time.Millisecond, 1100 * time.Millisecond,
	2 * time.Second, 3 * time.Second}

// clockSteps are the magnitudes of clock steps, both signs.
var clockSteps = []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond,
	time.Second, 10 * time.Second, 30 * time.Second, time.Hour}

// restartBehind are how much further behind a killed node's clock is when
// it restarts than the clock of the incarnation it replaces, for the new
// incarnation's life (a machine that boots with its clock wrong and no time
// sync), up to maxRestartBehind and then from the start again. A node that
// acquires a worker id with its clock behind the keys the previous holders
// issued must wait for the floor; the floor control (record.VariantIgnoreFloor)
// does not, and issues their keys again. Since every restart is further
// behind than the incarnation it replaces, this holds also when the
// restarted node takes the worker id the killed incarnation held.
var restartBehind = []time.Duration{5 * time.Second, 10 * time.Second}

// maxRestartBehind bounds how far behind a restarted node's clock is.
const maxRestartBehind = time.Minute

// clockRates are the rate errors of skews, in ppm, both signs (500 ppm is a
// bad crystal; 8% is the most chrony slews by default).
var clockRates = []float64{500, 80000}

// Node is a node of the run as the nemesis drives it: a process restarted
// as new incarnations, each with its own clock offset, that obeys
// node.Cmd* control lines.
type Node interface {
	// Name is the node's name, e.g. "g3".
	Name() string
	// Host is the node's host on the test network.
	Host() *netns.Host
	// Current returns the current incarnation's name and how far behind
	// its clock started.
	Current() (incarnation string, behind time.Duration)
	// Signal sends sig to the current process's group.
	Signal(sig syscall.Signal)
	// Kill sends SIGKILL and waits until the process is gone.
	Kill() error
	// Start starts the next incarnation with its clock behind by behind.
	Start(behind time.Duration) error
	// Command sends one control line to the current process.
	Command(line string) error
}

// Config configures the faults of one run.
type Config struct {
	Seed        int64
	Every       time.Duration // mean gap between a lane's faults
	DeleteEvery time.Duration // mean gap between fence deletions; 0: none
	TTL         time.Duration // the nodes' session TTL
	Reservation time.Duration // the nodes' W
	Pool        int           // the free worker ids 0..Pool-1
	Network     *netns.Network
	Ensemble    ensemble.Ensemble
	Nodes       []Node
	// NodeFaults are the kinds of faults the node lanes draw, from
	// record.FaultPartition, FaultOneWay, FaultPause, FaultKill,
	// FaultClockStep and FaultClockSkew; nil means all of them. A kill
	// restarts the node (Start) with its clock behind; a node whose clock
	// cannot be set (a shardkeeper node) ignores that.
	NodeFaults []string
	// Open connects to the registry in the run's namespace.
	Open func(ctx context.Context) (registry.Repository, error)
	// Record records a fault; it is called from the lanes' goroutines.
	Record func(record.FaultRecord)
	Log    *slog.Logger
}

// Run runs every lane until ctx ends; each lane heals its fault in
// progress before Run returns.
func Run(ctx context.Context, cfg Config) {
	m := &nemesis{cfg: cfg, bigSteps: max(0, cfg.Pool-2), unreachable: map[string]bool{}}
	m.run(ctx)
}

// nemesis runs the lanes of one run.
type nemesis struct {
	cfg      Config
	mu       sync.Mutex
	bigSteps int // forward steps of an hour left (each burns a worker id for an hour)
	// unreachable holds the names of the nodes whose lane has a partition, a
	// one-way loss, a pause or a kill in progress (see fenceDelete).
	unreachable map[string]bool
	// spans are, by worker id, the times the operator lane saw the id's
	// holders issuing; only the operator lane uses them.
	spans map[int][]span
	// clocks is held for reading by clock steps and skews and for writing
	// by a fence deletion until the deleted fences are written again, so
	// that no node's clock is stepped while a worker id's floor is unknown
	// (see fenceDelete).
	clocks sync.RWMutex
}

// run runs every lane until ctx ends; each lane heals its fault in progress
// before it returns.
func (m *nemesis) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i, p := range m.cfg.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.nodeLane(ctx, rand.New(rand.NewPCG(uint64(m.cfg.Seed), uint64(i+1))), p)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.registryLane(ctx, rand.New(rand.NewPCG(uint64(m.cfg.Seed), 0)))
	}()
	if m.cfg.DeleteEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.operatorLane(ctx, rand.New(rand.NewPCG(uint64(m.cfg.Seed), operatorStream)))
		}()
	}
	wg.Wait()
}

// gap waits a lane's random pause between faults; false when ctx ended.
func (m *nemesis) gap(ctx context.Context, rng *rand.Rand) bool {
	d := time.Duration(float64(m.cfg.Every) * (0.5 + rng.Float64()))
	return retry.Sleep(ctx, d)
}

func (m *nemesis) nodeLane(ctx context.Context, rng *rand.Rand, p Node) {
	var round []string
	for m.gap(ctx, rng) {
		if len(round) == 0 {
			kinds := nodeFaultKinds
			if m.cfg.NodeFaults != nil {
				kinds = m.cfg.NodeFaults
			}
			round = append([]string(nil), kinds...)
			rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		kind := round[0]
		round = round[1:]
		rec := record.FaultRecord{Kind: kind, Target: p.Name(), Start: time.Now().UnixNano()}
		var err error
		cuts := kind != record.FaultClockStep && kind != record.FaultClockSkew
		if cuts {
			m.setUnreachable(p.Name(), true)
		}
		switch kind {
		case record.FaultPartition, record.FaultOneWay:
			err = m.cut(ctx, rng, p, kind, &rec)
		case record.FaultPause:
			hold := m.aroundTTL(rng)
			rec.Detail = fmt.Sprintf("%v (%.1fx TTL)", hold.Round(time.Millisecond), float64(hold)/float64(m.cfg.TTL))
			p.Signal(syscall.SIGSTOP)
			retry.Sleep(ctx, hold)
			p.Signal(syscall.SIGCONT)
		case record.FaultKill:
			rest := time.Duration(rng.IntN(100)) * time.Millisecond
			_, started := p.Current()
			behind := started + restartBehind[rng.IntN(len(restartBehind))]
			if behind > maxRestartBehind {
				behind -= maxRestartBehind
			}
			rec.Detail = fmt.Sprintf("restart after %v, clock %v behind", rest, behind)
			err = p.Kill()
			if err == nil {
				retry.Sleep(ctx, rest)
				err = p.Start(behind)
			}
		case record.FaultClockStep:
			m.clocks.RLock()
			rec.Start = time.Now().UnixNano()
			err = m.step(ctx, rng, p, &rec)
			m.clocks.RUnlock()
		case record.FaultClockSkew:
			m.clocks.RLock()
			rec.Start = time.Now().UnixNano()
			ppm := clockRates[rng.IntN(len(clockRates))]
			if rng.IntN(2) == 0 {
				ppm = -ppm
			}
			hold := time.Duration(2+rng.IntN(4)) * time.Second
			rec.Detail = fmt.Sprintf("%+g ppm for %v", ppm, hold)
			err = p.Command(fmt.Sprintf("%s %g", node.CmdRate, ppm))
			retry.Sleep(ctx, hold)
			// Back to the right rate, and undo the drift.
			err = firstErr(err, p.Command(node.CmdRate+" 0"))
			drift := time.Duration(float64(hold) * ppm / 1e6)
			err = firstErr(err, p.Command(fmt.Sprintf("%s %v", node.CmdStep, -drift)))
			m.clocks.RUnlock()
		}
		if cuts {
			m.setUnreachable(p.Name(), false)
		}
		rec.End = time.Now().UnixNano()
		if err != nil {
			rec.Detail += "; error: " + err.Error()
			m.cfg.Log.Warn("fault failed", "kind", kind, "node", p.Name(), "err", err)
		}
		m.cfg.Record(rec)
	}
}

// setUnreachable records whether node name has a fault in progress that
// keeps it from the registry (a partition, a one-way loss, a pause or a
// kill).
func (m *nemesis) setUnreachable(name string, unreachable bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if unreachable {
		m.unreachable[name] = true
	} else {
		delete(m.unreachable, name)
	}
}

// cut partitions node p from every registry member (both ways) or drops
// the members' replies to it, for a time around the TTL.
func (m *nemesis) cut(ctx context.Context, rng *rand.Rand, p Node, kind string, rec *record.FaultRecord) error {
	hold := m.aroundTTL(rng)
	rec.Detail = fmt.Sprintf("%v (%.1fx TTL)", hold.Round(time.Millisecond), float64(hold)/float64(m.cfg.TTL))
	var heals []func() error
	servers := m.cfg.Ensemble.Hosts()
	if kind == record.FaultOneWay {
		heal, err := m.cfg.Network.DropReplies(servers, p.Host())
		if err != nil {
			return err
		}
		heals = append(heals, heal)
	} else {
		for _, s := range servers {
			heal, err := m.cfg.Network.Partition(p.Host(), s)
			if err != nil {
				return firstErr(err, healAll(heals))
			}
			heals = append(heals, heal)
		}
	}
	retry.Sleep(ctx, hold)
	return healAll(heals)
}

// step steps node p's clock and later undoes it. Steps of an hour forward
// burn the worker id for an hour (its fence is an hour ahead): the node is
// restarted instead of stepped back, and at most Pool-2 of them happen in
// a run, so the pool keeps ids to take over.
func (m *nemesis) step(ctx context.Context, rng *rand.Rand, p Node, rec *record.FaultRecord) error {
	d := clockSteps[rng.IntN(len(clockSteps))]
	if rng.IntN(2) == 0 {
		d = -d
	}
	if d == time.Hour {
		m.mu.Lock()
		if m.bigSteps > 0 {
			m.bigSteps--
		} else {
			d = -d
		}
		m.mu.Unlock()
	}
	hold := time.Duration(1+rng.IntN(3)) * time.Second
	rec.Detail = fmt.Sprintf("%+v for %v", d, hold)
	if err := p.Command(fmt.Sprintf("%s %v", node.CmdStep, d)); err != nil {
		return err
	}
	retry.Sleep(ctx, hold)
	if d == time.Hour {
		rec.Detail += ", then kill -9 and restart"
		if err := p.Kill(); err != nil {
			return err
		}
		return p.Start(0)
	}
	return p.Command(fmt.Sprintf("%s %v", node.CmdStep, -d))
}

func (m *nemesis) aroundTTL(rng *rand.Rand) time.Duration {
	f := ttlMultiples[rng.IntN(len(ttlMultiples))]
	return time.Duration(f * float64(m.cfg.TTL))
}

// registryLane kills or pauses the registry's leader, one at a time.
func (m *nemesis) registryLane(ctx context.Context, rng *rand.Rand) {
	e := m.cfg.Ensemble
	for i := 0; m.gap(ctx, rng); i++ {
		kind := registryFaultKinds[i%len(registryFaultKinds)]
		rec := record.FaultRecord{Kind: kind, Start: time.Now().UnixNano()}
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		leader, err := e.Leader(c)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			m.cfg.Log.Warn("no registry leader to fault", "err", err)
			continue
		}
		rec.Target = fmt.Sprintf("%s member %d (leader)", e.Kind(), leader+1)
		hold := leaderHolds[rng.IntN(len(leaderHolds))]
		rec.Detail = fmt.Sprintf("%v", hold)
		if kind == record.FaultLeaderKill {
			err = e.Kill(leader)
			retry.Sleep(ctx, hold)
			err = firstErr(err, e.Start(leader))
		} else {
			err = e.Pause(leader)
			retry.Sleep(ctx, hold)
			err = firstErr(err, e.Resume(leader))
		}
		rec.End = time.Now().UnixNano()
		if err != nil {
			rec.Detail += "; error: " + err.Error()
			m.cfg.Log.Warn("fault failed", "kind", kind, "err", err)
		}
		m.cfg.Record(rec)
	}
}

func healAll(heals []func() error) error {
	var err error
	for _, h := range heals {
		err = firstErr(err, h())
	}
	return err
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
