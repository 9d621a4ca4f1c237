package zookeeper

import (
	"context"
	"errors"
	"slices"
	"sort"

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
// walks the subtree level by level, listing the children of a level's
// znodes, then reading those children, with a window of requests in flight
// on the one connection (pipelined), so the result is not one consistent
// snapshot. A znode deleted during the walk is left out. Parent znodes
// appear with their (usually empty) values.
func (r *Repo) List(ctx context.Context, prefix string) ([]registry.KV, error) {
	if err := r.check(ctx, "list", prefix); err != nil {
		return nil, err
	}
	out := []registry.KV{}
	level := []string{r.full(prefix)}
	for len(level) > 0 {
		names := make([][]string, len(level))
		err := pipeline(ctx, len(level), func(i int) error {
			n, _, err := r.conn.Children(level[i])
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			names[i] = n
			return err
		})
		if err != nil {
			return nil, r.convert("list", prefix, err)
		}
		var paths []string
		for i, p := range level {
			for _, n := range names[i] {
				paths = append(paths, p+"/"+n)
			}
		}
		kvs := make([]registry.KV, len(paths))
		parents := make([]bool, len(paths))
		err = pipeline(ctx, len(paths), func(i int) error {
			value, stat, err := r.conn.Get(paths[i])
			if errors.Is(err, zk.ErrNoNode) {
				return nil // deleted meanwhile
			}
			if err != nil {
				return err
			}
			if value == nil {
				value, stat = repair(r.conn, paths[i], stat)
			}
			kvs[i] = registry.KV{Key: r.key(paths[i]), Value: value, Version: registry.Version(stat.Mzxid)}
			parents[i] = stat.NumChildren > 0
			return nil
		})
		if err != nil {
			return nil, r.convert("list", prefix, err)
		}
		level = level[:0]
		for i, kv := range kvs {
			if kv.Key == "" {
				continue
			}
			out = append(out, kv)
			if parents[i] {
				level = append(level, paths[i])
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
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
// znode's Mzxid, then sets the data at the znode's data version, so the
// write still fails if anyone wrote in between.
func (r *Repo) Update(ctx context.Context, key string, value []byte, expect registry.Version) (registry.Version, error) {
	if err := r.checkWrite(ctx, "update", key); err != nil {
		return 0, err
	}
	if err := r.checkSize("update", key, 1, len(key), len(value)); err != nil {
		return 0, err
	}
	p := r.full(key)
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
	stat, err = r.conn.Set(p, data(value), stat.Version)
	if err != nil {
		return 0, r.convert("update", key, err)
	}
	return registry.Version(stat.Mzxid), nil
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
		err = deleteChildren(ctx, r.conn, p)
	} else {
		err = deleteTree(ctx, r.conn, p)
	}
	return r.convert("delete", key, err)
}

// deleteTree deletes p and everything below it. A missing p is not an error.
func deleteTree(ctx context.Context, conn *zk.Conn, p string) error {
	for attempt := 0; ; attempt++ {
		if err := deleteChildren(ctx, conn, p); err != nil {
			return err
		}
		err := conn.Delete(p, -1)
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

func deleteChildren(ctx context.Context, conn *zk.Conn, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	names, _, err := conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := deleteTree(ctx, conn, p+"/"+n); err != nil {
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
