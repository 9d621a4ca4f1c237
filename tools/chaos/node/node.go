// Package node is the key-issuing node program of a chaos run: a
// clusternode.Node on an injectable clock that issues keys at a steady rate,
// records each key before it counts as issued and each worker-id event, and
// obeys clock and stop commands from the harness, one a line.
package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clusternode "github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/retry"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
	"github.com/shardkeeper/shardkeeper/snowflake"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
)

// Config configures one node process of a run (see Run).
type Config struct {
	Dir         string // the run directory
	Node        string // e.g. "g3"
	Incarnation string // e.g. "g3.7"; also the node's instance id
	Registry    string // "etcd" or "zookeeper"
	Endpoints   []string
	Namespace   string
	SessionTTL  time.Duration
	Reservation time.Duration  // W
	Variant     record.Variant // "" means record.VariantFenced
	ClockOffset time.Duration  // the key clock's offset at start (negative: behind)
	Rate        int            // keys per second to issue; 0 means as fast as it can
	Batch       int            // keys per request; 0 means 16
	MaxKeys     int64          // stop after this many keys; 0 means no bound
	Logger      *slog.Logger   // nil means a text logger on stderr
}

// Node control commands, one a line on the control stream.
const (
	// CmdStep steps the node's clock: "step -1h", "step 5ms".
	CmdStep = "step"
	// CmdRate sets the clock's rate error in ppm: "rate 500", "rate -80000".
	CmdRate = "rate"
	// CmdStop leaves the cluster gracefully and exits.
	CmdStop = "stop"
)

// Run is the key-issuing node of a run: it opens the registry, waits
// for a worker id (retrying while the pool is exhausted or the registry is
// unreachable), issues keys at cfg.Rate and appends each batch to its keys
// file before it counts as issued, and records its events (record.EventStart, the
// cluster's OnEvent trail, stalls, progress every 250 ms). It obeys the
// commands on control and leaves gracefully on CmdStop, at the end of
// control, when ctx ends, or after cfg.MaxKeys keys.
func Run(ctx context.Context, cfg Config, control io.Reader) error {
	if cfg.Batch <= 0 {
		cfg.Batch = 16
	}
	if cfg.Variant == "" {
		cfg.Variant = record.VariantFenced
	}
	if _, err := record.ParseVariant(string(cfg.Variant)); err != nil {
		return fmt.Errorf("chaos node: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	dir := filepath.Join(cfg.Dir, "nodes", cfg.Node)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rec := &eventLog{path: filepath.Join(dir, record.EventFileName(cfg.Incarnation))}
	keys, err := record.CreateKeyWriter(filepath.Join(dir, record.KeyFileName(cfg.Incarnation)))
	if err != nil {
		return err
	}
	defer keys.Close()
	clock := NewClock(nil)
	clock.Step(cfg.ClockOffset)
	rec.add(record.Event{Kind: record.EventStart, Offset: clock.Offset()})

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go obey(ctx, control, clock, rec, stop, cfg.Logger)

	repo, err := openRegistry(ctx, cfg)
	if err != nil {
		return err
	}
	counter := fault.Count(repo)
	defer repo.Close()

	ncfg := clusternode.Config{
		// A stable instance id: each claim records the worker id in the
		// incarnation's restart hint, and a claim prefers the hinted id
		// (the operator lane swaps hints).
		InstanceID:        cfg.Incarnation,
		SessionTTL:        cfg.SessionTTL,
		Reservation:       cfg.Reservation,
		Snowflake:         snowflake.Config{Clock: clock},
		Logger:            cfg.Logger,
		UnsafeLeaseOnly:   cfg.Variant == record.VariantLeaseOnly,
		UnsafeIgnoreFloor: cfg.Variant == record.VariantIgnoreFloor,
		// Negative control (iii).
		UnsafeTrustAbsentFence: cfg.Variant == record.VariantTrustAbsentFence,
	}
	// The epoch of the last acquisition, to mark the keys with: the node
	// calls OnEvent with EventAcquired before it issues any key of the new
	// epoch, and it stops issuing on the old one first (but with
	// UnsafeLeaseOnly, whose keys are checked per incarnation only).
	var acquired atomic.Pointer[clusternode.Event]
	ncfg.OnEvent = func(e clusternode.Event) {
		if e.Kind == clusternode.EventAcquired {
			acquired.Store(&e)
		}
		rec.clusterEvent(e)
	}
	rec.add(record.Event{Kind: record.EventStall, Reason: "no worker id"})
	node, err := openNode(ctx, counter.Repo, ncfg, cfg.Logger)
	if err != nil {
		return err
	}
	is := issuer{cfg: cfg, node: node, keys: keys, rec: rec, writes: func() int64 { return writes(counter) }, clock: clock,
		acquired: &acquired, stalled: true}
	err = is.run(ctx)
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = errors.Join(err, node.Close(closeCtx))
	rec.add(record.Event{Kind: record.EventExit, Keys: is.issued, Writes: writes(counter)})
	return err
}

// openRegistry connects to the run's registry, retrying until ctx ends: a
// node may start while it is partitioned from the registry.
func openRegistry(ctx context.Context, cfg Config) (registry.Repository, error) {
	for {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		var repo registry.Repository
		var err error
		switch cfg.Registry {
		case "etcd":
			repo, err = etcd.Open(c, etcd.Config{Endpoints: cfg.Endpoints, Namespace: cfg.Namespace, DialTimeout: 2 * time.Second})
		case "zookeeper":
			repo, err = zookeeper.Open(c, zookeeper.Config{Servers: cfg.Endpoints, Namespace: cfg.Namespace,
				SessionTimeout: cfg.SessionTTL, ConnectTimeout: 2 * time.Second})
		default:
			cancel()
			return nil, fmt.Errorf("chaos node: unknown registry %q (want etcd or zookeeper)", cfg.Registry)
		}
		cancel()
		if err == nil {
			return repo, nil
		}
		cfg.Logger.Warn("registry not reachable yet; retrying", "err", err)
		if !retry.Sleep(ctx, 200*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

// openNode starts the cluster node, waiting while every worker id of the
// pool is taken (a standby node) or the registry does not answer.
func openNode(ctx context.Context, repo registry.Repository, cfg clusternode.Config, log *slog.Logger) (*clusternode.Node, error) {
	for {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		node, err := clusternode.Open(c, repo, cfg)
		cancel()
		if err == nil {
			return node, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, clusternode.ErrExhausted) {
			log.Warn("open failed; retrying", "err", err)
		}
		if !retry.Sleep(ctx, 100*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

func writes(c *fault.Counter) int64 {
	var n int64
	for op, v := range c.Counts() {
		switch op {
		case "put", "create", "update", "delete", "put-ephemeral", "create-ephemeral", "commit", "commit-first", "session", "session-close":
			n += v
		}
	}
	return n
}

// issuer is the node's key loop.
type issuer struct {
	cfg    Config
	node   *clusternode.Node
	keys   *record.KeyWriter
	rec    *eventLog
	clock  *Clock
	writes func() int64
	// acquired is the last record.EventAcquired; a batch that saw the same one
	// before and after it was issued is of that epoch.
	acquired *atomic.Pointer[clusternode.Event]
	issued   int64
	stalled  bool
}

func (is *issuer) run(ctx context.Context) error {
	buf := make([]int64, 0, is.cfg.Batch)
	paceStart, paceKeys := time.Now(), int64(0)
	nextProgress := time.Now()
	for ctx.Err() == nil && (is.cfg.MaxKeys == 0 || is.issued < is.cfg.MaxKeys) {
		if now := time.Now(); !now.Before(nextProgress) {
			is.rec.add(record.Event{Kind: record.EventProgress, Keys: is.issued, Writes: is.writes(), Offset: is.clock.Offset()})
			nextProgress = now.Add(250 * time.Millisecond)
		}
		n := is.cfg.Batch
		if is.cfg.MaxKeys > 0 {
			n = int(min(int64(n), is.cfg.MaxKeys-is.issued))
		}
		c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		var err error
		before := is.acquired.Load()
		if n == 1 {
			var k int64
			if k, err = is.node.NextID(c); err == nil {
				buf = append(buf[:0], k)
			} else {
				buf = buf[:0]
			}
		} else {
			buf, err = is.node.AppendIDs(c, buf[:0], n)
		}
		cancel()
		epoch := record.EpochUnknown
		if a := is.acquired.Load(); a != nil && a == before {
			epoch = a.Epoch
		}
		if len(buf) > 0 {
			// On record before it counts as issued.
			if werr := is.keys.Append(epoch, buf); werr != nil {
				return fmt.Errorf("chaos node: record keys: %w", werr)
			}
			is.issued += int64(len(buf))
			paceKeys += int64(len(buf))
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if !is.stalled {
				is.stalled = true
				is.rec.add(record.Event{Kind: record.EventStall, Reason: stallReason(err)})
			}
			retry.Sleep(ctx, 2*time.Millisecond)
			paceStart, paceKeys = time.Now(), 0
			continue
		}
		if is.stalled {
			is.stalled = false
			is.rec.add(record.Event{Kind: record.EventResume, Keys: is.issued})
		}
		if is.cfg.Rate > 0 {
			due := paceStart.Add(time.Duration(paceKeys) * time.Second / time.Duration(is.cfg.Rate))
			switch wait := time.Until(due); {
			case wait > 0:
				retry.Sleep(ctx, wait)
			case wait < -100*time.Millisecond:
				// Far behind (the process was paused): no burst to catch up.
				paceStart, paceKeys = time.Now(), 0
			}
		}
	}
	is.rec.add(record.Event{Kind: record.EventProgress, Keys: is.issued, Writes: is.writes(), Offset: is.clock.Offset()})
	return nil
}

// stallReason classifies a key error for the report.
func stallReason(err error) string {
	switch {
	case errors.Is(err, clusternode.ErrNotIssuing):
		return "no worker id"
	case errors.Is(err, snowflake.ErrClockBackwards):
		return "clock backwards"
	case errors.Is(err, snowflake.ErrReservationExpired):
		return "reservation"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return err.Error()
}

// obey applies the commands read from control until it ends or ctx ends;
// then it calls stop.
func obey(ctx context.Context, control io.Reader, clock *Clock, rec *eventLog, stop func(), log *slog.Logger) {
	defer stop()
	sc := bufio.NewScanner(control)
	for sc.Scan() {
		if ctx.Err() != nil {
			return
		}
		cmd, arg, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		switch cmd {
		case CmdStep:
			d, err := time.ParseDuration(arg)
			if err != nil {
				log.Error("bad control command", "line", sc.Text(), "err", err)
				continue
			}
			rec.addAfter(func() record.Event {
				clock.Step(d)
				return record.Event{Kind: record.EventClock, Offset: clock.Offset(), Reason: "step " + arg}
			})
		case CmdRate:
			ppm, err := strconv.ParseFloat(arg, 64)
			if err != nil {
				log.Error("bad control command", "line", sc.Text(), "err", err)
				continue
			}
			rec.addAfter(func() record.Event {
				clock.SetRate(ppm)
				return record.Event{Kind: record.EventClock, Offset: clock.Offset(), Reason: "rate " + arg + "ppm"}
			})
		case CmdStop:
			return
		case "":
		default:
			log.Error("unknown control command", "line", sc.Text())
		}
	}
}

// eventLog appends an incarnation's events; safe for concurrent use.
type eventLog struct {
	path   string
	mu     sync.Mutex
	failed atomic.Bool
}

func (l *eventLog) add(e record.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.write(e)
}

// addAfter applies change and records the event it returns without letting
// another event in between, so events the change causes (a stall on a
// stepped-back clock) are recorded after it.
func (l *eventLog) addAfter(change func() record.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.write(change())
}

// write appends e, stamped now if it has no time; l.mu must be held.
func (l *eventLog) write(e record.Event) {
	if e.T == 0 {
		e.T = time.Now().UnixNano()
	}
	if err := record.AppendJSONLine(l.path, e); err != nil && !l.failed.Swap(true) {
		fmt.Fprintf(os.Stderr, "chaos node: recording events: %v\n", err)
	}
}

func (l *eventLog) clusterEvent(e clusternode.Event) {
	ev := record.Event{Worker: e.WorkerID, Epoch: e.Epoch, Floor: e.FloorMs, Until: e.ReservedUntilMs}
	switch e.Kind {
	case clusternode.EventAcquired:
		ev.Kind = record.EventAcquired
	case clusternode.EventReserved:
		ev.Kind = record.EventReserved
	case clusternode.EventLost:
		ev.Kind = record.EventLost
	case clusternode.EventReleased:
		ev.Kind = record.EventReleased
	default:
		return
	}
	if e.Err != nil {
		ev.Reason = e.Err.Error()
	}
	l.add(ev)
}
