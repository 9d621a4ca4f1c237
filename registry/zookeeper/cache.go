package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// maxCached bounds the znodes a Repo's listCache holds (its max, which
// tests lower). Past it, List reads the znodes it has not cached from the
// server each time, arming no watch for them.
const maxCached = 1 << 18

// listCache keeps what List read of each znode below the prefixes it
// listed: the data and Mzxid, valid while the data watch armed by that
// read has not fired, and the children, valid while the child watch armed
// by their read has not fired. The Repo's event callback, which the client
// runs on its receive loop in order with the answers, invalidates an entry
// when a watch on it fires, and clears the cache when the connection loses
// its session or is disconnected. So once the answer to a request sent
// after a change has arrived on the connection (List sends a sync first),
// no entry shows a value older than that change.
//
// A read that was in flight when a watch on its znode fired is not
// stored: each entry counts the events seen (gen), and a read is stored
// only if the count did not move since it was sent.
//
// It also holds the memos of the last ListChanged walk of up to maxMemos
// prefixes (see memo): event adds the path of each fired watch to the
// dirty set of every memo whose prefix is at or above it and that follows
// the cache's watches (a recursive memo's dirty set is filled by its
// recursive watch: changed), and drops every memo when it clears the
// cache. Safe for concurrent use; event never
// blocks on I/O.
type listCache struct {
	mu     sync.Mutex
	nodes  map[string]*cnode // by full znode path
	listed map[string]bool   // prefixes listed, up to maxPrefixes
	memos  map[string]*memo  // by the prefix's znode path, up to maxMemos
	max    int               // znodes held at most: maxCached
}

// maxPrefixes bounds the prefixes a listCache remembers having listed;
// past it, it forgets them all.
const maxPrefixes = 4096

// cnode is what is cached of one znode.
type cnode struct {
	value    []byte
	mzxid    int64
	children []string
	pzxid    int64 // the Pzxid read with the children
	dataOK   bool  // value and mzxid are current
	childOK  bool  // children and pzxid are current
	dataGen  uint64
	childGen uint64
}

func newListCache() *listCache {
	return &listCache{nodes: map[string]*cnode{}, listed: map[string]bool{}, memos: map[string]*memo{}, max: maxCached}
}

// again reports whether prefix was listed before, and remembers that it
// is listed now. A prefix listed once (a node loading a whole tree at
// startup) is read without the cache: its watches and its copy of the
// data would cost more than they save. One listed again (the rules a
// statement reads before and after each change) is cached from then on.
func (c *listCache) again(prefix string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listed[prefix] {
		return true
	}
	if len(c.listed) >= maxPrefixes {
		c.listed = map[string]bool{}
	}
	c.listed[prefix] = true
	return false
}

// event applies one client event: a fired watch invalidates what it
// watched and dirties the memos at or above it; a lost or interrupted
// session drops every entry and every memo.
func (c *listCache) event(ev zk.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Type == zk.EventSession {
		if ev.State != zk.StateHasSession {
			if len(c.nodes) > 0 {
				c.nodes = map[string]*cnode{}
			}
			for _, m := range c.memos {
				c.dropLocked(m)
			}
		}
		return
	}
	c.dirty(ev.Path, watchFiredOf(ev.Type))
	n := c.nodes[ev.Path]
	if n == nil {
		return
	}
	switch ev.Type {
	case zk.EventNodeDataChanged:
		n.dataOK = false
		n.dataGen++
	case zk.EventNodeChildrenChanged:
		n.childOK = false
		n.childGen++
	default: // deleted, not watching any more, or an event we do not know
		n.dataOK, n.childOK = false, false
		n.dataGen++
		n.childGen++
		delete(c.nodes, ev.Path)
	}
}

// lookup returns what is cached of p: its data (ok) and its children
// (childOK; nil children when the znode has none).
func (c *listCache) lookup(p string) (l listed, ok, childOK bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[p]
	if n == nil {
		return listed{}, false, false
	}
	return listed{value: n.value, mzxid: n.mzxid, children: n.children, pzxid: n.pzxid}, n.dataOK, n.childOK
}

// hits fills got[i] for each of paths whose data (unless wantData is
// false) and children are cached, and returns the indexes of the others.
func (c *listCache) hits(paths []string, wantData bool, got []listed) (miss []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range paths {
		n := c.nodes[p]
		if n == nil || !n.childOK || (wantData && !n.dataOK) {
			miss = append(miss, i)
			continue
		}
		got[i] = listed{value: n.value, mzxid: n.mzxid, children: n.children, pzxid: n.pzxid}
	}
	return miss
}

// entry returns p's entry, creating it while the cache has room, and the
// event counts a read sent now must find unchanged to be stored. A nil
// entry means the cache is full: read p without arming a watch.
func (c *listCache) entry(p string) (n *cnode, dataGen, childGen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n = c.nodes[p]
	if n == nil {
		if len(c.nodes) >= c.max {
			return nil, 0, 0
		}
		n = &cnode{}
		c.nodes[p] = n
	}
	return n, n.dataGen, n.childGen
}

// storeData records p's data read while n's data event count was gen.
func (c *listCache) storeData(p string, n *cnode, gen uint64, value []byte, mzxid int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes[p] == n && n.dataGen == gen {
		n.value, n.mzxid, n.dataOK = value, mzxid, true
	}
}

// storeChildren records p's children (and Pzxid) read while n's child
// event count was gen.
func (c *listCache) storeChildren(p string, n *cnode, gen uint64, children []string, pzxid int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes[p] == n && n.childGen == gen {
		n.children, n.pzxid, n.childOK = children, pzxid, true
	}
}

// forget drops p's entry if it is still n (p was found missing).
func (c *listCache) forget(p string, n *cnode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes[p] == n {
		delete(c.nodes, p)
	}
}

// memo returns the memo of the prefix whose znode is root, registering a
// new (not built) one when there is none, forgetting another memo when
// maxMemos are held.
func (c *listCache) memo(root string) *memo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.memos[root]; m != nil {
		return m
	}
	if len(c.memos) >= maxMemos {
		for _, m := range c.memos {
			c.dropLocked(m)
			break
		}
	}
	m := newMemo(root)
	c.memos[root] = m
	return m
}

// take returns the paths whose watches fired since m's last take and
// empties m's dirty set; ok is false when m was dropped.
func (c *listCache) take(m *memo) (dirty []string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.dropped {
		return nil, false
	}
	for p := range m.dirty {
		dirty = append(dirty, p)
	}
	clear(m.dirty)
	return dirty, true
}

// drop forgets m: it is not followed any more.
func (c *listCache) drop(m *memo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(m)
}

func (c *listCache) dropLocked(m *memo) {
	m.dropped = true
	m.dirty = nil
	if c.memos[m.root] == m {
		delete(c.memos, m.root)
	}
	if m.sub != nil {
		// Not here: closing takes the recursive session's locks, which
		// its reader holds while it waits for c.mu (changed).
		go m.sub.close()
		m.sub = nil
	}
}

// changed adds p, which the recursive watch of m saw created, written or
// deleted, to m's dirty set (dropping m when that outgrows the cache).
func (c *listCache) changed(m *memo, p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case m.dropped:
	case len(m.dirty) >= c.max:
		c.dropLocked(m)
	default:
		m.dirty[p] |= firedOther
	}
}

// failed drops m, whose recursive watch rec failed: changes may have gone
// untold since.
func (c *listCache) failed(m *memo, rec *recursiveWatch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.sub == rec {
		c.dropLocked(m)
	}
}

// syncRecursive syncs the recursive session of m (see
// recursiveSession.sync) and returns the zxid of its answer. It fails
// when m was dropped or the session fails. m.mu is held.
func (c *listCache) syncRecursive(ctx context.Context, m *memo) (int64, error) {
	c.mu.Lock()
	rec := m.sub
	c.mu.Unlock()
	if rec == nil {
		return 0, errNoRecursiveWatch
	}
	zxid, err := rec.s.sync(ctx)
	if err != nil {
		return 0, fmt.Errorf("%w: sync: %w", errNoRecursiveWatch, err)
	}
	return zxid, nil
}

// dirty adds p, with what fired on it, to the dirty set of each memo at
// or above it that follows the cache's watches (a recursive memo learns
// of every change from its recursive watch). A memo whose dirty set
// outgrows the cache is dropped.
func (c *listCache) dirty(p string, f watchFired) {
	if len(c.memos) == 0 {
		return
	}
	for q := p; ; {
		if m := c.memos[q]; m != nil && !m.recursive {
			if len(m.dirty) >= c.max {
				c.dropLocked(m)
			} else {
				m.dirty[p] |= f
			}
		}
		i := strings.LastIndexByte(q, '/')
		switch {
		case q == "/" || i < 0:
			return
		case i == 0:
			q = "/"
		default:
			q = q[:i]
		}
	}
}

// listed is what List learnt of one znode.
type listed struct {
	value     []byte
	mzxid     int64
	children  []string
	pzxid     int64 // the Pzxid read with the children (that of the data read when it has none)
	gone      bool  // it does not exist (any more)
	unwatched bool  // read without arming watches: the cache was full
}

// read returns p's data (unless wantData is false) and its children, from
// the cache where it holds them, otherwise from the server, arming the
// watches that keep the cache current (two requests in flight at once).
// A null value is rewritten as empty (see the package doc).
func (r *Repo) read(p string, wantData bool) (listed, error) {
	cached, dataOK, childOK := r.cache.lookup(p)
	if (dataOK || !wantData) && childOK {
		return cached, nil
	}
	n, dataGen, childGen := r.cache.entry(p)
	if n == nil {
		l, err := r.readUncached(p, wantData)
		l.unwatched = true
		return l, err
	}
	var (
		names []string
		pzxid int64
		cerr  error
		read  = make(chan struct{}) // closed when the children are read
	)
	if !childOK {
		go func() {
			defer close(read)
			var stat *zk.Stat
			if names, stat, _, cerr = r.conn.ChildrenW(p); cerr == nil {
				pzxid = stat.Pzxid
			}
		}()
	} else {
		names, pzxid = cached.children, cached.pzxid
		close(read)
	}
	value, mzxid := cached.value, cached.mzxid
	var err error
	if wantData && !dataOK {
		var stat *zk.Stat
		value, stat, _, err = r.conn.GetW(p)
		if err == nil {
			mzxid = stat.Mzxid
			if value == nil {
				// The set fires the watch just armed: nothing is stored.
				value, stat = repair(r.conn, p, stat)
				mzxid = stat.Mzxid
			}
			r.cache.storeData(p, n, dataGen, value, mzxid)
		}
	}
	<-read
	switch {
	case errors.Is(err, zk.ErrNoNode), errors.Is(cerr, zk.ErrNoNode):
		r.cache.forget(p, n)
		return listedGone, nil
	case err != nil:
		return listedGone, err
	case cerr != nil:
		return listedGone, cerr
	}
	if !childOK {
		slices.Sort(names)
		r.cache.storeChildren(p, n, childGen, names, pzxid)
	}
	return listed{value: value, mzxid: mzxid, children: names, pzxid: pzxid}, nil
}

var listedGone = listed{gone: true}

// readUncached is read without the cache and without watches: the data,
// then the children when the znode has any.
func (r *Repo) readUncached(p string, wantData bool) (listed, error) {
	var (
		value []byte
		mzxid int64
	)
	if wantData {
		v, stat, err := r.conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return listedGone, nil
		}
		if err != nil {
			return listedGone, err
		}
		if v == nil {
			v, stat = repair(r.conn, p, stat)
		}
		value, mzxid = v, stat.Mzxid
		if stat.NumChildren == 0 {
			return listed{value: value, mzxid: mzxid, pzxid: stat.Pzxid}, nil
		}
	}
	names, stat, err := r.conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return listedGone, nil
	}
	if err != nil {
		return listedGone, err
	}
	slices.Sort(names)
	return listed{value: value, mzxid: mzxid, children: names, pzxid: stat.Pzxid}, nil
}
