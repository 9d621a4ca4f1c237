package registrytest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// env is one test's view of the backend: a fresh namespace and a way to open
// clients on it.
type env struct {
	t  *testing.T
	h  Harness
	ns string
}

func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	return &env{t: t, h: h, ns: testenv.Namespace("sk_test_")}
}

// open opens a client on the test's namespace and closes it at cleanup.
func (e *env) open() registry.Repository {
	e.t.Helper()
	r := e.h.New(e.t, e.ns)
	e.t.Cleanup(func() { _ = r.Close() })
	return r
}

// session starts a session on r and closes it at cleanup.
func (e *env) session(r registry.Repository, ttl time.Duration) registry.Session {
	e.t.Helper()
	s, err := r.NewSession(testenv.Context(e.t), registry.SessionOptions{TTL: ttl})
	if err != nil {
		e.t.Fatalf("NewSession: %v", err)
	}
	e.t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		_ = s.Close(c)
	})
	return s
}

func mustPut(t *testing.T, r registry.Repository, key, value string) registry.Version {
	t.Helper()
	v, err := r.Put(testenv.Context(t), key, []byte(value))
	if err != nil {
		t.Fatalf("Put(%s): %v", key, err)
	}
	return v
}

func mustGet(t *testing.T, r registry.Repository, key string) registry.KV {
	t.Helper()
	kv, err := r.Get(testenv.Context(t), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	return kv
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
	var op *registry.OpError
	if !errors.As(err, &op) {
		t.Fatalf("%s: error %v (%T) is not a *registry.OpError", what, err, err)
	}
}

func exists(t *testing.T, r registry.Repository, key string) bool {
	t.Helper()
	ok, err := registry.Exists(testenv.Context(t), r, key)
	if err != nil {
		t.Fatalf("Exists(%s): %v", key, err)
	}
	return ok
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
