package zookeeper

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/registry"
)

// zkMaxValue is the largest znode ZooKeeper serves by default
// (jute.maxbuffer, 1 MiB): a limited read plans its pipelined Gets with it.
const zkMaxValue = 1 << 20

// ListLimited implements registry.LimitedLister: the subtree depth first,
// each znode's children listed (only those that have children, from the
// Get's stat), then read in pipelined windows of as many Gets as the
// bytes left hold even if every value is as large as a znode can be. Like
// List it is not one consistent snapshot, and a znode deleted during the
// walk is left out.
func (r *Repo) ListLimited(ctx context.Context, prefix string, lim registry.Limits) ([]registry.KV, bool, error) {
	if err := r.check(ctx, "list", prefix); err != nil {
		return nil, false, err
	}
	w := &zkWalk{r: r, lim: lim, out: []registry.KV{}}
	if err := w.node(ctx, r.full(prefix)); err != nil {
		return nil, false, r.convert("list", prefix, err)
	}
	slices.SortFunc(w.out, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) })
	return w.out, w.truncated, nil
}

type zkWalk struct {
	r         *Repo
	lim       registry.Limits
	out       []registry.KV
	bytes     int64
	truncated bool
}

// node appends the subtree below the znode at full path p.
func (w *zkWalk) node(ctx context.Context, p string) error {
	names, _, err := w.r.conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	slices.Sort(names)
	for len(names) > 0 && !w.truncated {
		n := int(min(int64(len(names)), int64(w.lim.Rows-len(w.out)), max(1, (w.lim.Bytes-w.bytes)/zkMaxValue)))
		if n <= 0 {
			w.truncated = true
			return nil
		}
		kvs := make([]registry.KV, n)
		parents := make([]bool, n)
		err := pipeline(ctx, n, func(i int) error {
			data, stat, err := w.r.conn.Get(p + "/" + names[i])
			if errors.Is(err, zk.ErrNoNode) {
				return nil // deleted meanwhile
			}
			if err != nil {
				return err
			}
			kvs[i] = registry.KV{Key: w.r.key(p + "/" + names[i]), Value: data, Version: registry.Version(stat.Mzxid)}
			parents[i] = stat.NumChildren > 0
			return nil
		})
		if err != nil {
			return err
		}
		for i, kv := range kvs {
			if kv.Key == "" {
				continue
			}
			size := int64(len(kv.Key) + len(kv.Value))
			if len(w.out) >= w.lim.Rows || w.bytes+size > w.lim.Bytes {
				w.truncated = true
				return nil
			}
			w.out, w.bytes = append(w.out, kv), w.bytes+size
			if parents[i] {
				if err := w.node(ctx, p+"/"+names[i]); err != nil {
					return err
				}
			}
		}
		names = names[n:]
	}
	return nil
}
