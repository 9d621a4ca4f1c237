package httpapi

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
)

// TestRegistryErrorsCountFailuresOnly: a registry call answered "not
// found", "exists", "version mismatch" or "locked" worked and is not an
// error in shardkeeper_registry_errors_total (what the registry-errors
// alert reads); an unavailable registry or an expired session is.
func TestRegistryErrorsCountFailuresOnly(t *testing.T) {
	m := NewMetrics()
	for _, err := range []error{nil, registry.ErrNotFound, registry.ErrExists, registry.ErrBadVersion, registry.ErrLocked,
		fmt.Errorf("get /x: %w", registry.ErrNotFound), context.Canceled} {
		done, _ := m.Before(context.Background(), "get", "/x")
		done(err)
	}
	if got := m.ops[fault.OpIndex("get")].errors.Load(); got != 0 {
		t.Fatalf("%d errors counted for answers and a cancelled call, want 0", got)
	}
	for _, err := range []error{registry.ErrUnavailable, registry.ErrSessionExpired, errors.New("permission denied")} {
		done, _ := m.Before(context.Background(), "get", "/x")
		done(err)
	}
	if got := m.ops[fault.OpIndex("get")].errors.Load(); got != 3 {
		t.Fatalf("%d errors counted for 3 failures, want 3", got)
	}
}
