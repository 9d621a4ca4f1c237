package zookeeper

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Get implements registry.Repository. Parent znodes created for deeper keys
// exist with an empty value. Get("/") returns ErrNotFound.
func (r *Repo) Get(ctx context.Context, key string) (registry.KV, error) {
	if err := r.check(ctx, "get", key); err != nil {
		return registry.KV{}, err
	}
	if key == "/" {
		return registry.KV{}, &registry.OpError{Op: "get", Key: key, Err: registry.ErrNotFound}
	}
	data, stat, err := r.conn.Get(r.full(key))
	if err != nil {
		return registry.KV{}, r.convert("get", key, err)
	}
	return registry.KV{Key: key, Value: data, Version: registry.Version(stat.Mzxid)}, nil
}

// listParallel bounds the reads List keeps in flight on the connection.
const listParallel = 64

// List implements registry.Repository. ZooKeeper has no range read: List
// walks the subtree, reading each level's znodes in parallel on the one
// connection (pipelined), so the result is not one consistent snapshot.
// Parent znodes appear with their (usually empty) values.
func (r *Repo) List(ctx context.Context, prefix string) ([]registry.KV, error) {
	if err := r.check(ctx, "list", prefix); err != nil {
		return nil, err
	}
	var (
		mu   sync.Mutex
		out  = []registry.KV{}
		errs []error
	)
	level := []string{r.full(prefix)}
	sem := make(chan struct{}, listParallel)
	for len(level) > 0 {
		var next []string
		var wg sync.WaitGroup
		for _, p := range level {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				names, _, err := r.conn.Children(p)
				if errors.Is(err, zk.ErrNoNode) {
					return
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				for _, n := range names {
					child := p + "/" + n
					if p == "/" {
						child = "/" + n
					}
					data, stat, err := r.conn.Get(child)
					if errors.Is(err, zk.ErrNoNode) {
						continue // deleted meanwhile
					}
					mu.Lock()
					if err != nil {
						errs = append(errs, err)
					} else {
						out = append(out, registry.KV{Key: r.key(child), Value: data, Version: registry.Version(stat.Mzxid)})
						if stat.NumChildren > 0 {
							next = append(next, child)
						}
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			return nil, r.convert("list", prefix, errs[0])
		}
		if err := ctx.Err(); err != nil {
			return nil, convertError("list", prefix, err)
		}
		level = next
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
	p := r.full(key)
	for {
		stat, err := r.conn.Set(p, value, -1)
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
			&zk.CreateRequest{Path: p, Data: value, Acl: r.acl},
			&zk.SetDataRequest{Path: p, Data: value, Version: 0},
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
	res, err := conn.Multi(ops...)
	for _, r := range res {
		if r.Error != nil {
			return res, r.Error
		}
	}
	return res, err
}

// Update implements registry.Repository: it compares expect with the
// znode's Mzxid, then sets the data at the znode's data version, so the
// write still fails if anyone wrote in between.
func (r *Repo) Update(ctx context.Context, key string, value []byte, expect registry.Version) (registry.Version, error) {
	if err := r.checkWrite(ctx, "update", key); err != nil {
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
	stat, err = r.conn.Set(p, value, stat.Version)
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
