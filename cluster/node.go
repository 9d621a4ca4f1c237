package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/retry"
	"github.com/shardkeeper/shardkeeper/internal/workerid"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// ErrNotIssuing is returned by NextID while the node holds no worker id
// with a valid reservation: after a lost session or fence (until it has
// re-acquired one), or after Close.
var ErrNotIssuing = errors.New("cluster: not issuing keys: no worker id with a valid time reservation (see the node's logs)")

// ErrInstanceIDInUse is returned by Open when another live node holds the
// online key of the configured instance id (two nodes started with one
// --instance-id); the error names the id and the holder's address.
var ErrInstanceIDInUse = errors.New("cluster: instance id in use by another live node")

// Node is one running compute node. Its methods are safe for concurrent
// use.
type Node struct {
	cfg     Config
	repo    registry.Repository
	members *members
	stats   counters

	gen     atomic.Pointer[snowflake.Generator] // nil while not issuing
	current atomic.Pointer[holding]             // the held worker id

	hooksMu sync.Mutex // held while hooks run and the current holding is stored
	hooks   []*sessionHook
	catchUp atomic.Pointer[func(context.Context) error] // see SetCatchUp

	ledgerSeen atomic.Bool     // this node saw the cluster's worker id ledger
	life       context.Context // the run loop's; ends when Close starts
	cancel     context.CancelFunc
	done       chan struct{} // closed when the run loop returns
	closeMu    sync.Mutex
	closed     bool
}

// holding is one worker id held through one session.
type holding struct {
	sess registry.Session
	h    *workerid.Holding
	gen  *snowflake.Generator
	lost chan struct{} // closed when the renewer gives up on it
}

// Open starts a node on repo: it opens a session, claims a worker id,
// commits the first time reservation, registers the node online, loads the
// membership and starts watching it. It returns a node that can issue keys
// at once and whose Instances include every node online when it loaded
// them, itself included. An instance id whose online node another
// session holds is waited for up to the session TTL (a crashed node's key
// expires) and then refused with ErrInstanceIDInUse. ctx bounds only the
// start; the node runs until Close. Errors: an *ExhaustedError (matching
// ErrExhausted) when every worker id is taken; registry errors (then
// whatever Open claimed is released); config errors, all of them at once.
func Open(ctx context.Context, repo registry.Repository, cfg Config) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, repo: repo, members: newMembers(cfg.Logger), done: make(chan struct{})}
	if !cfg.RandomInstanceID {
		if err := n.checkInstanceFree(ctx); err != nil {
			return nil, err
		}
	}
	hold, err := n.acquire(ctx)
	if errors.Is(err, workerid.ErrExhausted) {
		return nil, exhausted()
	}
	if err != nil {
		return nil, err
	}
	if cfg.Snowflake.WorkerID != 0 {
		cfg.Logger.Warn(fmt.Sprintf("It is unnecessary to configure worker-id in cluster mode, system assigned worker-id was %d", hold.h.WorkerID))
	}
	runCtx, cancel := context.WithCancel(context.Background())
	n.life, n.cancel = runCtx, cancel
	go n.run(runCtx, hold)
	// The node's own registration is written: a List now includes it.
	known, err := n.members.load(ctx, repo)
	if err != nil {
		c, cancelClose := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancelClose()
		_ = n.Close(c)
		return nil, fmt.Errorf("cluster: load the membership: %w", err)
	}
	go n.members.run(runCtx, repo, known)
	return n, nil
}

// checkInstanceFree returns nil once no session holds this node's online
// key. A key left by a session that is gone (a node killed without
// Close) vanishes within the session TTL; a key still there after the
// TTL and a margin, or rewritten meanwhile, belongs to a live node, and
// Open refuses with ErrInstanceIDInUse instead of fighting it for worker
// ids. ctx bounds the wait.
func (n *Node) checkInstanceFree(ctx context.Context) error {
	key, err := paths.Online(n.cfg.instanceType(), n.cfg.InstanceID)
	if err != nil {
		return err
	}
	ttl := n.cfg.SessionTTL
	if ttl <= 0 {
		ttl = registry.DefaultSessionTTL
	}
	deadline := time.Now().Add(ttl + instanceCheckMargin)
	var first registry.KV
	for logged := false; ; logged = true {
		kv, err := n.repo.Get(ctx, key)
		switch {
		case errors.Is(err, registry.ErrNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("cluster: read the online node of instance id %s: %w", n.cfg.InstanceID, err)
		}
		if first.Key == "" {
			first = kv
		}
		if kv.Version != first.Version || !time.Now().Before(deadline) {
			var v onlineValue
			_ = yaml.Unmarshal(kv.Value, &v)
			return fmt.Errorf("%w: %s is online at %q (%s) and its session is alive: start this node with another --instance-id, or stop that one", ErrInstanceIDInUse, n.cfg.InstanceID, v.Attribute, key)
		}
		if !logged {
			n.cfg.Logger.Warn("the online node of this instance id exists; waiting up to the session TTL for it to expire (a node killed without Close), else refusing to start",
				"instance_id", n.cfg.InstanceID, "key", key, "wait", time.Until(deadline).Round(time.Second))
		}
		if !retry.Sleep(ctx, min(instanceCheckPoll, time.Until(deadline))) {
			return ctx.Err()
		}
	}
}

// instanceCheckMargin and instanceCheckPoll pace checkInstanceFree.
const (
	instanceCheckMargin = 2 * time.Second
	instanceCheckPoll   = 250 * time.Millisecond
)

// closeTimeout bounds the release of what a failed Open claimed.
const closeTimeout = 5 * time.Second

// acquire opens a session, claims a worker id, reserves time, builds the
// generator and registers online. On error it closes what it opened, with
// one exception: a worker id claimed when Close interrupts a re-acquisition
// becomes the current holding, not issuing, with its session, so that
// Close releases it as it releases any holding (lowers its fence and emits
// EventReleased) instead of leaving its reservation raised and the trail
// ending in EventLost.
func (n *Node) acquire(ctx context.Context) (hold *holding, err error) {
	sess, err := n.repo.NewSession(ctx, registry.SessionOptions{TTL: n.cfg.SessionTTL})
	if err != nil {
		return nil, fmt.Errorf("cluster: open session: %w", err)
	}
	closing := false // the claim is handed to Close
	defer func() {
		if err != nil && !closing {
			_ = sess.Close(context.WithoutCancel(ctx))
		}
	}()
	h, err := workerid.Acquire(ctx, n.repo, sess, n.cfg.InstanceID, workerid.Options{NowMillis: n.nowMillis, Stable: !n.cfg.RandomInstanceID, Logger: n.cfg.Logger,
		UnsafeTrustAbsentFence: n.cfg.UnsafeTrustAbsentFence, LedgerSeen: n.ledgerSeen.Load()})
	if err != nil {
		if errors.Is(err, workerid.ErrExhausted) {
			return nil, err
		}
		return nil, fmt.Errorf("cluster: %w", err)
	}
	sfc := n.cfg.Snowflake
	sfc.WorkerID = int64(h.WorkerID)
	sfc.Fenced = !n.cfg.UnsafeLeaseOnly
	gen, err := snowflake.New(sfc)
	if err != nil {
		return nil, err
	}
	claimed := &holding{sess: sess, h: h, gen: gen, lost: make(chan struct{})}
	n.emit(EventAcquired, claimed, nil)
	defer func() {
		switch {
		case err == nil:
		case n.life != nil && n.life.Err() != nil:
			closing = true
			n.current.Store(claimed)
		default:
			n.emit(EventLost, claimed, err)
		}
	}()
	hold = claimed
	if err := n.awaitCatchUp(ctx, sess); err != nil {
		return nil, err
	}
	if !n.cfg.UnsafeLeaseOnly {
		if err := n.reserve(ctx, hold); err != nil {
			return nil, fmt.Errorf("cluster: first time reservation for worker id %d: %w", h.WorkerID, err)
		}
	}
	if err := n.register(ctx, sess); err != nil {
		return nil, err
	}
	n.hooksMu.Lock()
	for _, hook := range n.hooks {
		if err := hook.f(ctx, sess); err != nil {
			n.hooksMu.Unlock()
			return nil, fmt.Errorf("cluster: register: %w", err)
		}
	}
	n.current.Store(hold)
	n.gen.Store(gen)
	n.hooksMu.Unlock()
	if h.Ledgered {
		n.ledgerSeen.Store(true)
	}
	n.stats.acquisitions.Add(1)
	n.cfg.Logger.Info("holding worker id", "worker_id", h.WorkerID, "epoch", h.Epoch, "floor_ms", h.Floor,
		"reserved_until_ms", h.ReservedUntil(), "session", sess.ID())
	return hold, nil
}

// reserve commits now+W and opens the generator's window up to it, from
// the floor (from 0 with UnsafeIgnoreFloor).
func (n *Node) reserve(ctx context.Context, hold *holding) error {
	until := n.nowMillis() + n.cfg.Reservation.Milliseconds()
	if err := hold.h.Reserve(ctx, until); err != nil {
		return err
	}
	floor := hold.h.Floor
	if n.cfg.UnsafeIgnoreFloor {
		floor = 0
	}
	hold.gen.SetWindow(floor, hold.h.ReservedUntil())
	n.stats.renewals.Add(1)
	n.emit(EventReserved, hold, nil)
	return nil
}

// emit calls the OnEvent hook, if any.
func (n *Node) emit(kind EventKind, hold *holding, err error) {
	if n.cfg.OnEvent == nil {
		return
	}
	n.cfg.OnEvent(Event{Kind: kind, WorkerID: hold.h.WorkerID, Epoch: hold.h.Epoch, FloorMs: hold.h.Floor,
		ReservedUntilMs: hold.h.ReservedUntil(), Err: err})
}

// sessionHook is one OnSession function; its address identifies it.
type sessionHook struct {
	f func(context.Context, registry.Session) error
}

// Session returns the registry session the node holds its worker id and
// its registration in (online, status and labels nodes), or nil while it
// holds none: after it lost its session, until it has re-acquired a
// worker id. After Close it returns the closed session.
//
// The other parts of a process write what they keep for the node
// (ephemeral nodes, locks held for a short operation) in this session
// rather than in one of their own: it then goes with the node, its
// session's TTL applies to it, and on ZooKeeper the node holds one
// connection for all of it besides the repository's own. What must
// outlive a lost session is written again through OnSession.
func (n *Node) Session() registry.Session {
	if h := n.current.Load(); h != nil {
		return h.sess
	}
	return nil
}

// OnSession adds f to the node's registration. f writes what another part
// of the process keeps in the node's session, as the node writes its
// online node: OnSession calls it at once with the current session (when
// the node holds one), and the node calls it again with each new session
// it holds after losing one, once it has written its own registration and
// before it issues keys again. A failing f fails that acquisition, which
// the node retries in a new session. f must return when ctx ends and must
// not call OnSession or the function it returns.
//
// OnSession returns the error of the first call (f is then not added),
// and a function that removes f.
func (n *Node) OnSession(ctx context.Context, f func(ctx context.Context, sess registry.Session) error) (remove func(), err error) {
	hook := &sessionHook{f: f}
	n.hooksMu.Lock()
	defer n.hooksMu.Unlock()
	if sess := n.Session(); sess != nil {
		if err := f(ctx, sess); err != nil {
			return nil, err
		}
	}
	n.hooks = append(n.hooks, hook)
	return func() {
		n.hooksMu.Lock()
		defer n.hooksMu.Unlock()
		n.hooks = slices.DeleteFunc(n.hooks, func(h *sessionHook) bool { return h == hook })
	}, nil
}

// SetCatchUp sets f, which the node calls each time it holds a worker id
// again after losing its session (not in Open), before it commits its
// time reservation and registers online: f returns nil once what the
// node serves has caught up with the registry (the daemon passes its
// metadata Store's CaughtUp), so that a node the registry lists online
// again shows every change acknowledged while it was away; such a change
// did not wait for it, as it was not online. The node bounds f by
// Config.CatchUpTimeout (and by the acquisition's context): when f
// returns an error, or is cut short by the bound, the node logs a warning
// with f's error and registers anyway, rather than stay offline for good.
// A nil f removes it. Safe for concurrent use; it applies from the next
// re-acquisition on.
func (n *Node) SetCatchUp(f func(ctx context.Context) error) {
	if f == nil {
		n.catchUp.Store(nil)
		return
	}
	n.catchUp.Store(&f)
}

// awaitCatchUp calls the SetCatchUp function, if any, within
// Config.CatchUpTimeout. It returns an error only when ctx ended (the
// acquisition was cut short); any other failure is logged.
func (n *Node) awaitCatchUp(ctx context.Context, sess registry.Session) error {
	f := n.catchUp.Load()
	if f == nil {
		return nil
	}
	start := time.Now()
	c, cancel := context.WithTimeout(ctx, n.cfg.CatchUpTimeout)
	err := (*f)(c)
	cancel()
	if ctx.Err() != nil {
		return fmt.Errorf("cluster: waiting for the metadata to catch up: %w", ctx.Err())
	}
	if err != nil {
		n.cfg.Logger.Warn("registering online again before this node's metadata caught up with the registry: its reads may miss changes acknowledged while it was away",
			"waited", time.Since(start).Round(time.Millisecond), "bound", n.cfg.CatchUpTimeout, "session", sess.ID(), "err", err)
		return nil
	}
	n.cfg.Logger.Info("metadata caught up with the registry; registering online again", "waited", time.Since(start).Round(time.Millisecond))
	return nil
}

// register publishes the online, status and (optional) labels nodes.
func (n *Node) register(ctx context.Context, sess registry.Session) error {
	online, err := paths.Online(n.cfg.instanceType(), n.cfg.InstanceID)
	if err != nil {
		return err
	}
	status, _ := paths.Status(n.cfg.InstanceID)
	if err := sess.PutEphemeral(ctx, status, []byte("OK")); err != nil {
		return fmt.Errorf("cluster: register status: %w", err)
	}
	if len(n.cfg.Labels) > 0 {
		labels, _ := paths.Labels(n.cfg.InstanceID)
		b, _ := yaml.Marshal(n.cfg.Labels)
		if err := sess.PutEphemeral(ctx, labels, b); err != nil {
			return fmt.Errorf("cluster: register labels: %w", err)
		}
	}
	if err := sess.PutEphemeral(ctx, online, encodeOnline(n.cfg)); err != nil {
		return fmt.Errorf("cluster: register online: %w", err)
	}
	return nil
}

// run renews the current holding and, when it is lost, stops issuing and
// acquires again, until ctx ends.
func (n *Node) run(ctx context.Context, hold *holding) {
	defer close(n.done)
	for {
		n.hold(ctx, hold)
		if ctx.Err() != nil {
			return
		}
		// Lost: stop issuing at once, then start over. (Lease-only, as
		// ShardingSphere, keeps issuing on the old id until it has a new
		// one.)
		if !n.cfg.UnsafeLeaseOnly {
			n.gen.Store(nil)
			hold.gen.Revoke()
		}
		n.current.Store(nil)
		_ = hold.sess.Close(context.Background())
		n.stats.losses.Add(1)
		for attempt := 0; ; attempt++ {
			if !retry.Sleep(ctx, backoff(attempt)) {
				return
			}
			c, cancel := context.WithTimeout(ctx, max(10*time.Second, 3*n.cfg.Reservation))
			next, err := n.acquire(c)
			cancel()
			if err == nil {
				hold = next
				break
			}
			if ctx.Err() != nil {
				return
			}
			n.cfg.Logger.Error("re-acquiring a worker id failed; still not issuing keys", "err", err, "attempt", attempt+1)
		}
	}
}

// hold renews hold's reservation every W/3 until it is lost or ctx ends.
// Meanwhile it watches the fence, the reservation and the worker_id node: a
// change by anyone else stops issuing at once. On a cluster without a ledger it creates
// one (see workerid.EnsureLedger) in the background.
func (n *Node) hold(ctx context.Context, hold *holding) {
	period := n.cfg.Reservation / 3
	t := time.NewTicker(period)
	defer t.Stop()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	foreign := make(chan error, 1)
	wall, mono := n.nowMillis(), time.Now()
	if !n.cfg.UnsafeLeaseOnly {
		go n.watch(watchCtx, hold, foreign)
	}
	if !hold.h.Ledgered {
		go n.ensureLedger(watchCtx, hold)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-foreign:
			n.emit(EventLost, hold, err)
			n.cfg.Logger.Error("worker id fence, reservation or worker_id node changed by someone else: stopped issuing keys; re-acquiring a worker id",
				"worker_id", hold.h.WorkerID, "err", err)
			return
		case <-hold.sess.Done():
			if !n.cfg.UnsafeLeaseOnly {
				hold.gen.Revoke()
			}
			n.emit(EventLost, hold, fmt.Errorf("registry session lost: %w", hold.sess.Err()))
			n.cfg.Logger.Error("registry session lost: stopped issuing keys; re-acquiring a worker id",
				"worker_id", hold.h.WorkerID, "err", hold.sess.Err())
			return
		case <-t.C:
		}
		wall, mono = n.checkClock(wall, mono)
		if n.cfg.UnsafeLeaseOnly {
			continue
		}
		c, cancel := context.WithTimeout(ctx, period)
		err := n.reserve(c, hold)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, workerid.ErrLost):
			hold.gen.Revoke()
			n.emit(EventLost, hold, err)
			n.cfg.Logger.Error("worker id fence lost: stopped issuing keys; re-acquiring a worker id",
				"worker_id", hold.h.WorkerID, "err", err)
			return
		case ctx.Err() != nil:
			return
		default:
			n.stats.renewalFailures.Add(1)
			n.cfg.Logger.Warn("time reservation renewal failed; issuing until the last committed limit",
				"worker_id", hold.h.WorkerID, "reserved_until_ms", hold.h.ReservedUntil(), "err", err)
		}
	}
}

// ClockStepBack is the smallest step back of the wall clock a node counts
// (Stats.ClockStepsBack) and logs. NTP slews a clock by at most 0.5 ms per
// second; a larger difference between the wall clock and the monotonic
// clock over one renewal period is a step. Keys never go backwards (the key
// clock advances with the monotonic clock), but reservations are computed
// from the wall clock: after a step back longer than the reservation, keys
// stall until the wall clock has caught up.
const ClockStepBack = 10 * time.Millisecond

// checkClock compares how far the wall clock (the injected clock, if any)
// and the monotonic clock moved since prevWall and prevMono, counts and
// logs a step back of at least ClockStepBack, and returns the readings for
// the next check.
func (n *Node) checkClock(prevWall int64, prevMono time.Time) (int64, time.Time) {
	wall, mono := n.nowMillis(), time.Now()
	if back := mono.Sub(prevMono).Milliseconds() - (wall - prevWall); back >= ClockStepBack.Milliseconds() {
		n.stats.clockStepsBack.Add(1)
		n.cfg.Logger.Warn("the wall clock stepped back; time reservations wait for it to catch up (check NTP or chrony)",
			"step_ms", back, "reservation", n.cfg.Reservation)
	}
	return wall, mono
}

// watch revokes hold's generator and reports on foreign as soon as its
// fence, reservation or worker_id node is changed by anyone else or
// disappears. A watch
// that fails for another reason is started again after a pause (the
// renewals' compare-and-set still guards the holding meanwhile).
func (n *Node) watch(ctx context.Context, hold *holding, foreign chan<- error) {
	for attempt := 0; ; attempt++ {
		err := hold.h.Watch(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, workerid.ErrLost) {
			hold.gen.Revoke()
			foreign <- err
			return
		}
		n.cfg.Logger.Warn("watching the worker id's fence failed; retrying", "worker_id", hold.h.WorkerID, "err", err)
		if !retry.Sleep(ctx, backoff(attempt)) {
			return
		}
	}
}

// ensureLedger creates the cluster's ledger unless it exists or another
// node is creating it, after a random pause of up to a second that lets
// nodes starting together find it made.
func (n *Node) ensureLedger(ctx context.Context, hold *holding) {
	if !retry.Sleep(ctx, rand.N(time.Second)) {
		return
	}
	opts := workerid.Options{NowMillis: n.nowMillis, Logger: n.cfg.Logger, LedgerSeen: n.ledgerSeen.Load()}
	ok, err := workerid.EnsureLedger(ctx, n.repo, hold.sess, n.cfg.InstanceID, opts)
	if ok {
		n.ledgerSeen.Store(true)
	}
	if err != nil && ctx.Err() == nil {
		n.cfg.Logger.Warn("creating the worker id ledger failed; a later acquisition tries again", "err", err)
	}
}

// Ready reports whether a key request would succeed now: the node holds a
// worker id with a committed reservation that covers the current time, its
// clock is past the floor, and it is not waiting for the clock.
func (n *Node) Ready() bool {
	g := n.gen.Load()
	return g != nil && g.Ready()
}

// NextID returns a new key. It waits while the reservation is being renewed
// or the clock is behind the floor, bounded by ctx. Errors: ErrNotIssuing
// while the node holds no valid reservation; snowflake errors
// (ErrClockBackwards, ErrReservationExpired with ctx's error).
func (n *Node) NextID(ctx context.Context) (int64, error) {
	g := n.gen.Load()
	if g == nil {
		n.stats.refused.Add(1)
		return 0, ErrNotIssuing
	}
	k, err := g.NextID(ctx)
	if err != nil {
		return 0, n.keyError(err)
	}
	n.stats.keys.Add(1)
	return k, nil
}

// NextIDs returns count new keys in increasing order, taking the
// generator's lock about once per millisecond they span. On error it
// returns the keys issued before it (valid keys) and the error.
func (n *Node) NextIDs(ctx context.Context, count int) ([]int64, error) {
	return n.AppendIDs(ctx, make([]int64, 0, max(count, 0)), count)
}

// AppendIDs appends count new keys to dst, allocating only when dst lacks
// capacity. See NextIDs.
func (n *Node) AppendIDs(ctx context.Context, dst []int64, count int) ([]int64, error) {
	g := n.gen.Load()
	if g == nil {
		n.stats.refused.Add(1)
		return dst, ErrNotIssuing
	}
	before := len(dst)
	dst, err := g.AppendIDs(ctx, dst, count)
	n.stats.keys.Add(int64(len(dst) - before))
	if err != nil {
		return dst, n.keyError(err)
	}
	return dst, nil
}

func (n *Node) keyError(err error) error {
	if errors.Is(err, snowflake.ErrNoReservation) {
		n.stats.refused.Add(1)
		return fmt.Errorf("%w: %w", ErrNotIssuing, err)
	}
	if errors.Is(err, snowflake.ErrReservationExpired) {
		n.stats.stalls.Add(1)
	}
	return err
}

// InstanceID is the node's instance id.
func (n *Node) InstanceID() string { return n.cfg.InstanceID }

// WorkerID is the worker id the node holds, or -1 while it holds none.
func (n *Node) WorkerID() int {
	if n.gen.Load() == nil {
		return -1
	}
	if h := n.current.Load(); h != nil {
		return h.h.WorkerID
	}
	return -1
}

// Instances returns the online compute nodes as the registry shows them,
// sorted by instance id. From Open on it includes this node, unless the
// node lost its session and has not registered again yet.
func (n *Node) Instances() []Instance {
	list, _ := n.members.view()
	return list
}

// InstancesChanged returns the current instances and a channel closed at
// the next change, for callers that follow the membership.
func (n *Node) InstancesChanged() ([]Instance, <-chan struct{}) { return n.members.view() }

// Self returns this node as Instances shows it or, before its registration
// has come back through the membership watch (and while it re-registers
// after a lost session), as it registers itself: its configuration with
// the defaults Open filled in, the worker id it holds, Version, and an
// empty Status.
func (n *Node) Self() Instance {
	for _, inst := range n.Instances() {
		if inst.ID == n.cfg.InstanceID {
			return inst
		}
	}
	c := n.cfg
	return Instance{ID: c.InstanceID, Type: c.Type, Host: c.Host, Port: c.Port, WorkerID: n.WorkerID(),
		DatabaseName: c.DatabaseName, Version: Version, Labels: c.Labels}
}

// Close leaves the cluster gracefully: it stops issuing, lowers the fence
// to the last issued millisecond (so a successor can start at once),
// deletes the online node and closes the session, which removes every
// ephemeral of the node at once. ctx bounds the registry writes. Close is
// idempotent.
func (n *Node) Close(ctx context.Context) error {
	n.closeMu.Lock()
	defer n.closeMu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	n.gen.Store(nil)
	n.cancel()
	<-n.done
	hold := n.current.Load()
	if hold == nil {
		// The worker id was lost and not re-acquired: its session is gone
		// already, and with it every ephemeral of this node.
		n.cfg.Logger.Info("left the cluster (held no worker id)")
		return nil
	}
	hold.gen.Revoke()
	var errs []error
	if !n.cfg.UnsafeLeaseOnly {
		last, ok := hold.gen.Last()
		if !ok {
			last = hold.h.Floor
		}
		err := hold.h.Release(ctx, last)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster: final fence: %w", err))
		}
		n.emit(EventReleased, hold, err)
	}
	online, _ := paths.Online(n.cfg.instanceType(), n.cfg.InstanceID)
	if err := n.repo.Delete(ctx, online); err != nil {
		errs = append(errs, fmt.Errorf("cluster: offline: %w", err))
	}
	if err := hold.sess.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("cluster: close session: %w", err))
	}
	n.cfg.Logger.Info("left the cluster", "worker_id", hold.h.WorkerID)
	return errors.Join(errs...)
}

func (n *Node) nowMillis() int64 {
	if c := n.cfg.Snowflake.Clock; c != nil {
		return c.UnixNano() / int64(time.Millisecond)
	}
	return time.Now().UnixMilli()
}

// backoff is the pause before retry number attempt of a failed acquisition
// or watch.
func backoff(attempt int) time.Duration {
	return retry.Backoff(attempt, 50*time.Millisecond, 3*time.Second)
}
