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
