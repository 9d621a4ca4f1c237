package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Watch implements registry.Repository. It registers a persistent
// recursive watch on prefix (ZooKeeper 3.6+), before the first read, on
// the Repo's recursive session (one connection all its Watches share),
// which reports every creation, change of data and deletion below prefix
// in zxid order; after a sync (see syncHints) each changed znode is read
// again, each new one read with its subtree, its parent not listed again.
// Without one (a 3.5 server, a failed registration) or once it fails, it
// keeps a data watch and a child watch armed on every znode at or under
// prefix and re-arms each after it fires, like Curator's TreeCache, each
// znode read again after the failure, so no change is missed (see
// fallBack), until the recursive watch is registered again (see
// restartRecursive). An exists watch is armed on prefix while it is
// missing. Every event is re-read from the server, so the Event carries
// the current value and Version, events for one key arrive in order, and
// changes between two reads are coalesced. A znode found created again is
// reported only once its parent is known to be the same, or, when the
// parent was created again too, after every key of the parent's old
// subtree is reported deleted (see parentReplaced).
//
// The initial snapshot, and every subtree that appears later, is read level
// by level with a window of reads in flight on the connection (pipelined),
// not one round trip after another; ctx bounds those reads too. With the
// recursive watch, a level of 64 znodes or more is read with multiRead
// requests of up to 128 reads on its session (ZooKeeper 3.6+; one request
// per read where the server has none), and so is every tracked znode when
// the recursive watch is registered again after a failure.
//
// Parent znodes are keys with empty values: the initial snapshot holds every
// znode at or under prefix (except the namespace root itself), and creating
// "/a/b/c" under a watched "/a" reports "/a/b" (empty) before "/a/b/c".
//
// When the Repo's session expires (or the Repo is closed), the last event
// has Err wrapping registry.ErrWatchLost. A disconnection that keeps the
// session does not end the watch: the client re-registers the watches.
//
// Cost: with the recursive watch, a share of the Repo's recursive session
// (a TCP connection and two goroutines, reading and pinging, closed with
// the last Watch) and a registration on the server; without it, two armed
// client watches per znode under prefix (no goroutine waits on them: the
// Repo's event callback hands each fired watch to the Watches whose prefix
// holds it), so watch the subtrees you need rather than "/". The client
// cannot remove a watch from the server; after ctx ends each armed watch
// stays registered until its znode next changes.
func (r *Repo) Watch(ctx context.Context, prefix string) ([]registry.KV, <-chan registry.Event, error) {
	if err := r.check(ctx, "watch", prefix); err != nil {
		return nil, nil, err
	}
	w := &watch{
		r:     r,
		ctx:   ctx,
		key:   prefix,
		root:  r.full(prefix),
		conn:  r.conn,
		lost:  r.lostChan(),
		queue: noteQueue{wake: make(chan struct{}, 1)},
		quit:  make(chan struct{}),
		out:   make(chan registry.Event),
		nodes: map[string]*wnode{},
		kids:  map[string]map[string]struct{}{},
	}
	var initial []registry.KV
	w.emit = func(ev registry.Event) bool { initial = append(initial, ev.KV); return true }
	r.addWatch(w)        // before the first read: no event after it is missed
	w.openRecursive(ctx) // before the first read too: no znode created after it is missed
	if err := w.loadRoot(); err != nil {
		w.stopRecursive()
		r.removeWatch(w)
		close(w.quit)
		return nil, nil, r.convert("watch", prefix, err)
	}
	w.emit = w.send
	go w.run()
	return initial, w.out, nil
}

// watch is the state of one Watch, owned by its run goroutine (and by
// Watch until run starts).
type watch struct {
	r    *Repo
	ctx  context.Context
	key  string   // the prefix as given
	root string   // its znode
	conn *zk.Conn // the Repo's connection
	lost <-chan struct{}
	// rec is the persistent recursive watch on root while it lasts: it
	// reports every change, so no data or child watch is armed (dataArm
	// and childArm are covered). Nil when the server has none or it
	// failed.
	rec *recursiveWatch
	// retry, while rec is nil, pushes a note to open it again after
	// retryWait.
	retry     *time.Timer
	retryWait time.Duration

	queue noteQueue     // fired watches under root, from the Repo's event callback
	quit  chan struct{} // closed when run ends
	out   chan registry.Event
	emit  func(registry.Event) bool

	nodes map[string]*wnode // tracked znodes at or under root
	// kids are the tracked znodes by parent (every tracked znode but
	// root has its parent tracked): removing a subtree visits what it
	// holds, not every tracked znode.
	kids    map[string]map[string]struct{}
	rootArm uint64 // exists watch on root while it is missing
	nextArm uint64
	// ahead is what resync read ahead with multiRead, by znode, for
	// loadNode and loadChildren to take once each instead of reading it
	// again; nil outside resync.
	ahead map[string]*readAhead
}

// readAhead is a znode resync read ahead (see readAheadOf): its data and
// its children, each taken once.
type readAhead struct {
	fetched
	dataTaken, childrenTaken bool
}

// put tracks p as nd.
func (w *watch) put(p string, nd *wnode) {
	w.nodes[p] = nd
	if p == w.root {
		return
	}
	parent := parentOf(p)
	set := w.kids[parent]
	if set == nil {
		set = map[string]struct{}{}
		w.kids[parent] = set
	}
	set[p] = struct{}{}
}

// parentOf is the path of znode p's parent.
func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

// subtree appends p and every tracked znode below it to out.
func (w *watch) subtree(p string, out []string) []string {
	out = append(out, p)
	for c := range w.kids[p] {
		out = w.subtree(c, out)
	}
	return out
}

// forget stops tracking p (whose children are forgotten too, by the
// caller).
func (w *watch) forget(p string) {
	delete(w.nodes, p)
	delete(w.kids, p)
	if p == w.root {
		return
	}
	parent := parentOf(p)
	if set := w.kids[parent]; set != nil {
		delete(set, p)
		if len(set) == 0 {
			delete(w.kids, parent)
		}
	}
}

// wnode is what is known about one tracked znode. dataArm and childArm are
// non-zero while a data and a child watch armed by this watch's reads have
// not fired: an event of that kind on the znode is then handled, otherwise
// it is ignored (the znode is read again anyway). Both are covered while
// the recursive watch reports the znode's changes (its fired client
// watches, armed before, are then ignored); zero means read it again.
type wnode struct {
	czxid, mzxid      int64
	dataArm, childArm uint64
}

// covered is the dataArm and childArm of a znode read since the recursive
// watch was registered: the watch reports every change of its data, its
// deletion and every child created since, and no client watch is armed.
const covered = ^uint64(0)

// Waits before the recursive watch is opened again after a failure.
const (
	minRecursiveRetry = time.Second
	maxRecursiveRetry = time.Minute
)

// openRecursive registers the recursive watch on root (rec), within ctx
// and Config.ConnectTimeout. When that fails, it is tried again later
// (restartRecursive), after a wait that doubles up to maxRecursiveRetry,
// unless the server has no addWatch.
func (w *watch) openRecursive(ctx context.Context) bool {
	if w.r.noRecursive.Load() {
		return false
	}
	rec, err := w.r.openRecursive(ctx, w.root,
		func(p string, t zk.EventType) {
			w.queue.push(note{path: p, ev: zk.Event{Type: t, Path: p}, hint: true})
		},
		func(rec *recursiveWatch, err error) { w.queue.push(note{fail: err, failed: rec}) })
	if err != nil {
		logger{w.r.cfg.Logger}.Printf("watch %s: following new znodes with child watches: %v", w.key, err)
		if !errors.Is(err, errNoAddWatch) {
			w.retryLater()
		}
		return false
	}
	w.rec, w.retryWait = rec, 0
	return true
}

// retryLater has restartRecursive run after the next wait.
func (w *watch) retryLater() {
	w.retryWait = min(max(2*w.retryWait, minRecursiveRetry), maxRecursiveRetry)
	w.retry = time.AfterFunc(w.retryWait, func() { w.queue.push(note{restart: true}) })
}

// restartRecursive opens the recursive watch again, after a failure. Once
// it is registered every tracked znode counts as not listed, and resync
// lists each (arming no child watch): a znode created before the
// registration is found by that listing, one created after it is
// reported. The child watches armed meanwhile are ignored when they fire.
func (w *watch) restartRecursive() error {
	w.retry = nil
	if w.rec != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Second)
	defer cancel()
	if !w.openRecursive(ctx) {
		return nil
	}
	for _, nd := range w.nodes {
		nd.dataArm, nd.childArm = 0, 0
	}
	return w.resync()
}

// closeRecursive closes the recursive watch, if any.
func (w *watch) closeRecursive() {
	if w.rec != nil {
		w.rec.close()
		w.rec = nil
	}
}

// stopRecursive closes the recursive watch and stops trying to open it.
func (w *watch) stopRecursive() {
	if w.retry != nil {
		w.retry.Stop()
		w.retry = nil
	}
	w.closeRecursive()
}

// armToken is the dataArm or childArm of a znode read with the watch ch,
// or covered by the recursive watch when the read armed none.
func (w *watch) armToken(p string, ch <-chan zk.Event) uint64 {
	if ch == nil && w.rec != nil {
		return covered
	}
	return w.forward(p, ch)
}

// children lists p's children, arming a child watch unless the recursive
// watch reports p's new children (the channel is then nil).
func (w *watch) children(p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if w.rec != nil {
		names, stat, err := w.conn.Children(p)
		return names, stat, nil, err
	}
	return w.conn.ChildrenW(p)
}

// note is one fired watch on a znode at or under the watch's root, or
// from the recursive watch: a hint that path was created, or its failure.
type note struct {
	path    string
	ev      zk.Event
	hint    bool            // the recursive watch saw path changed (ev.Type)
	synced  []note          // hints after the sync that made the connection see them
	fail    error           // the recursive watch failed
	failed  *recursiveWatch // which one
	restart bool            // time to open the recursive watch again
}

// noteQueue is an unbounded queue of notes: the Repo's event callback,
// which runs on the client's receive loop, must never block.
type noteQueue struct {
	mu    sync.Mutex
	notes []note
	wake  chan struct{} // holds a token while notes is not empty
}

func (q *noteQueue) push(n note) {
	q.mu.Lock()
	q.notes = append(q.notes, n)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop returns the oldest note, if any.
func (q *noteQueue) pop() (note, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.notes) == 0 {
		return note{}, false
	}
	n := q.notes[0]
	q.notes[0] = note{}
	q.notes = q.notes[1:]
	if len(q.notes) == 0 {
		q.notes = nil
	} else {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return n, true
}

// popHints returns the hints at the head of the queue.
func (q *noteQueue) popHints() []note {
	q.mu.Lock()
	defer q.mu.Unlock()
	var paths []note
	for len(q.notes) > 0 && q.notes[0].hint {
		paths = append(paths, q.notes[0])
		q.notes[0] = note{}
		q.notes = q.notes[1:]
	}
	if len(q.notes) == 0 {
		q.notes = nil
	}
	return paths
}

// forward records that a read armed the client watch ch and returns a
// non-zero token for it. Its event reaches run through the Repo's event
// callback (dispatch), which the client runs for every fired watch, in
// order with the answers: no goroutine waits on ch, which the client
// closes when the watch fires.
func (w *watch) forward(path string, ch <-chan zk.Event) uint64 {
	w.nextArm++
	return w.nextArm
}

// addWatch registers w for the fired watches under its root.
func (r *Repo) addWatch(w *watch) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if r.watches == nil {
		r.watches = map[*watch]struct{}{}
	}
	r.watches[w] = struct{}{}
}

func (r *Repo) removeWatch(w *watch) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	delete(r.watches, w)
}

// dispatch hands a fired watch's event to every Watch whose prefix holds
// its znode. It runs on the client's receive loop and does not block.
func (r *Repo) dispatch(ev zk.Event) {
	if ev.Type == zk.EventSession || ev.Path == "" {
		return
	}
	r.wmu.Lock()
	defer r.wmu.Unlock()
	for w := range r.watches {
		if ev.Path == w.root || strings.HasPrefix(ev.Path, w.root+"/") {
			w.queue.push(note{path: ev.Path, ev: ev})
		}
	}
}

func (w *watch) run() {
	defer close(w.out)
	defer close(w.quit)
	defer w.r.removeWatch(w)
	defer w.stopRecursive()
	backoff := 50 * time.Millisecond
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.r.done:
			w.end(fmt.Errorf("%w: %w", registry.ErrWatchLost, registry.ErrClosed))
			return
		case <-w.lost:
			w.end(fmt.Errorf("%w: the ZooKeeper session expired", registry.ErrWatchLost))
			return
		case <-w.queue.wake:
		}
		for {
			n, ok := w.queue.pop()
			if !ok {
				break
			}
			if w.ctx.Err() != nil {
				return
			}
			handle := func() error { return w.handle(n) }
			switch {
			case n.fail != nil && n.failed != w.rec:
				continue // one closed already
			case n.fail != nil:
				handle = func() error { return w.fallBack(n.fail) }
			case n.hint:
				hints := append([]note{n}, w.queue.popHints()...)
				handle = func() error { return w.syncHints(hints) }
			case n.synced != nil:
				handle = func() error { return w.handleHints(n.synced) }
			case n.restart:
				handle = w.restartRecursive
			case n.ev.Type == zk.EventNotWatching || n.ev.Err != nil:
				w.end(fmt.Errorf("%w: %w", registry.ErrWatchLost, n.ev.Err))
				return
			}
			for attempt := 0; ; attempt++ {
				var err error
				if attempt == 0 {
					err = handle()
				} else {
					err = w.resync()
				}
				if err == nil {
					backoff = 50 * time.Millisecond
					break
				}
				if errors.Is(err, errStopped) {
					return
				}
				if !transient(err) {
					w.end(fmt.Errorf("%w: %w", registry.ErrWatchLost, err))
					return
				}
				// Not re-armed yet: read again once the connection is back.
				t := time.NewTimer(backoff)
				select {
				case <-t.C:
				case <-w.ctx.Done():
					t.Stop()
					return
				case <-w.r.done:
					t.Stop()
					w.end(fmt.Errorf("%w: %w", registry.ErrWatchLost, registry.ErrClosed))
					return
				case <-w.lost:
					t.Stop()
					w.end(fmt.Errorf("%w: the ZooKeeper session expired", registry.ErrWatchLost))
					return
				}
				backoff = min(2*backoff, time.Second)
			}
		}
	}
}

// errStopped means the consumer went away (ctx ended) while we sent.
var errStopped = errors.New("watch stopped")

func transient(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionMoved)
}

// end sends the final event, unless ctx already ended.
func (w *watch) end(err error) {
	if w.ctx.Err() != nil {
		return
	}
	ev := registry.Event{Err: &registry.OpError{Op: "watch", Key: w.key, Err: err}}
	select {
	case w.out <- ev:
	case <-w.ctx.Done():
	}
}

func (w *watch) send(ev registry.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// handle re-reads the znode of a fired watch and re-arms it. When the
// prefix's znode is gone, it arms the exists watch again.
func (w *watch) handle(n note) error {
	if err := w.handleNode(n); err != nil {
		return err
	}
	if w.nodes[w.root] == nil && w.rootArm == 0 {
		return w.loadRoot()
	}
	return nil
}

// syncHints runs when the recursive watch reported changes (hints, in
// zxid order). Its session may be on another server than the Repo's
// connection, which may not have applied them yet. So the Repo's
// connection syncs first: from then on every read on it sees them (reads
// on one connection never go back in time), and every watch fired on it
// before is queued (the server sends a sync's answer after the
// notifications of what it applied before). The hints are then queued
// again, after those fired watches, and handleHints reads them in their
// turn. Without the sync a hinted znode could read as missing and be
// dropped, and one skipped as tracked, or under an untracked parent,
// could be missed by a later read of an older state (the tracked one read
// as deleted, the parent listed without it).
func (w *watch) syncHints(hints []note) error {
	if _, err := w.conn.Sync(w.root); err != nil && !errors.Is(err, zk.ErrNoNode) {
		w.hintsLost(hints)
		return err
	}
	w.queue.push(note{synced: hints})
	return nil
}

// hintsLost marks the znodes of hints and their parents as not read, so
// that resync reads them.
func (w *watch) hintsLost(hints []note) {
	for _, h := range hints {
		if nd := w.nodes[h.path]; nd != nil && nd.dataArm == covered {
			nd.dataArm = 0
		}
		if nd := w.nodes[parentOf(h.path)]; nd != nil && nd.childArm == covered {
			nd.childArm = 0
		}
	}
}

// handleHints applies the changes the recursive watch reported (synced
// by syncHints), in their order, as fired watches would be: a tracked
// znode changed or deleted is read again (loadNode), consecutive creations
// are loaded together (loadCreated). If reading fails, the znodes and
// their parents count as not read, so resync reads them.
func (w *watch) handleHints(hints []note) error {
	if err := w.handleHintsOnce(hints); err != nil {
		w.hintsLost(hints)
		return err
	}
	if w.nodes[w.root] == nil && w.rootArm == 0 {
		return w.loadRoot()
	}
	return nil
}

func (w *watch) handleHintsOnce(hints []note) error {
	for i := 0; i < len(hints); {
		if hints[i].ev.Type != zk.EventNodeCreated {
			if nd := w.nodes[hints[i].path]; nd != nil {
				nd.dataArm = 0
				if err := w.loadNode(hints[i].path); err != nil {
					return err
				}
			}
			i++
			continue
		}
		var paths []string
		for ; i < len(hints) && hints[i].ev.Type == zk.EventNodeCreated; i++ {
			paths = append(paths, hints[i].path)
		}
		if err := w.loadCreated(paths); err != nil {
			return err
		}
	}
	return nil
}

// loadCreated loads the znodes created (paths) that are new to the watch:
// those whose parent is tracked and that are not. The others need nothing:
// a tracked path created again was deleted first, which the watch reported
// before (loadNode finds the new incarnation); an untracked parent is
// loaded with its children, if it exists, by whatever tracks it later,
// reading them after the sync. Each parent of a new znode is checked to
// be the incarnation tracked; one created again is loaded anew with its
// children (as loadChildren does).
func (w *watch) loadCreated(paths []string) error {
	var parents []string
	seen := map[string]bool{}
	for _, p := range paths {
		if !strings.HasPrefix(p, w.root+"/") || w.nodes[p] != nil {
			continue
		}
		if parent := parentOf(p); w.nodes[parent] != nil && !seen[parent] {
			seen[parent] = true
			parents = append(parents, parent)
		}
	}
	if len(parents) == 0 {
		return nil
	}
	slices.Sort(parents)
	stats := make([]*zk.Stat, len(parents))
	err := pipeline(w.ctx, len(parents), func(i int) error {
		ok, stat, err := w.conn.Exists(parents[i])
		if ok {
			stats[i] = stat
		}
		return err
	})
	if err != nil {
		return err
	}
	for i, p := range parents {
		nd := w.nodes[p]
		switch {
		case nd == nil:
			// Removed with a parent replaced before it.
		case stats[i] == nil:
			if err := w.removed(p); err != nil {
				return err
			}
		case stats[i].Czxid != nd.czxid:
			if done, err := w.parentReplaced(p); done || err != nil {
				if err != nil {
					return err
				}
				continue
			}
			if err := w.removed(p); err != nil {
				return err
			}
			if err := w.loadNode(p); err != nil {
				return err
			}
		}
	}
	var fresh []string
	for _, p := range paths {
		if strings.HasPrefix(p, w.root+"/") && w.nodes[p] == nil && w.nodes[parentOf(p)] != nil && !slices.Contains(fresh, p) {
			fresh = append(fresh, p)
		}
	}
	return w.loadNew(fresh)
}

// fallBack runs when the recursive watch failed: hints of new znodes may
// have been lost since its last one. Until it is registered again
// (restartRecursive, tried after a wait) the watch arms a child watch on
// every znode, as without one: every tracked znode counts as not listed,
// and resync lists each, arming its child watch, so a znode created at
// any time since is found by that listing or that watch.
func (w *watch) fallBack(cause error) error {
	logger{w.r.cfg.Logger}.Printf("watch %s: following new znodes with child watches: %v", w.key, cause)
	w.closeRecursive()
	if w.retry == nil {
		w.retryLater()
	}
	for _, nd := range w.nodes {
		if nd.dataArm == covered {
			nd.dataArm = 0
		}
		if nd.childArm == covered {
			nd.childArm = 0
		}
	}
	return w.resync()
}

// resync runs after handling a fired watch failed: it reads again every
// tracked znode whose data or child watch is not armed (parents first), and
// the prefix's znode when it is neither tracked nor watched.
func (w *watch) resync() error {
	var behind []string
	for p, nd := range w.nodes {
		if nd.dataArm == 0 || nd.childArm == 0 {
			behind = append(behind, p)
		}
	}
	slices.Sort(behind)
	w.readAheadOf(behind)
	defer func() { w.ahead = nil }()
	for _, p := range behind {
		if w.nodes[p] == nil {
			continue // removed while an earlier one was read
		}
		if err := w.loadNode(p); err != nil {
			return err
		}
	}
	if w.nodes[w.root] == nil && w.rootArm == 0 {
		return w.loadRoot()
	}
	return nil
}

// readAheadOf reads paths ahead into w.ahead with multiRead (fetchMany),
// with the recursive watch (which reports every change after these
// reads, so they need arm no watch) and bulkMin paths or more: resync then
// costs a few requests instead of a round trip per znode. A znode not read
// whole (gone, replaced, or any failure) is read again by itself.
func (w *watch) readAheadOf(paths []string) {
	if w.rec == nil || len(paths) < bulkMin || w.r.noMultiRead.Load() {
		return
	}
	res := make([]fetched, len(paths))
	if err := w.fetchMany(paths, res); err != nil {
		if errors.Is(err, errMultiRead) {
			w.r.multiReadFailed("watch "+w.key, err)
		}
		return
	}
	w.ahead = make(map[string]*readAhead, len(paths))
	for i, p := range paths {
		if res[i].state == fetchOK {
			w.ahead[p] = &readAhead{fetched: res[i]}
		}
	}
}

// readData is getW of p, or what resync read of p ahead.
func (w *watch) readData(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if a := w.ahead[p]; a != nil && !a.dataTaken {
		a.dataTaken = true
		return a.data, a.stat, nil, nil
	}
	return w.getW(p)
}

// readChildren is children of p, or what resync read of p ahead (with
// the Stat of its data: the same incarnation, see fetchMany).
func (w *watch) readChildren(p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if a := w.ahead[p]; a != nil && !a.childrenTaken {
		a.childrenTaken = true
		return a.names, a.stat, nil, nil
	}
	return w.children(p)
}

// handleNode handles a fired watch by its kind. A znode's data watch fires
// on a change of its data and on its deletion, its child watch on a change
// of its children and on its deletion; a fired watch of a kind not armed
// on the znode is stale (the znode was or is being read again) and
// ignored. The ZooKeeper session holds one watch of a kind per znode,
// whoever armed it, so an event may also be one armed before this watch's
// last read: reading again is then merely redundant.
func (w *watch) handleNode(n note) error {
	if n.path == w.root && w.rootArm != 0 && w.nodes[w.root] == nil {
		w.rootArm = 0
		return w.loadRoot()
	}
	nd, ok := w.nodes[n.path]
	if !ok {
		return nil // no longer tracked
	}
	switch n.ev.Type {
	case zk.EventNodeChildrenChanged:
		if nd.childArm == 0 || nd.childArm == covered {
			return nil
		}
		nd.childArm = 0
		return w.loadChildren(n.path)
	case zk.EventNodeDataChanged:
		if nd.dataArm == 0 || nd.dataArm == covered {
			return nil
		}
		nd.dataArm = 0
		return w.loadNode(n.path)
	case zk.EventNodeDeleted:
		if (nd.dataArm == 0 || nd.dataArm == covered) && (nd.childArm == 0 || nd.childArm == covered) {
			return nil
		}
		nd.dataArm, nd.childArm = 0, 0
		return w.loadNode(n.path)
	}
	return nil
}

// loadRoot loads the prefix's znode, or arms an exists watch while it is
// missing.
func (w *watch) loadRoot() error {
	for {
		if _, ok := w.nodes[w.root]; ok {
			return nil
		}
		ok, _, ch, err := w.conn.ExistsW(w.root)
		if err != nil {
			return err
		}
		arm := w.forward(w.root, ch)
		if !ok {
			w.rootArm = arm
			return nil
		}
		if err := w.loadNode(w.root); err != nil {
			return err
		}
		if _, ok := w.nodes[w.root]; ok {
			return nil
		}
		// Deleted again before we read it: wait for the next create.
	}
}

// loadNode reads p's data (arming a data watch if none is armed) and
// reports a put when p is new or changed. A new incarnation of p (deleted
// and created again) first removes the old one. It then loads p's children.
// An untracked p is loaded with its whole subtree by loadNew.
func (w *watch) loadNode(p string) error {
	nd := w.nodes[p]
	if nd == nil {
		return w.loadNew([]string{p})
	}
	if nd.dataArm != 0 {
		// A data watch is armed: only the children can be behind.
		if nd.childArm == 0 {
			return w.loadChildren(p)
		}
		return nil
	}
	data, stat, ch, err := w.readData(p)
	if errors.Is(err, zk.ErrNoNode) {
		return w.removed(p)
	}
	if err != nil {
		return err
	}
	arm := w.armToken(p, ch)
	if nd.czxid != stat.Czxid {
		if done, err := w.parentReplaced(p); done || err != nil {
			return err
		}
		if err := w.removed(p); err != nil {
			return err
		}
		nd = &wnode{czxid: stat.Czxid}
		w.put(p, nd)
	}
	nd.dataArm = arm
	if nd.mzxid != stat.Mzxid {
		nd.mzxid = stat.Mzxid
		if !w.emitPut(p, data, stat) {
			return errStopped
		}
	}
	if nd.childArm == 0 {
		return w.loadChildren(p)
	}
	return nil
}

func (w *watch) emitPut(p string, data []byte, stat *zk.Stat) bool {
	key := w.r.key(p)
	if key == "/" {
		return true
	}
	return w.emit(registry.Event{Type: registry.EventPut, KV: registry.KV{Key: key, Value: data, Version: registry.Version(stat.Mzxid)}})
}

// loadChildren lists p's children (arming a child watch) and loads the new
// ones. If loading them fails, p's child watch counts as not armed, so that
// resync lists them again.
func (w *watch) loadChildren(p string) error {
	nd := w.nodes[p]
	if nd == nil {
		return nil
	}
	names, stat, ch, err := w.readChildren(p)
	if errors.Is(err, zk.ErrNoNode) {
		return w.removed(p)
	}
	if err != nil {
		return err
	}
	arm := w.armToken(p, ch)
	if stat.Czxid != nd.czxid {
		// A new incarnation: start over with it.
		if done, err := w.parentReplaced(p); done || err != nil {
			return err
		}
		if err := w.removed(p); err != nil {
			return err
		}
		return w.loadNode(p)
	}
	var fresh []string
	// The children's paths in one buffer: looking each up allocates
	// nothing, and a parent of 10,000 children is listed at each change
	// of them.
	buf := append(make([]byte, 0, len(p)+64), p...)
	buf = append(buf, '/')
	for _, n := range names {
		if c := append(buf, n...); w.nodes[string(c)] == nil {
			fresh = append(fresh, string(c))
		}
	}
	if err := w.loadNew(fresh); err != nil {
		nd.childArm = 0
		return err
	}
	nd.childArm = arm
	return nil
}

// fetched is what loadNew read of one znode: its data and children, each
// with the channel of the watch the read armed.
type fetched struct {
	data    []byte
	stat    *zk.Stat
	dataCh  <-chan zk.Event
	names   []string
	childCh <-chan zk.Event
	state   fetchState
}

type fetchState uint8

const (
	fetchOK       fetchState = iota
	fetchGone                // deleted before it was read
	fetchReplaced            // deleted and created again between the two reads
)

// loadNew loads the untracked znodes roots with their subtrees: it reads
// them (fetchTree), then tracks and reports them in the order a depth-first
// walk by name would, parents before children. A znode gone before it was
// read is skipped (it is not tracked, so nothing is removed); one replaced
// between its two reads is loaded again by itself. When a read fails
// nothing more is tracked or reported.
func (w *watch) loadNew(roots []string) error {
	got := map[string]*fetched{}
	if err := w.fetchTree(roots, got); err != nil {
		return err
	}
	sorted := slices.Clone(roots)
	slices.Sort(sorted)
	for _, p := range sorted {
		if err := w.track(p, got); err != nil {
			return err
		}
	}
	return nil
}

// fetchTree reads roots and their subtrees into got, level by level, with
// a window of reads in flight (each znode's data, then its children,
// arming both watches), or, with the recursive watch, each level of
// bulkMin znodes or more with multiRead on its session (fetchMany).
func (w *watch) fetchTree(roots []string, got map[string]*fetched) error {
	level := roots
	for len(level) > 0 {
		res := make([]fetched, len(level))
		err := errMultiRead
		if w.rec != nil && len(level) >= bulkMin && !w.r.noMultiRead.Load() {
			if err = w.fetchMany(level, res); errors.Is(err, errMultiRead) {
				w.r.multiReadFailed("watch "+w.key, err)
			}
		}
		if errors.Is(err, errMultiRead) {
			err = pipeline(w.ctx, len(level), func(i int) (err error) {
				res[i], err = w.fetch(level[i])
				return err
			})
		}
		if err != nil {
			return err
		}
		var next []string
		for i, p := range level {
			got[p] = &res[i]
			if res[i].state == fetchOK {
				for _, n := range res[i].names {
					next = append(next, p+"/"+n)
				}
			}
		}
		level = next
	}
	return nil
}

// fetch reads p's data and its children at once (two requests in flight,
// so a single new znode costs one round trip), arming both watches.
func (w *watch) fetch(p string) (fetched, error) {
	var (
		names   []string
		cstat   *zk.Stat
		childCh <-chan zk.Event
		cerr    error
		listed  = make(chan struct{})
	)
	go func() {
		defer close(listed)
		names, cstat, childCh, cerr = w.children(p)
	}()
	data, stat, dataCh, err := w.getW(p)
	<-listed
	switch {
	case errors.Is(err, zk.ErrNoNode), errors.Is(cerr, zk.ErrNoNode):
		return fetched{state: fetchGone}, nil
	case err != nil:
		return fetched{}, err
	case cerr != nil:
		return fetched{}, cerr
	case cstat.Czxid != stat.Czxid:
		return fetched{state: fetchReplaced}, nil
	}
	slices.Sort(names)
	return fetched{data: data, stat: stat, dataCh: dataCh, names: names, childCh: childCh}, nil
}

// fetchMany is fetch of each of paths into res, with the recursive watch
// (which reports every change after these reads, so they arm no watch):
// multiRead requests on its session read the data of each, then the
// children of those that have any, each with its data again, so that a
// znode replaced between the two is found (fetchReplaced). A znode read
// with null data is fetched by itself (which rewrites it). A failure of a
// multiRead request as a whole wraps errMultiRead.
func (w *watch) fetchMany(paths []string, res []fetched) error {
	data, err := multiRead(w.ctx, w.rec.s, readsOf(opGetData, paths))
	if err != nil {
		return err
	}
	var parents []readOp
	var at []int
	for i, x := range data {
		switch {
		case errors.Is(x.err, zk.ErrNoNode):
			res[i] = fetched{state: fetchGone}
			continue
		case x.err != nil:
			return x.err
		case x.value == nil:
			if res[i], err = w.fetch(paths[i]); err != nil {
				return err
			}
			continue
		}
		res[i] = fetched{data: x.value, stat: &x.stat}
		if x.stat.NumChildren > 0 {
			parents = append(parents, readOp{opGetChildren, paths[i]}, readOp{opGetData, paths[i]})
			at = append(at, i)
		}
	}
	if len(parents) == 0 {
		return nil
	}
	kids, err := multiRead(w.ctx, w.rec.s, parents)
	if err != nil {
		return err
	}
	for j, i := range at {
		c, d := kids[2*j], kids[2*j+1]
		switch {
		case errors.Is(c.err, zk.ErrNoNode), errors.Is(d.err, zk.ErrNoNode):
			res[i] = fetched{state: fetchGone}
		case c.err != nil:
			return c.err
		case d.err != nil:
			return d.err
		case d.stat.Czxid != res[i].stat.Czxid:
			res[i] = fetched{state: fetchReplaced}
		default:
			slices.Sort(c.children)
			res[i].names = c.children
		}
	}
	return nil
}

// getW reads p's data arming a data watch. Null data is rewritten as empty
// first (see the package doc): the set fires the watch just armed, so p is
// read again with a new one, and the value reported is the one written.
//
// With the recursive watch, which reports every change, it arms none (the
// channel is nil).
func (w *watch) getW(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	get := w.conn.GetW
	if w.rec != nil {
		get = func(p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
			value, stat, err := w.conn.Get(p)
			return value, stat, nil, err
		}
	}
	value, stat, ch, err := get(p)
	if err != nil || value != nil {
		return value, stat, ch, err
	}
	if _, st := repair(w.conn, p, stat); st != stat {
		value, stat, ch, err = get(p)
	}
	if err == nil && value == nil {
		value = []byte{}
	}
	return value, stat, ch, err
}

// track records the fetched znode p and its fetched subtree, reporting
// each. A znode whose watch fired since it was read is read again first,
// so that no value already known to be old is reported.
func (w *watch) track(p string, got map[string]*fetched) error {
	f := got[p]
	if f == nil {
		return w.loadNew([]string{p})
	}
	if f.state == fetchOK && (fired(f.dataCh) || fired(f.childCh)) {
		again, err := w.fetch(p)
		if err != nil {
			return err
		}
		f = &again
		got[p] = f
		// Children listed now that were not read, or not whole, are read
		// again together.
		var redo []string
		for _, n := range f.names {
			if g := got[p+"/"+n]; g == nil || g.state != fetchOK {
				redo = append(redo, p+"/"+n)
			}
		}
		if err := w.fetchTree(redo, got); err != nil {
			return err
		}
	}
	switch f.state {
	case fetchGone:
		return nil
	case fetchReplaced:
		return w.loadNew([]string{p})
	}
	w.put(p, &wnode{czxid: f.stat.Czxid, mzxid: f.stat.Mzxid,
		dataArm: w.armToken(p, f.dataCh), childArm: w.armToken(p, f.childCh)})
	if !w.emitPut(p, f.data, f.stat) {
		return errStopped
	}
	for _, n := range f.names {
		if err := w.track(p+"/"+n, got); err != nil {
			w.nodes[p].childArm = 0 // its children are not all tracked
			return err
		}
	}
	return nil
}

// fired reports whether the one-shot watch ch has fired, consuming its
// event.
func fired(ch <-chan zk.Event) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// parentReplaced runs when the tracked znode p was found replaced (deleted
// and created again). The fired watches of one change are handled in no
// particular order, so p's parent may have been replaced too, with p's
// siblings, whose old values are still reported: reporting p's new
// incarnation now would show a state of the tree that never was (a key of
// the new subtree beside keys only the old one had; a ShardingSphere
// active_version beside the version node of the same number that a
// deleted incarnation wrote). So the parent is read: when its incarnation
// changed too (recursively upwards, up to the prefix's znode), everything
// tracked under it is reported deleted and it is loaded again, p with it,
// and parentReplaced reports true; otherwise it reports false and p
// alone is replaced.
func (w *watch) parentReplaced(p string) (bool, error) {
	if p == w.root {
		return false, nil
	}
	parent := p[:strings.LastIndex(p, "/")]
	pn := w.nodes[parent]
	if pn == nil {
		return false, nil
	}
	ok, stat, err := w.conn.Exists(parent)
	if err != nil {
		return false, err
	}
	if ok && stat.Czxid == pn.czxid {
		return false, nil
	}
	if done, err := w.parentReplaced(parent); done || err != nil {
		return done, err
	}
	if err := w.removed(parent); err != nil {
		return false, err
	}
	if ok {
		// Tracked with no watch armed: if loading fails, resync loads it.
		w.put(parent, &wnode{czxid: stat.Czxid})
		if err := w.loadNode(parent); err != nil {
			return true, err
		}
	}
	return true, nil
}

// removed forgets p and everything tracked below it, reporting deletes
// (deepest first).
func (w *watch) removed(p string) error {
	if _, ok := w.nodes[p]; ok {
		gone := w.subtree(p, nil)
		slices.SortFunc(gone, func(a, b string) int { return strings.Compare(b, a) })
		for _, q := range gone {
			w.forget(q)
			if key := w.r.key(q); key != "/" {
				if !w.emit(registry.Event{Type: registry.EventDelete, KV: registry.KV{Key: key}}) {
					return errStopped
				}
			}
		}
	}
	return nil
}
