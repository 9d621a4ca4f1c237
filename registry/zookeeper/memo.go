package zookeeper

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/registry"
)

// maxMemos bounds the prefixes whose last ListChanged walk a listCache
// memoizes; past it, it forgets one of them.
const maxMemos = 64

// memo is what the last ListChanged of one prefix found below it: each
// znode's value, Mzxid and children, and a log of the znodes by Mzxid, so
// that the next ListChanged re-reads only the znodes that changed since
// (its dirty set) and finds those written after a revision without a pass
// over the rest.
//
// A memo follows its prefix one of two ways, chosen when it is built:
//
//   - With a persistent recursive watch on the prefix, a subscription to
//     the Repo's recursive session (ZooKeeper 3.6+; see recursiveSession),
//     registered before its walk: every creation, change of data and
//     deletion of a znode below the prefix puts that znode's path in the
//     dirty set, by the time the answer to a later sync on that session
//     arrives. Its znodes are read without the cache and without watches,
//     and the memo keeps each znode's children up to date from those
//     paths: a new znode costs reading it (and its subtree), not listing
//     its parent again. It is dropped when the recursive session fails.
//   - Otherwise (a 3.5 server, no recursive session to be had) with the
//     cache's watches: every znode in it was read through the cache with
//     its watches armed (or found in the cache, whose entries are current
//     while their watches have not fired), after the memo was registered,
//     so any change made to one since its read has put its path in the
//     dirty set (listCache.event) by the time the answer to a later sync
//     on the Repo's connection arrives; a new znode fires its parent's
//     child watch, and the parent is listed again. A walk that read a
//     znode without watches (the cache was full) is not kept.
//
// A walk that found no znode at the prefix (nothing would tell of its
// creation) is not kept; nor is a memo whose refresh failed, or any memo
// once the session is lost or interrupted.
type memo struct {
	root string // the prefix's znode path
	// recursive is true when the memo follows the prefix with a recursive
	// watch (sub), from its build on.
	recursive bool
	synced    int64 // the zxid of the last sync on the recursive session

	mu    sync.Mutex        // held by the ListChanged that refreshes it and reads it
	built bool              // nodes and log hold a walk
	nodes map[string]*mnode // every znode found at or below root, by path
	log   []mlog            // an entry per (re)write seen, sorted by mzxid; stale ones are skipped
	seq   uint64            // the last mlog.seq handed out
	rev   int64             // the highest Mzxid ever seen below root
	// listed is how many children the znodes in nodes name, together:
	// len(nodes)-1 when each is in nodes, more when some child was read
	// as gone while its parent still names it (a hole).
	listed int

	// Guarded by the listCache's mu.
	dirty   map[string]watchFired // paths at or below root whose watches fired since the last take
	dropped bool                  // the cache forgot the memo: it follows nothing any more
	sub     *recursiveWatch       // the recursive watch of a recursive memo, until it is dropped
}

// mnode is what a memo holds of one znode. Each znode in it is named in
// its parent's children (the reverse need not hold: a child read as
// gone is left out).
type mnode struct {
	value    []byte   // shared with the cache: copied out
	mzxid    int64    // 0 for the root, whose data is not read
	children []string // names, sorted, as read
	pzxid    int64    // read with the children
	seq      uint64   // of its live log entry
}

// watchFired says which watches fired on a znode (or-ed), and so which of its
// Zxids the writes not read yet are above.
type watchFired uint8

const (
	firedData  watchFired = 1 << iota // its data was set: above its Mzxid
	firedChild                        // a child was created or deleted: above its Pzxid
	firedGone                         // it was deleted: above both
	firedOther                        // another event: above the lower
)

func watchFiredOf(t zk.EventType) watchFired {
	switch t {
	case zk.EventNodeDataChanged:
		return firedData
	case zk.EventNodeChildrenChanged:
		return firedChild
	case zk.EventNodeDeleted:
		return firedGone
	}
	return firedOther
}

// below returns a zxid below every write to n that f tells of (the root's
// data is not read: its writes do not count).
func (n *mnode) below(f watchFired, root bool) int64 {
	b := int64(math.MaxInt64)
	if f&firedData != 0 && !root {
		b = min(b, n.mzxid)
	}
	if f&firedChild != 0 {
		b = min(b, n.pzxid)
	}
	if f&firedGone != 0 {
		b = min(b, max(n.mzxid, n.pzxid))
	}
	if f&firedOther != 0 {
		if root {
			b = min(b, n.pzxid)
		} else {
			b = min(b, n.mzxid, n.pzxid)
		}
	}
	return b
}

// mlog is one entry of a memo's log: path was written at mzxid. It is
// stale once the znode is gone or has a newer entry (seq differs).
type mlog struct {
	mzxid int64
	seq   uint64
	path  string
}

func newMemo(root string) *memo {
	return &memo{root: root, dirty: map[string]watchFired{}}
}

// follow returns the memo of prefix, locked, holding what is below prefix
// now (every change applied before the call began, on any connection):
// built by a walk if there was none, otherwise updated by reading the
// znodes that changed since its last use. A memo that follows the cache's
// watches syncs the Repo's connection before it takes its dirty set (the
// watches fired before the answer are in it); a recursive one syncs its
// recursive session before the take and the Repo's connection after it
// (the recursive session may be on a server ahead of the connection's).
// The caller unlocks it. On error the memo is dropped and nothing is
// returned locked.
func (r *Repo) follow(ctx context.Context, prefix string) (*memo, error) {
	root := r.full(prefix)
	for range 2 {
		m := r.cache.memo(root)
		m.mu.Lock()
		if !m.built && !m.recursive {
			r.subscribe(ctx, m)
		}
		var err error
		if m.recursive {
			if m.synced, err = r.cache.syncRecursive(ctx, m); err != nil {
				if ctx.Err() != nil {
					m.mu.Unlock()
					return nil, ctx.Err()
				}
				// The session failed: the memo is dropped, the next one
				// subscribes again.
				r.cache.drop(m)
				m.mu.Unlock()
				continue
			}
		} else if err = r.sync(prefix); err != nil {
			m.mu.Unlock()
			return nil, err
		}
		dirty, ok := r.cache.take(m)
		if !ok {
			m.mu.Unlock() // dropped while waiting for it (session lost, evicted)
			continue
		}
		if m.recursive {
			err = r.sync(prefix)
		}
		if err == nil {
			err = m.refresh(ctx, r, dirty)
		}
		if err != nil {
			r.cache.drop(m)
			m.mu.Unlock()
			return nil, err
		}
		return m, nil
	}
	m := newMemo(root) // dropped again: walk into one that is not kept
	m.dropped = true
	m.mu.Lock()
	err := r.sync(prefix)
	if err == nil {
		err = m.build(ctx, r)
	}
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	return m, nil
}

// refresh builds m, or updates it with the paths that changed (dirty),
// and compacts its log. m.mu is held.
func (m *memo) refresh(ctx context.Context, r *Repo, dirty []string) error {
	var err error
	switch {
	case !m.built:
		err = m.build(ctx, r)
	case m.recursive:
		err = m.updateRecursive(ctx, r, dirty)
	default:
		err = m.update(ctx, r, dirty)
	}
	if err == nil && len(m.log) > 2*len(m.nodes)+64 {
		m.compact()
	}
	return err
}

// subscribe makes m, registered and not built, follow its prefix with a
// recursive watch, where the server has them and the Repo may use them
// (see SetRecursiveWatch); otherwise m follows the cache's watches. A
// server without addWatch is not asked again. m.mu is held.
func (r *Repo) subscribe(ctx context.Context, m *memo) {
	if r.noRecursive.Load() || r.noAddWatch.Load() {
		return
	}
	c := r.cache
	rec, err := r.openRecursive(ctx, m.root,
		func(p string, _ zk.EventType) { c.changed(m, p) },
		func(rec *recursiveWatch, _ error) { c.failed(m, rec) })
	if err != nil {
		if errors.Is(err, errNoAddWatch) {
			r.noAddWatch.Store(true)
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.dropped {
		go rec.close()
		return
	}
	m.sub, m.recursive = rec, true
}

// build walks the subtree at m.root into m. m.mu is held.
func (m *memo) build(ctx context.Context, r *Repo) error {
	m.nodes, m.log, m.rev, m.listed = map[string]*mnode{}, nil, 0, 0
	unwatched := false
	err := r.descend(ctx, []string{m.root}, false, !m.recursive, func(p string, l *listed) {
		unwatched = unwatched || l.unwatched
		m.add(p, l)
	})
	if err != nil {
		return err
	}
	slices.SortFunc(m.log, func(a, b mlog) int { return cmp.Compare(a.mzxid, b.mzxid) })
	m.built = true
	if unwatched || m.nodes[m.root] == nil {
		r.cache.drop(m)
	}
	return nil
}

// update re-reads the znodes of m whose watches fired (dirty), shallow
// first, drops the subtrees of those gone and of the children removed,
// and walks the subtrees of the children added. m.mu is held.
func (m *memo) update(ctx context.Context, r *Repo, dirty []string) error {
	paths := slices.DeleteFunc(dirty, func(p string) bool { return m.nodes[p] == nil })
	slices.SortFunc(paths, func(a, b string) int {
		return cmp.Or(cmp.Compare(strings.Count(a, "/"), strings.Count(b, "/")), strings.Compare(a, b))
	})
	got := make([]listed, len(paths))
	err := pipeline(ctx, len(paths), func(i int) (err error) {
		got[i], err = r.read(paths[i], paths[i] != m.root)
		return err
	})
	if err != nil {
		return err
	}
	from := len(m.log)
	unwatched := false
	var added []string
	holes := m.listed != len(m.nodes)-1
	for i, p := range paths {
		n, l := m.nodes[p], &got[i]
		if n == nil {
			continue // below a znode found gone or removed above
		}
		if l.gone {
			m.remove(p)
			continue
		}
		unwatched = unwatched || l.unwatched
		n.pzxid = l.pzxid
		if p != m.root {
			n.value = l.value
			if l.mzxid != n.mzxid {
				n.mzxid = l.mzxid
				m.logged(p, n)
			}
		}
		added = m.relist(p, n, l.children, holes, added)
	}
	if len(added) > 0 {
		err := r.descend(ctx, added, true, true, func(p string, l *listed) {
			unwatched = unwatched || l.unwatched
			m.add(p, l)
		})
		if err != nil {
			return err
		}
	}
	if !slices.IsSortedFunc(m.log[max(from-1, 0):], func(a, b mlog) int { return cmp.Compare(a.mzxid, b.mzxid) }) {
		// A znode found late may have been written before others seen.
		slices.SortFunc(m.log, func(a, b mlog) int { return cmp.Compare(a.mzxid, b.mzxid) })
	}
	if unwatched || m.nodes[m.root] == nil {
		r.cache.drop(m)
	}
	return nil
}

// updateRecursive re-reads the znodes of a recursive m that changed
// (dirty: created, written or deleted since the last take), shallow
// first, and brings each parent's children up to date from them: a znode
// found gone is dropped with its subtree and from its parent's children,
// a new one is read with its subtree and added to its parent's children.
// A changed znode m holds is listed again only when the server counts
// other children for it than m holds (a change whose path is not taken
// yet). Paths below a znode not in m are left to the read of that znode's
// subtree. m.mu is held.
func (m *memo) updateRecursive(ctx context.Context, r *Repo, dirty []string) error {
	paths := slices.DeleteFunc(dirty, func(p string) bool {
		return m.nodes[p] == nil && (p == m.root || m.nodes[parentOf(p)] == nil)
	})
	slices.SortFunc(paths, func(a, b string) int {
		return cmp.Or(cmp.Compare(strings.Count(a, "/"), strings.Count(b, "/")), strings.Compare(a, b))
	})
	got := make([]listed, len(paths))
	relisted := make([]bool, len(paths))
	err := pipeline(ctx, len(paths), func(i int) (err error) {
		got[i], relisted[i], err = r.readKnown(paths[i], paths[i] != m.root, m.nodes[paths[i]])
		return err
	})
	if err != nil {
		return err
	}
	from := len(m.log)
	var added []string
	for i, p := range paths {
		l := &got[i]
		n, parent := m.nodes[p], m.nodes[parentOf(p)]
		if p == m.root {
			parent = nil
		}
		switch {
		case l.gone:
			m.remove(p)
			if parent != nil {
				if j, ok := slices.BinarySearch(parent.children, p[strings.LastIndexByte(p, '/')+1:]); ok {
					parent.children = slices.Delete(parent.children, j, j+1)
					m.listed--
				}
			}
		case n == nil:
			if parent == nil {
				continue // below a znode found gone above
			}
			m.add(p, l)
			if j, ok := slices.BinarySearch(parent.children, p[strings.LastIndexByte(p, '/')+1:]); !ok {
				parent.children = slices.Insert(parent.children, j, p[strings.LastIndexByte(p, '/')+1:])
				m.listed++
			}
			for _, c := range l.children {
				added = append(added, p+"/"+c)
			}
		default:
			if p != m.root && l.mzxid != n.mzxid {
				n.value, n.mzxid = l.value, l.mzxid
				m.logged(p, n)
			}
			if relisted[i] {
				added = m.relist(p, n, l.children, m.listed != len(m.nodes)-1, added)
			}
		}
	}
	added = slices.DeleteFunc(added, func(p string) bool { return m.nodes[p] != nil })
	if len(added) > 0 {
		err := r.descend(ctx, added, true, false, func(p string, l *listed) {
			if m.nodes[p] == nil {
				m.add(p, l)
			}
		})
		if err != nil {
			return err
		}
	}
	if !slices.IsSortedFunc(m.log[max(from-1, 0):], func(a, b mlog) int { return cmp.Compare(a.mzxid, b.mzxid) }) {
		slices.SortFunc(m.log, func(a, b mlog) int { return cmp.Compare(a.mzxid, b.mzxid) })
	}
	if m.nodes[m.root] == nil {
		r.cache.drop(m)
	}
	return nil
}

// readKnown reads p without the cache and without watches, as
// readUncached does, for a recursive memo that holds n of it (nil when it
// holds none): it lists p's children (relisted) only when the server
// counts other children than n's, or, when n is nil, any.
func (r *Repo) readKnown(p string, wantData bool, n *mnode) (l listed, relisted bool, err error) {
	var stat *zk.Stat
	if wantData {
		if l.value, stat, err = r.conn.Get(p); err == nil && l.value == nil {
			l.value, stat = repair(r.conn, p, stat)
		}
	} else {
		var ok bool
		if ok, stat, err = r.conn.Exists(p); err == nil && !ok {
			err = zk.ErrNoNode
		}
	}
	if errors.Is(err, zk.ErrNoNode) {
		return listedGone, false, nil
	}
	if err != nil {
		return listedGone, false, err
	}
	l.mzxid, l.pzxid = stat.Mzxid, stat.Pzxid
	have := 0
	if n != nil {
		have = len(n.children)
	}
	if int(stat.NumChildren) == have {
		return l, false, nil
	}
	names, _, err := r.conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return listedGone, false, nil
	}
	if err != nil {
		return listedGone, false, err
	}
	slices.Sort(names)
	l.children = names
	return l, true, nil
}

// relist sets the children of n, p's znode in m, to now (just read,
// sorted): it drops the subtrees of the children removed, and appends to
// added the paths of those new to m (with holes, a child named before may
// be missing from m too), and returns it. Both lists are sorted: one merge
// finds the children removed and added, building the paths of those only
// (a parent of 10,000 children is listed at each change of them).
func (m *memo) relist(p string, n *mnode, now []string, holes bool, added []string) []string {
	old := n.children
	m.listed += len(now) - len(old)
	n.children = now
	for len(old) > 0 || len(now) > 0 {
		switch {
		case len(now) == 0 || len(old) > 0 && old[0] < now[0]:
			m.remove(p + "/" + old[0])
			old = old[1:]
		case len(old) == 0 || now[0] < old[0]:
			if c := p + "/" + now[0]; m.nodes[c] == nil {
				added = append(added, c)
			}
			now = now[1:]
		default:
			// Named before and now: in m unless it is a hole, which only
			// a lookup tells.
			if holes {
				if c := p + "/" + now[0]; m.nodes[c] == nil {
					added = append(added, c)
				}
			}
			old, now = old[1:], now[1:]
		}
	}
	return added
}

// add puts the znode p just read into m, with a log entry below the root.
func (m *memo) add(p string, l *listed) {
	n := &mnode{children: l.children, pzxid: l.pzxid}
	m.nodes[p] = n
	m.listed += len(l.children)
	if p != m.root {
		n.value, n.mzxid = l.value, l.mzxid
		m.logged(p, n)
	}
}

// logged appends n's log entry, which makes its older ones stale.
func (m *memo) logged(p string, n *mnode) {
	m.seq++
	n.seq = m.seq
	m.log = append(m.log, mlog{mzxid: n.mzxid, seq: n.seq, path: p})
	m.rev = max(m.rev, n.mzxid)
}

// remove drops p and what m holds below it.
func (m *memo) remove(p string) {
	n := m.nodes[p]
	if n == nil {
		return
	}
	delete(m.nodes, p)
	m.listed -= len(n.children)
	for _, name := range n.children {
		m.remove(p + "/" + name)
	}
}

// compact drops the log's stale entries.
func (m *memo) compact() {
	m.log = slices.DeleteFunc(m.log, func(e mlog) bool { return !m.live(e) })
}

func (m *memo) live(e mlog) bool {
	n := m.nodes[e.path]
	return n != nil && n.seq == e.seq
}

// changed is ListChanged's answer from m: the znodes below the root
// written after since, found by binary search in the log.
func (m *memo) changed(r *Repo, since registry.Version, most int) registry.Changed {
	out := registry.Changed{Count: max(len(m.nodes)-1, 0), Rev: max(since, registry.Version(r.cache.revision(m)))}
	i := sort.Search(len(m.log), func(i int) bool { return m.log[i].mzxid > int64(since) })
	for _, e := range m.log[i:] {
		if !m.live(e) {
			continue
		}
		if len(out.KVs) == most {
			out.KVs, out.Truncated = nil, true
			return out
		}
		n := m.nodes[e.path]
		out.KVs = append(out.KVs, registry.KV{Key: r.key(e.path), Value: slices.Clone(n.value), Version: registry.Version(n.mzxid)})
	}
	slices.SortFunc(out.KVs, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// revision returns a revision m reflects every write at or before: the
// highest Mzxid m saw (every write up to it was told of, by an event or
// by a read, before that Mzxid was read), or, if a watch on a znode m
// holds fired since m took its dirty set, the highest zxid below that
// znode's unread writes; for a recursive memo that any path is dirty
// since, the zxid of the sync before the take (every change told of after
// its answer is above it). A dropped memo keeps no dirty set: its highest
// Mzxid is all it has (writes told of during its walk may be below it).
// m.mu is held.
func (c *listCache) revision(m *memo) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	rev := m.rev
	if m.recursive && len(m.dirty) > 0 {
		return min(rev, m.synced)
	}
	for p, f := range m.dirty {
		if n := m.nodes[p]; n != nil {
			rev = min(rev, n.below(f, p == m.root))
		}
	}
	return rev
}
