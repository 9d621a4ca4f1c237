package metered

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

func TestInstrumentKeepsRangeReads(t *testing.T) {
	if !registry.ListIsRangeRead(New().Instrument(memory.New())) {
		t.Fatal("the instrumented repository hides the backend's range reads")
	}
}

// TestRegistryErrorsCountFailuresOnly: a registry call answered "not
// found", "exists", "version mismatch" or "locked" worked and is not an
// error in shardkeeper_registry_errors_total (what the registry-errors
// alert reads); an unavailable registry or an expired session is.
func TestRegistryErrorsCountFailuresOnly(t *testing.T) {
	m := New()
	h := hook{m}
	for _, err := range []error{nil, registry.ErrNotFound, registry.ErrExists, registry.ErrBadVersion, registry.ErrLocked,
		fmt.Errorf("get /x: %w", registry.ErrNotFound), context.Canceled} {
		done, _ := h.Before(context.Background(), "get", "/x")
		done(err)
	}
	if got := testutil.ToFloat64(m.errs.WithLabelValues("get")); got != 0 {
		t.Fatalf("%v errors counted for answers and a cancelled call, want 0", got)
	}
	for _, err := range []error{registry.ErrUnavailable, registry.ErrSessionExpired, errors.New("permission denied")} {
		done, _ := h.Before(context.Background(), "get", "/x")
		done(err)
	}
	if got := testutil.ToFloat64(m.errs.WithLabelValues("get")); got != 3 {
		t.Fatalf("%v errors counted for 3 failures, want 3", got)
	}
}
