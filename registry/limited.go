package registry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
)

// Limits bounds a ListLimited read: at most Rows keys and Bytes bytes of
// keys and values. Both must be positive.
type Limits struct {
	Rows  int
	Bytes int64
}

// MaxValueBytes is the largest value either registry stores by default
// (etcd's request limit, 1.5 MiB; ZooKeeper's jute.maxbuffer is 1 MiB): a
// limited read plans its pages with it so that one page cannot hold more
// than the bytes it has left.
const MaxValueBytes = 3 << 19

// LimitedLister is implemented by a Repository that reads a bounded
// subtree itself, a page at a time (etcd, ZooKeeper, memory). Decorators
// forward it.
type LimitedLister interface {
	ListLimited(ctx context.Context, prefix string, lim Limits) (kvs []KV, truncated bool, err error)
}

// ListLimited returns keys strictly below prefix with their values and
// versions, sorted by key, as List does, but stops before a key that
// would bring the result over lim.Rows keys or lim.Bytes bytes of keys and
// values; truncated then reports that keys were left out. It never holds
// much more than lim in memory: a LimitedLister (etcd, ZooKeeper,
// memory) reads pages or windows sized from what is left, any other
// Repository is walked with Children and Get, a few values at a time.
// Which keys a truncated read keeps
// depends on the backend; an untruncated read returns what List would.
// ctx bounds the reads.
func ListLimited(ctx context.Context, r Repository, prefix string, lim Limits) (kvs []KV, truncated bool, err error) {
	if lim.Rows <= 0 || lim.Bytes <= 0 {
		return nil, false, &OpError{Op: "list", Key: prefix, Err: errors.New("ListLimited needs positive limits")}
	}
	if l, ok := r.(LimitedLister); ok {
		return l.ListLimited(ctx, prefix, lim)
	}
	w := &walk{r: r, lim: lim, out: []KV{}}
	if err := w.node(ctx, prefix); err != nil {
		return nil, false, err
	}
	slices.SortFunc(w.out, func(a, b KV) int { return strings.Compare(a.Key, b.Key) })
	return w.out, w.truncated, nil
}

// walk is ListLimited over Children and Get, depth first.
type walk struct {
	r         Repository
	lim       Limits
	out       []KV
	bytes     int64
	truncated bool
}

// walkWindow bounds the Gets of one level in flight at once.
const walkWindow = 16

// node appends the subtree below key.
func (w *walk) node(ctx context.Context, key string) error {
	names, err := w.r.Children(ctx, key)
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(key, "/") + "/"
	for len(names) > 0 {
		if w.truncated {
			return nil
		}
		// As many Gets at once as the bytes left allow even if every
		// value is as large as a value can be.
		n := int(min(int64(walkWindow), int64(len(names)), int64(w.lim.Rows-len(w.out)), max(1, (w.lim.Bytes-w.bytes)/MaxValueBytes)))
		if n <= 0 {
			w.truncated = true
			return nil
		}
		batch := make([]KV, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { batch[i], errs[i] = w.r.Get(ctx, base+names[i]) })
		}
		wg.Wait()
		for i := range n {
			if errors.Is(errs[i], ErrNotFound) {
				// Deleted meanwhile, or a parent etcd does not store: its
				// subtree may still hold keys.
				if err := w.node(ctx, base+names[i]); err != nil {
					return err
				}
				continue
			}
			if errs[i] != nil {
				return errs[i]
			}
			kv := batch[i]
			size := int64(len(kv.Key) + len(kv.Value))
			if len(w.out) >= w.lim.Rows || w.bytes+size > w.lim.Bytes {
				w.truncated = true
				return nil
			}
			w.out, w.bytes = append(w.out, kv), w.bytes+size
			if err := w.node(ctx, kv.Key); err != nil {
				return err
			}
		}
		names = names[n:]
	}
	return nil
}
