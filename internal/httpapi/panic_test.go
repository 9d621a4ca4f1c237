package httpapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestHandlerPanicIsItsRequestsError: a handler that panics (a bug) answers
// its request 500 with code 30000 naming the panic, logged with its stack;
// the server goes on answering, on the same connection too.
func TestHandlerPanicIsItsRequestsError(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	n := startNode(t, memory.New(), "panic", func(c *Config) { c.Logger = log })
	n.srv.mux.HandleFunc("GET /api/v1/panic", func(http.ResponseWriter, *http.Request) {
		panic("a bug in the handler")
	})
	for range 2 {
		r := get(t, n, "/api/v1/panic")
		r.apiError(t, http.StatusInternalServerError, 30000, "internal error in the HTTP handler of GET /api/v1/panic: a bug in the handler")
		if r := get(t, n, "/api/v1/status"); r.status != http.StatusOK {
			t.Fatalf("after the panic, /api/v1/status: %d %s", r.status, r.body)
		}
	}
	if got := logged.String(); !strings.Contains(got, "panicked") || !strings.Contains(got, "panic_test.go") {
		t.Errorf("the log lacks the panic with its stack:\n%s", got)
	}
}
