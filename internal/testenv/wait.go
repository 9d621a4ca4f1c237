package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"
)

// Timeout bounds every Context and every Eventually. It is generous because
// the test machines are small and shared: a test that needs it all has
// failed anyway.
const Timeout = 60 * time.Second

// Context returns a context that ends after Timeout or when the test (or
// subtest) t and its cleanups finish, whichever comes first.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

// Eventually polls cond every 20 ms until it returns true, and fails the
// test, naming what it waited for, when Timeout passes first. cond runs on
// the calling goroutine.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", Timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Namespace returns prefix followed by 8 random hex digits: a registry
// namespace (etcd key prefix, ZooKeeper root znode) or any other name that
// no other test or test run uses. prefix should be a valid name on its own,
// such as "sk_cluster_".
func Namespace(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b)
}
