package registry

import (
	"context"
	"errors"
)

// Exists reports whether key exists.
func Exists(ctx context.Context, r Repository, key string) (bool, error) {
	_, err := r.Get(ctx, key)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	default:
		return false, err
	}
}

// RangeReader is implemented by a Repository whose List is one range read
// on the server (etcd, memory). A ZooKeeper List walks the subtree with a
// request per node, so an algorithm that needs a few values out of a large
// subtree reads names and single keys there instead. Decorators forward it.
type RangeReader interface {
	ListIsRangeRead() bool
}

// ListIsRangeRead reports whether r's List is one range read on the server.
func ListIsRangeRead(r Repository) bool {
	rr, ok := r.(RangeReader)
	return ok && rr.ListIsRangeRead()
}
