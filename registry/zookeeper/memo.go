package zookeeper

import (
	"cmp"
	"context"
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
// that the next ListChanged re-reads only the znodes whose watches fired
// since (its dirty set, filled by listCache.event) and finds those written
// after a revision without a pass over the rest.
//
// Every znode in it was read through the cache with its watches armed
// (or found in the cache, whose entries are current while their watches
// have not fired), after the memo was registered: so any change made to
// one since its read has put its path in the dirty set by the time the
// answer to a later sync arrives. A walk that read a znode without
// watches (the cache was full) or found no znode at the prefix (no watch
// would tell of its creation) is not kept; nor is a memo whose refresh
// failed, or any memo once the session is lost or interrupted.
type memo struct {
	root string // the prefix's znode path

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
// now: built by a walk if there was none, otherwise updated by reading
// the znodes whose watches fired since its last use. The caller has synced
// and unlocks it. On error the memo is dropped and nothing is returned
// locked.
func (r *Repo) follow(ctx context.Context, prefix string) (*memo, error) {
	root := r.full(prefix)
	var (
		m     *memo
		dirty []string
		ok    bool
	)
	for range 2 {
		m = r.cache.memo(root)
		m.mu.Lock()
		if dirty, ok = r.cache.take(m); ok {
			break
		}
		m.mu.Unlock() // dropped while waiting for it (session lost, evicted)
	}
	if !ok {
		m = newMemo(root) // dropped again: walk into one that is not kept
		m.dropped = true
		m.mu.Lock()
	}
	var err error
	if m.built {
		err = m.update(ctx, r, dirty)
	} else {
		err = m.build(ctx, r)
	}
	if err != nil {
		r.cache.drop(m)
		m.mu.Unlock()
		return nil, err
	}
	if len(m.log) > 2*len(m.nodes)+64 {
		m.compact()
	}
	return m, nil
}

// build walks the subtree at m.root into m. m.mu is held.
func (m *memo) build(ctx context.Context, r *Repo) error {
	m.nodes, m.log, m.rev, m.listed = map[string]*mnode{}, nil, 0, 0
	unwatched := false
	err := r.descend(ctx, []string{m.root}, false, true, func(p string, l *listed) {
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
		// Both lists are sorted: one merge finds the children removed and
		// added, building the paths of those only (a parent of 10,000
		// children is listed at each change of them).
		old, now := n.children, l.children
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
		m.listed += len(l.children) - len(n.children)
		n.children = l.children
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
// znode's unread writes. A dropped memo keeps no dirty set: its highest
// Mzxid is all it has (writes told of during its walk may be below it).
// m.mu is held.
func (c *listCache) revision(m *memo) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	rev := m.rev
	for p, f := range m.dirty {
		if n := m.nodes[p]; n != nil {
			rev = min(rev, n.below(f, p == m.root))
		}
	}
	return rev
}
