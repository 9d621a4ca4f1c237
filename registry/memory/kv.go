package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Get implements registry.Repository.
func (r *Repo) Get(ctx context.Context, key string) (registry.KV, error) {
	if err := r.check(ctx, "get", key); err != nil {
		return registry.KV{}, err
	}
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	e, ok := r.st.kv[key]
	if !ok {
		return registry.KV{}, &registry.OpError{Op: "get", Key: key, Err: registry.ErrNotFound}
	}
	return registry.KV{Key: key, Value: slices.Clone(e.value), Version: registry.Version(e.version)}, nil
}

// List implements registry.Repository.
func (r *Repo) List(ctx context.Context, prefix string) ([]registry.KV, error) {
	if err := r.check(ctx, "list", prefix); err != nil {
		return nil, err
	}
	under := strings.TrimSuffix(prefix, "/") + "/"
	r.st.mu.Lock()
	var out []registry.KV
	for k, e := range r.st.kv {
		if strings.HasPrefix(k, under) {
			out = append(out, registry.KV{Key: k, Value: slices.Clone(e.value), Version: registry.Version(e.version)})
		}
	}
	r.st.mu.Unlock()
	slices.SortFunc(out, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// ListLimited implements registry.LimitedLister: List's keys in order, up
// to lim.
func (r *Repo) ListLimited(ctx context.Context, prefix string, lim registry.Limits) ([]registry.KV, bool, error) {
	if err := r.check(ctx, "list", prefix); err != nil {
		return nil, false, err
	}
	under := strings.TrimSuffix(prefix, "/") + "/"
	r.st.mu.Lock()
	var keys []string
	for k := range r.st.kv {
		if strings.HasPrefix(k, under) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := []registry.KV{}
	var bytes int64
	truncated := false
	for _, k := range keys {
		e := r.st.kv[k]
		size := int64(len(k) + len(e.value))
		if len(out) >= lim.Rows || bytes+size > lim.Bytes {
			truncated = true
			break
		}
		out, bytes = append(out, registry.KV{Key: k, Value: slices.Clone(e.value), Version: registry.Version(e.version)}), bytes+size
	}
	r.st.mu.Unlock()
	return out, truncated, nil
}

// ListIsRangeRead implements registry.RangeReader: List reads the store once.
func (r *Repo) ListIsRangeRead() bool { return true }

// Children implements registry.Repository.
func (r *Repo) Children(ctx context.Context, key string) ([]string, error) {
	if err := r.check(ctx, "children", key); err != nil {
		return nil, err
	}
	prefix := strings.TrimSuffix(key, "/") + "/"
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	names := map[string]struct{}{}
	for k := range r.st.kv {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			name, _, _ := strings.Cut(rest, "/")
			names[name] = struct{}{}
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// Put implements registry.Repository. Like etcd, a plain Put on an ephemeral
// key makes it persistent.
func (r *Repo) Put(ctx context.Context, key string, value []byte) (registry.Version, error) {
	if err := r.check(ctx, "put", key); err != nil {
		return 0, err
	}
	if err := r.checkSize("put", key, len(key)+len(value)); err != nil {
		return 0, err
	}
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	return registry.Version(r.st.write(key, value, nil)), nil
}

// Create implements registry.Repository.
func (r *Repo) Create(ctx context.Context, key string, value []byte) (registry.Version, error) {
	if err := r.check(ctx, "create", key); err != nil {
		return 0, err
	}
	if err := r.checkSize("create", key, len(key)+len(value)); err != nil {
		return 0, err
	}
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	if _, ok := r.st.kv[key]; ok {
		return 0, &registry.OpError{Op: "create", Key: key, Err: registry.ErrExists}
	}
	return registry.Version(r.st.write(key, value, nil)), nil
}

// Update implements registry.Repository.
func (r *Repo) Update(ctx context.Context, key string, value []byte, expect registry.Version) (registry.Version, error) {
	if err := r.check(ctx, "update", key); err != nil {
		return 0, err
	}
	if err := r.checkSize("update", key, len(key)+len(value)); err != nil {
		return 0, err
	}
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	e, ok := r.st.kv[key]
	switch {
	case !ok:
		return 0, &registry.OpError{Op: "update", Key: key, Err: registry.ErrNotFound}
	case registry.Version(e.version) != expect:
		return 0, &registry.OpError{Op: "update", Key: key, Err: fmt.Errorf("%w: expected %d, found %d", registry.ErrBadVersion, expect, e.version)}
	}
	return registry.Version(r.st.write(key, value, e.owner)), nil
}

// Delete implements registry.Repository.
func (r *Repo) Delete(ctx context.Context, key string) error {
	if err := r.check(ctx, "delete", key); err != nil {
		return err
	}
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	var doomed []string
	for k := range r.st.kv {
		if registry.IsUnder(k, key) {
			doomed = append(doomed, k)
		}
	}
	sort.Strings(doomed)
	for _, k := range doomed {
		r.st.remove(k)
	}
	return nil
}

// ListChanged implements registry.ChangeLister over the store's revision.
func (r *Repo) ListChanged(ctx context.Context, prefix string, since registry.Version, max int) (registry.Changed, bool, error) {
	if err := r.check(ctx, "list", prefix); err != nil {
		return registry.Changed{}, true, err
	}
	under := strings.TrimSuffix(prefix, "/") + "/"
	r.st.mu.Lock()
	out := registry.Changed{Rev: registry.Version(r.st.rev)}
	for k, e := range r.st.kv {
		if !strings.HasPrefix(k, under) {
			continue
		}
		out.Count++
		if registry.Version(e.version) > since {
			out.KVs = append(out.KVs, registry.KV{Key: k, Value: slices.Clone(e.value), Version: registry.Version(e.version)})
		}
	}
	r.st.mu.Unlock()
	if len(out.KVs) > max {
		out.KVs, out.Truncated = nil, true
		return out, true, nil
	}
	slices.SortFunc(out.KVs, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) })
	return out, true, nil
}
