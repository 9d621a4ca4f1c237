package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Watch implements registry.Repository. ZooKeeper has one-shot watches
// only, so this keeps a data watch and a child watch armed on every znode at
// or under prefix (an exists watch on prefix while it is missing) and
// re-arms each after it fires, like Curator's TreeCache. Every event is
// re-read from the server, so the Event carries the current value and
// Version, events for one key arrive in order, and changes between two reads
// are coalesced.
//
// Parent znodes are keys with empty values: the initial snapshot holds every
// znode at or under prefix (except the namespace root itself), and creating
// "/a/b/c" under a watched "/a" reports "/a/b" (empty) before "/a/b/c".
//
// When the Repo's session expires (or the Repo is closed), the last event
// has Err wrapping registry.ErrWatchLost. A disconnection that keeps the
// session does not end the watch: the client re-registers the watches.
// Cost: two armed client watches and two parked goroutines per znode under
// prefix, so watch the subtrees you need rather than "/". The client cannot
// remove a watch from the server; after ctx ends each armed watch stays
// registered until its znode next changes.
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
		in:    make(chan note, 16),
		quit:  make(chan struct{}),
		out:   make(chan registry.Event),
		nodes: map[string]*wnode{},
	}
	var initial []registry.KV
	w.emit = func(ev registry.Event) bool { initial = append(initial, ev.KV); return true }
	if err := w.loadRoot(); err != nil {
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

	in   chan note     // fired client watches, from forward
	quit chan struct{} // closed when run ends: forwarders give up
	out  chan registry.Event
	emit func(registry.Event) bool

	nodes   map[string]*wnode // tracked znodes at or under root
	rootArm uint64            // exists watch on root while it is missing
	nextArm uint64
}

// wnode is what is known about one tracked znode. dataArm and childArm name
// the watches currently armed on it; a fired watch with another number is
// stale and ignored.
type wnode struct {
	czxid, mzxid      int64
	dataArm, childArm uint64
}

// note is one fired client watch.
type note struct {
	path string
	arm  uint64
	ev   zk.Event
}

// forward hands the single event of a client watch channel to run.
func (w *watch) forward(path string, ch <-chan zk.Event) uint64 {
	w.nextArm++
	arm := w.nextArm
	go func() {
		select {
		case ev, ok := <-ch:
			if !ok {
				ev = zk.Event{Type: zk.EventNotWatching, Path: path, Err: zk.ErrClosing}
			}
			select {
			case w.in <- note{path: path, arm: arm, ev: ev}:
			case <-w.quit:
			}
		case <-w.quit:
		}
	}()
	return arm
}

func (w *watch) run() {
	defer close(w.out)
	defer close(w.quit)
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
		case n := <-w.in:
			if n.ev.Type == zk.EventNotWatching || n.ev.Err != nil {
				w.end(fmt.Errorf("%w: %w", registry.ErrWatchLost, n.ev.Err))
				return
			}
			for {
				err := w.handle(n)
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

func (w *watch) handleNode(n note) error {
	if n.path == w.root && n.arm == w.rootArm {
		w.rootArm = 0
		return w.loadRoot()
	}
	nd, ok := w.nodes[n.path]
	if !ok {
		return nil // no longer tracked
	}
	switch {
	case n.arm == nd.childArm && n.ev.Type == zk.EventNodeChildrenChanged:
		nd.childArm = 0
		return w.loadChildren(n.path)
	case n.arm == nd.dataArm || n.arm == nd.childArm:
		if n.arm == nd.dataArm {
			nd.dataArm = 0
		} else {
			nd.childArm = 0
		}
		return w.loadNode(n.path)
	}
	return nil // stale
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
func (w *watch) loadNode(p string) error {
	nd := w.nodes[p]
	if nd != nil && nd.dataArm != 0 {
		// A data watch is armed: only the children can be behind.
		if nd.childArm == 0 {
			return w.loadChildren(p)
		}
		return nil
	}
	data, stat, ch, err := w.conn.GetW(p)
	if errors.Is(err, zk.ErrNoNode) {
		return w.removed(p)
	}
	if err != nil {
		return err
	}
	arm := w.forward(p, ch)
	if nd != nil && nd.czxid != stat.Czxid {
		if err := w.removed(p); err != nil {
			return err
		}
		nd = nil
	}
	if nd == nil {
		nd = &wnode{czxid: stat.Czxid}
		w.nodes[p] = nd
	}
	nd.dataArm = arm
	if nd.mzxid != stat.Mzxid {
		nd.mzxid = stat.Mzxid
		if key := w.r.key(p); key != "/" {
			if !w.emit(registry.Event{Type: registry.EventPut, KV: registry.KV{Key: key, Value: data, Version: registry.Version(stat.Mzxid)}}) {
				return errStopped
			}
		}
	}
	if nd.childArm == 0 {
		return w.loadChildren(p)
	}
	return nil
}

// loadChildren lists p's children (arming a child watch) and loads the new
// ones.
func (w *watch) loadChildren(p string) error {
	nd := w.nodes[p]
	if nd == nil {
		return nil
	}
	names, stat, ch, err := w.conn.ChildrenW(p)
	if errors.Is(err, zk.ErrNoNode) {
		return w.removed(p)
	}
	if err != nil {
		return err
	}
	arm := w.forward(p, ch)
	if stat.Czxid != nd.czxid {
		// A new incarnation: start over with it.
		if err := w.removed(p); err != nil {
			return err
		}
		return w.loadNode(p)
	}
	nd.childArm = arm
	slices.Sort(names)
	for _, n := range names {
		c := p + "/" + n
		if _, ok := w.nodes[c]; ok {
			continue
		}
		if err := w.loadNode(c); err != nil {
			return err
		}
	}
	return nil
}

// removed forgets p and everything tracked below it, reporting deletes
// (deepest first).
func (w *watch) removed(p string) error {
	if _, ok := w.nodes[p]; ok {
		var gone []string
		for q := range w.nodes {
			if q == p || strings.HasPrefix(q, p+"/") {
				gone = append(gone, q)
			}
		}
		slices.SortFunc(gone, func(a, b string) int { return strings.Compare(b, a) })
		for _, q := range gone {
			delete(w.nodes, q)
			if key := w.r.key(q); key != "/" {
				if !w.emit(registry.Event{Type: registry.EventDelete, KV: registry.KV{Key: key}}) {
					return errStopped
				}
			}
		}
	}
	return nil
}
