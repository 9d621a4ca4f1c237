package zookeeper

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Get implements registry.Repository. Parent znodes created for deeper keys
// exist with an empty value. Get("/") returns ErrNotFound. A null znode is
// rewritten as empty (see the package doc) and returned with its new
// version.
func (r *Repo) Get(ctx context.Context, key string) (registry.KV, error) {
	if err := r.check(ctx, "get", key); err != nil {
		return registry.KV{}, err
	}
	if key == "/" {
		return registry.KV{}, &registry.OpError{Op: "get", Key: key, Err: registry.ErrNotFound}
	}
	value, stat, err := r.conn.Get(r.full(key))
	if err != nil {
		return registry.KV{}, r.convert("get", key, err)
	}
	if value == nil {
		value, stat = repair(r.conn, r.full(key), stat)
	}
	return registry.KV{Key: key, Value: value, Version: registry.Version(stat.Mzxid)}, nil
}

// List implements registry.Repository. ZooKeeper has no range read: List
// walks the subtree level by level, reading each znode's data and children
// with a window of requests in flight on the one connection (pipelined),
// or, for a level of 64 znodes or more, with multiRead requests of up to
// 128 reads on the Repo's recursive session (opened for the List when no
// Watch holds it; a sync first makes it see every write that returned
// before the List), so the result is not one consistent snapshot. A znode deleted during the
// walk is left out. Parent znodes appear with their (usually empty)
// values.
//
// From the second List of a prefix on, what List reads is kept (see
// listCache), with watches armed on each znode read, so that a List of a
// subtree that changed little since the last costs a sync and the reads
// of what changed, not a request per znode. The sync makes such a List
// see every change the server applied before the List began (every write
// that returned before it, on any connection). Cost: two armed watches per
// znode kept (at most maxCached znodes) and their data in memory. The
// first List of a prefix reads every znode and arms no watch.
func (r *Repo) List(ctx context.Context, prefix string) ([]registry.KV, error) {
	if err := r.check(ctx, "list", prefix); err != nil {
		return nil, err
	}
	out := []registry.KV{}
	err := r.walk(ctx, prefix, r.cache.again(prefix), func(p string, l *listed) {
		// A copy: the cache keeps its own.
		out = append(out, registry.KV{Key: r.key(p), Value: slices.Clone(l.value), Version: registry.Version(l.mzxid)})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// ListChanged implements registry.ChangeLister: a znode's version is its
// Mzxid, ZooKeeper's one counter of every write, so the znodes written
// after since are those whose Mzxid is above it. As List, it is not one
// consistent snapshot: it sends a sync, so it sees every change the
// server applied before it began (every write that returned before it,
// on any connection), and may see some made while it runs.
//
// It keeps what it found below each prefix (a memo, for up to maxMemos
// prefixes), following the prefix with a persistent recursive watch on
// the Repo's recursive session (ZooKeeper 3.6+; one connection shared
// with its Watches), or else with watches armed on every znode (see
// listCache and memo), so that a ListChanged of a prefix listed before
// costs a sync (two with the recursive watch: that session's and the
// connection's), the reads of the znodes that changed since (and of the
// subtrees added below them), and the znodes written after since, found
// by binary search in a log of the memo's znodes by Mzxid: not a pass
// over the prefix's znodes. With the recursive watch a new znode costs
// its own reads; with child watches its parent is listed again. The
// first ListChanged of a prefix, one after the session (or the recursive
// session) was lost or interrupted, or after an error, walks the whole
// subtree. So does every ListChanged of a prefix whose walk found no
// znode at the prefix, or, without the recursive watch, read a znode the
// cache had no room for (no watch was armed). Concurrent calls on one
// prefix are served one after the other.
//
// Count is the number of znodes below prefix. Rev (at least since) is
// the highest Mzxid the memo ever saw below prefix (a deleted znode's
// may be the highest), lowered below the writes that fired a watch (or
// that the recursive watch reported) during the call and are not read
// yet: so every write at or before Rev is reflected, and a call since
// Rev returns every znode written after.
// Without a memo kept (see above, or the session was lost during the
// call), Rev is the highest Mzxid read, and a write made during the walk
// to a znode read before may be below it: a call since Rev misses it.
// Values are copies.
func (r *Repo) ListChanged(ctx context.Context, prefix string, since registry.Version, most int) (registry.Changed, bool, error) {
	if err := r.check(ctx, "list", prefix); err != nil {
		return registry.Changed{}, true, err
	}
	r.cache.again(prefix)
	if r.walkChanged.Load() {
		return r.listChangedByWalk(ctx, prefix, since, most)
	}
	m, err := r.follow(ctx, prefix)
	if err != nil {
		return registry.Changed{}, true, r.convert("list", prefix, err)
	}
	defer m.mu.Unlock()
	return m.changed(r, since, most), true, nil
}

// listChangedByWalk is ListChanged by a walk of the whole subtree through
// the cache, keeping no memo (tests: the baseline of the memo).
func (r *Repo) listChangedByWalk(ctx context.Context, prefix string, since registry.Version, most int) (registry.Changed, bool, error) {
	out := registry.Changed{Rev: since}
	err := r.walk(ctx, prefix, true, func(p string, l *listed) {
		out.Count++
		v := registry.Version(l.mzxid)
		out.Rev = max(out.Rev, v)
		if v > since && !out.Truncated {
			if len(out.KVs) == most {
				out.KVs, out.Truncated = nil, true
				return
			}
			out.KVs = append(out.KVs, registry.KV{Key: r.key(p), Value: slices.Clone(l.value), Version: v})
		}
	})
	if err != nil {
		return registry.Changed{}, true, err
	}
	slices.SortFunc(out.KVs, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) })
	return out, true, nil
}

// sync makes the next reads on the connection see every change the
// server applied before it (a missing prefix is no error).
func (r *Repo) sync(prefix string) error {
	if _, err := r.conn.Sync(r.full(prefix)); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return r.convert("list", prefix, err)
	}
	return nil
}

// walk reads the subtree below prefix level by level, through the cache
// (after a sync) when cached is true, and calls emit with each znode
// below prefix that it found, in no particular order.
func (r *Repo) walk(ctx context.Context, prefix string, cached bool, emit func(p string, l *listed)) error {
	if cached {
		if err := r.sync(prefix); err != nil {
			return err
		}
	}
	root := r.full(prefix)
	err := r.descend(ctx, []string{root}, false, cached, func(p string, l *listed) {
		if p != root {
			emit(p, l)
		}
	})
	if err != nil {
		return r.convert("list", prefix, err)
	}
	return nil
}

// descend reads the subtrees at level level by level, pipelined, through
// the cache when cached is true, the data of the first level only when
// data is true (of the levels below always), and calls visit with each
// znode that it found, on the calling goroutine, in no particular order.
func (r *Repo) descend(ctx context.Context, level []string, data, cached bool, visit func(p string, l *listed)) error {
	b := &bulk{r: r}
	defer b.close()
	for depth := 0; len(level) > 0; depth++ {
		wantData := data || depth > 0
		got := make([]listed, len(level))
		var err error
		if cached {
			miss := r.cache.hits(level, wantData, got)
			err = pipeline(ctx, len(miss), func(i int) (err error) {
				got[miss[i]], err = r.read(level[miss[i]], wantData)
				return err
			})
		} else {
			err = r.readLevel(ctx, b, level, wantData, got)
		}
		if err != nil {
			return err
		}
		var next []string
		for i, p := range level {
			if got[i].gone {
				continue
			}
			visit(p, &got[i])
			for _, n := range got[i].children {
				next = append(next, p+"/"+n)
			}
		}
		level = next
	}
	return nil
}

// Children implements registry.Repository.
func (r *Repo) Children(ctx context.Context, key string) ([]string, error) {
	if err := r.check(ctx, "children", key); err != nil {
		return nil, err
	}
	names, _, err := r.conn.Children(r.full(key))
	if errors.Is(err, zk.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, r.convert("children", key, err)
	}
	slices.Sort(names)
	return names, nil
}

// Put implements registry.Repository. Missing parents are created as
// persistent znodes with empty data.
func (r *Repo) Put(ctx context.Context, key string, value []byte) (registry.Version, error) {
	if err := r.checkWrite(ctx, "put", key); err != nil {
		return 0, err
	}
	if err := r.checkSize("put", key, 1, len(key), 2*len(value)); err != nil {
		return 0, err
	}
	p := r.full(key)
	for {
		stat, err := r.conn.Set(p, data(value), -1)
		if err == nil {
			return registry.Version(stat.Mzxid), nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return 0, r.convert("put", key, err)
		}
		v, err := r.create(p, value)
		if errors.Is(err, zk.ErrNodeExists) {
			continue // created concurrently: overwrite it
		}
		if err != nil {
			return 0, r.convert("put", key, err)
		}
		return v, nil
	}
}

// Create implements registry.Repository.
func (r *Repo) Create(ctx context.Context, key string, value []byte) (registry.Version, error) {
	if err := r.checkWrite(ctx, "create", key); err != nil {
		return 0, err
	}
	if err := r.checkSize("create", key, 1, len(key), 2*len(value)); err != nil {
		return 0, err
	}
	v, err := r.create(r.full(key), value)
	if err != nil {
		return 0, r.convert("create", key, err)
	}
	return v, nil
}

// create makes the persistent znode p (and its parents) and returns its
// Mzxid. A plain create returns no Stat, so it is a multi of the create and
// a set at version 0, whose Stat carries the transaction's zxid.
func (r *Repo) create(p string, value []byte) (registry.Version, error) {
	var v registry.Version
	err := withParents(r.conn, r.acl, p, func() error {
		res, err := multi(r.conn,
			&zk.CreateRequest{Path: p, Data: data(value), Acl: r.acl},
			&zk.SetDataRequest{Path: p, Data: data(value), Version: 0},
		)
		if err != nil {
			return err
		}
		v = registry.Version(res[1].Stat.Mzxid)
		return nil
	})
	return v, err
}

// multi runs ops as one ZooKeeper multi. Its error is that of the first
// failed operation, which is more specific than the multi's own, and a
// failed operation is an error even if the multi's header says none.
func multi(conn *zk.Conn, ops ...any) ([]zk.MultiResponse, error) {
	res, _, err := multiAt(conn, ops...)
	return res, err
}

// multiAt is multi that also returns the index of the failed operation, or
// -1 when none is known (success, or the multi failed as a whole).
func multiAt(conn *zk.Conn, ops ...any) ([]zk.MultiResponse, int, error) {
	res, err := conn.Multi(ops...)
	for i, r := range res {
		if r.Error != nil {
			return res, i, r.Error
		}
	}
	return res, -1, err
}

// Update implements registry.Repository: it compares expect with the
// znode's Mzxid, then sets the data at the znode's data version, checking
// the key's deletion guard read before (guardBuckets), so the write still
// fails if anyone wrote, or deleted and created the key again, in between.
func (r *Repo) Update(ctx context.Context, key string, value []byte, expect registry.Version) (registry.Version, error) {
	if err := r.checkWrite(ctx, "update", key); err != nil {
		return 0, err
	}
	if err := r.checkSize("update", key, 1, len(key), len(value)); err != nil {
		return 0, err
	}
	for attempt := 1; ; attempt++ {
		v, err := r.update(ctx, key, value, expect)
		if !errors.Is(err, errGuardMoved) {
			return v, err
		}
		if attempt == guardAttempts || ctx.Err() != nil {
			return 0, r.convert("update", key, zk.ErrBadVersion)
		}
	}
}

// update is one attempt of Update: errGuardMoved when only the guard failed.
func (r *Repo) update(ctx context.Context, key string, value []byte, expect registry.Version) (registry.Version, error) {
	p, g := r.full(key), r.guard(key)
	guards, err := r.guardVersions(ctx, r.conn, []string{g})
	if err != nil {
		return 0, r.convert("update", key, err)
	}
	ok, stat, err := r.conn.Exists(p)
	if err != nil {
		return 0, r.convert("update", key, err)
	}
	if !ok {
		return 0, r.convert("update", key, zk.ErrNoNode)
	}
	if registry.Version(stat.Mzxid) != expect {
		return 0, r.convert("update", key, zk.ErrBadVersion)
	}
	r.between()
	res, at, err := multiAt(r.conn,
		&zk.SetDataRequest{Path: p, Data: data(value), Version: stat.Version},
		&zk.CheckVersionRequest{Path: g, Version: guards[g]},
	)
	switch {
	case at == 1 && errors.Is(err, zk.ErrBadVersion):
		return 0, errGuardMoved // a key of the guard's was deleted meanwhile: read again
	case err != nil:
		return 0, r.convert("update", key, err)
	}
	return registry.Version(res[0].Stat.Mzxid), nil
}

// Delete implements registry.Repository: it removes the subtree leaves
// first, retrying when keys are added below it meanwhile. Delete("/")
// removes every key and keeps the namespace root znode.
func (r *Repo) Delete(ctx context.Context, key string) error {
	if err := r.check(ctx, "delete", key); err != nil {
		return err
	}
	p := r.full(key)
	var err error
	if key == "/" {
		err = r.deleteChildren(ctx, p)
	} else {
		err = r.deleteTree(ctx, p)
	}
	return r.convert("delete", key, err)
}

// deleteTree deletes p and everything below it, moving the guard of each
// key it deletes on in the same multi (guardBuckets). A missing p is not
// an error.
func (r *Repo) deleteTree(ctx context.Context, p string) error {
	for attempt := 0; ; attempt++ {
		if err := r.deleteChildren(ctx, p); err != nil {
			return err
		}
		_, _, err := r.guardedMulti(r.conn, 1, &zk.DeleteRequest{Path: p, Version: -1}, r.bump(r.key(p)))
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrNotEmpty) && attempt < 100:
			continue // a child was added meanwhile
		default:
			return err
		}
	}
}

func (r *Repo) deleteChildren(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	names, _, err := r.conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := r.deleteTree(ctx, p+"/"+n); err != nil {
			return err
		}
	}
	return nil
}

// GetMany implements registry.MultiGetter. ZooKeeper has no multi-key read
// here: the reads are pipelined on the connection, each its own snapshot.
func (r *Repo) GetMany(ctx context.Context, keys []string) ([]registry.KV, error) {
	for _, k := range keys {
		if err := r.check(ctx, "get", k); err != nil {
			return nil, err
		}
	}
	out := make([]registry.KV, len(keys))
	err := pipeline(ctx, len(keys), func(i int) error {
		out[i] = registry.KV{Key: keys[i]}
		if keys[i] == "/" {
			return nil // the namespace root is not a key (see Get)
		}
		data, stat, err := r.conn.Get(r.full(keys[i]))
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case err != nil:
			return err
		}
		out[i].Value, out[i].Version = data, registry.Version(stat.Mzxid)
		return nil
	})
	if err != nil {
		key := "/"
		if len(keys) > 0 {
			key = keys[0]
		}
		return nil, r.convert("get", key, err)
	}
	return out, nil
}
