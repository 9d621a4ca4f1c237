package etcd

import (
	"context"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardkeeper/shardkeeper/registry"
)

// childrenPage is how many keys one Children read fetches.
const childrenPage = 1000

// Get implements registry.Repository.
func (r *Repo) Get(ctx context.Context, key string) (registry.KV, error) {
	c, cancel, err := r.begin(ctx, "get", key)
	if err != nil {
		return registry.KV{}, err
	}
	defer cancel()
	resp, err := r.client.Get(c, r.full(key))
	if err != nil {
		return registry.KV{}, r.convertError(ctx, "get", key, err)
	}
	if len(resp.Kvs) == 0 {
		return registry.KV{}, &registry.OpError{Op: "get", Key: key, Err: registry.ErrNotFound}
	}
	kv := resp.Kvs[0]
	return registry.KV{Key: key, Value: kv.Value, Version: registry.Version(kv.ModRevision)}, nil
}

// List implements registry.Repository: one range read of "prefix/" at one
// revision, a page at a time.
func (r *Repo) List(ctx context.Context, prefix string) ([]registry.KV, error) {
	c, cancel, err := r.begin(ctx, "list", prefix)
	if err != nil {
		return nil, err
	}
	defer cancel()
	base, end := r.below(prefix)
	out := []registry.KV{}
	start := base
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(r.childrenPage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := r.client.Get(c, start, opts...)
		if err != nil {
			return nil, r.convertError(ctx, "list", prefix, err)
		}
		if rev == 0 {
			// Later pages read at the first page's revision: one snapshot.
			// (A header's revision is the store's current one, even for a
			// read WithRev, so take it only once.)
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			out = append(out, registry.KV{Key: r.strip(kv.Key), Value: kv.Value, Version: registry.Version(kv.ModRevision)})
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// ListLimited implements registry.LimitedLister: List's range read at one
// revision, in pages of as many keys as the bytes left hold even if every
// value is as large as etcd allows (registry.MaxValueBytes), so that no
// page brings more than about lim.Bytes into memory.
func (r *Repo) ListLimited(ctx context.Context, prefix string, lim registry.Limits) ([]registry.KV, bool, error) {
	c, cancel, err := r.begin(ctx, "list", prefix)
	if err != nil {
		return nil, false, err
	}
	defer cancel()
	base, end := r.below(prefix)
	out := []registry.KV{}
	var bytes int64
	start := base
	var rev int64
	for {
		page := min(int64(r.childrenPage), int64(lim.Rows-len(out))+1, max(1, (lim.Bytes-bytes)/registry.MaxValueBytes))
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(page)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := r.client.Get(c, start, opts...)
		if err != nil {
			return nil, false, r.convertError(ctx, "list", prefix, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			k := registry.KV{Key: r.strip(kv.Key), Value: kv.Value, Version: registry.Version(kv.ModRevision)}
			size := int64(len(k.Key) + len(k.Value))
			if len(out) >= lim.Rows || bytes+size > lim.Bytes {
				return out, true, nil
			}
			out, bytes = append(out, k), bytes+size
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, false, nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// ListIsRangeRead implements registry.RangeReader: List is one range read.
func (r *Repo) ListIsRangeRead() bool { return true }

// Children implements registry.Repository. etcd has no directories: the
// children are the distinct next segments of the keys under "key/". It reads
// keys only, a page at a time at one revision, and skips the rest of a
// child's subtree once the child is known, so a child with a large subtree
// costs about one page.
func (r *Repo) Children(ctx context.Context, key string) ([]string, error) {
	c, cancel, err := r.begin(ctx, "children", key)
	if err != nil {
		return nil, err
	}
	defer cancel()
	base, end := r.below(key)
	names := []string{}
	start := base
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(r.childrenPage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := r.client.Get(c, start, opts...)
		if err != nil {
			return nil, r.convertError(ctx, "children", key, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		var last string
		for _, kv := range resp.Kvs {
			k := string(kv.Key)
			name, _, _ := strings.Cut(k[len(base):], "/")
			if name != "" && (len(names) == 0 || names[len(names)-1] != name) {
				names = append(names, name)
			}
			last = k
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		// Continue after the last key, and past the whole subtree of its
		// child when the last key lies inside it. Keys of other children
		// that sort between "name" and "name/" ("name-x") were already read.
		name, _, inSubtree := strings.Cut(last[len(base):], "/")
		start = last + "\x00"
		if inSubtree {
			start = clientv3.GetPrefixRangeEnd(base + name + "/")
		}
		if start >= end {
			break
		}
	}
	// Keys sort bytewise, but "a-x" < "a/..." can interleave names; sort and
	// drop duplicates.
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Put implements registry.Repository.
func (r *Repo) Put(ctx context.Context, key string, value []byte) (registry.Version, error) {
	if err := r.checkSize("put", key, 1, len(key)+len(value)+registry.RequestOverhead); err != nil {
		return 0, err
	}
	c, cancel, err := r.begin(ctx, "put", key)
	if err != nil {
		return 0, err
	}
	defer cancel()
	resp, err := r.client.Put(c, r.full(key), string(value))
	if err != nil {
		return 0, r.convertError(ctx, "put", key, err)
	}
	return registry.Version(resp.Header.Revision), nil
}

// Create implements registry.Repository: a Txn on CreateRevision == 0.
func (r *Repo) Create(ctx context.Context, key string, value []byte) (registry.Version, error) {
	if err := r.checkSize("create", key, 1, len(key)+len(value)+registry.RequestOverhead); err != nil {
		return 0, err
	}
	c, cancel, err := r.begin(ctx, "create", key)
	if err != nil {
		return 0, err
	}
	defer cancel()
	k := r.full(key)
	resp, err := r.client.Txn(c).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(value))).
		Commit()
	if err != nil {
		return 0, r.convertError(ctx, "create", key, err)
	}
	if !resp.Succeeded {
		return 0, &registry.OpError{Op: "create", Key: key, Err: registry.ErrExists}
	}
	return registry.Version(resp.Header.Revision), nil
}

// Update implements registry.Repository: a Txn on ModRevision == expect
// whose else branch reads the key to tell ErrNotFound from ErrBadVersion.
func (r *Repo) Update(ctx context.Context, key string, value []byte, expect registry.Version) (registry.Version, error) {
	if err := r.checkSize("update", key, 1, len(key)+len(value)+registry.RequestOverhead); err != nil {
		return 0, err
	}
	c, cancel, err := r.begin(ctx, "update", key)
	if err != nil {
		return 0, err
	}
	defer cancel()
	k := r.full(key)
	resp, err := r.client.Txn(c).
		If(
			// A missing key has ModRevision 0: never let expect 0 create it.
			clientv3.Compare(clientv3.CreateRevision(k), ">", 0),
			clientv3.Compare(clientv3.ModRevision(k), "=", int64(expect)),
		).
		Then(clientv3.OpPut(k, string(value))).
		Else(clientv3.OpGet(k, clientv3.WithKeysOnly())).
		Commit()
	if err != nil {
		return 0, r.convertError(ctx, "update", key, err)
	}
	if !resp.Succeeded {
		if len(resp.Responses) == 1 && len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return 0, &registry.OpError{Op: "update", Key: key, Err: registry.ErrNotFound}
		}
		return 0, &registry.OpError{Op: "update", Key: key, Err: registry.ErrBadVersion}
	}
	return registry.Version(resp.Header.Revision), nil
}

// Delete implements registry.Repository: one Txn deletes key and the range
// under "key/" (never "key" as a bare prefix).
func (r *Repo) Delete(ctx context.Context, key string) error {
	c, cancel, err := r.begin(ctx, "delete", key)
	if err != nil {
		return err
	}
	defer cancel()
	var ops []clientv3.Op
	if key == "/" {
		ops = []clientv3.Op{clientv3.OpDelete(r.full("/"), clientv3.WithPrefix())}
	} else {
		k := r.full(key)
		ops = []clientv3.Op{clientv3.OpDelete(k), clientv3.OpDelete(k+"/", clientv3.WithPrefix())}
	}
	if _, err := r.client.Txn(c).Then(ops...).Commit(); err != nil {
		return r.convertError(ctx, "delete", key, err)
	}
	return nil
}

// ListChanged implements registry.ChangeLister: one read-only transaction
// of two range reads at one revision, the keys below prefix modified
// after since (at most max+1 sent, filtered on the server) and their
// count.
func (r *Repo) ListChanged(ctx context.Context, prefix string, since registry.Version, max int) (registry.Changed, bool, error) {
	c, cancel, err := r.begin(ctx, "list", prefix)
	if err != nil {
		return registry.Changed{}, true, err
	}
	defer cancel()
	base, end := r.below(prefix)
	resp, err := r.client.Txn(c).Then(
		clientv3.OpGet(base, clientv3.WithRange(end), clientv3.WithMinModRev(int64(since)+1), clientv3.WithLimit(int64(max)+1)),
		clientv3.OpGet(base, clientv3.WithRange(end), clientv3.WithCountOnly()),
	).Commit()
	if err != nil {
		return registry.Changed{}, true, r.convertError(ctx, "list", prefix, err)
	}
	changed, count := resp.Responses[0].GetResponseRange(), resp.Responses[1].GetResponseRange()
	out := registry.Changed{Count: int(count.Count), Rev: registry.Version(resp.Header.Revision)}
	if changed.More || len(changed.Kvs) > max {
		out.Truncated = true
		return out, true, nil
	}
	for _, kv := range changed.Kvs {
		out.KVs = append(out.KVs, registry.KV{Key: r.strip(kv.Key), Value: kv.Value, Version: registry.Version(kv.ModRevision)})
	}
	return out, true, nil
}
