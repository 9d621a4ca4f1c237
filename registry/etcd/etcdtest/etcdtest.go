// Package etcdtest is the test harness for the etcd backend, for tests of
// any package: a fresh namespace on a real etcd server and a real,
// server-side session expiry. It runs against the server the test
// environment names (internal/testenv), or against one a test starts itself
// (such as the embedded server), never against a stand-in.
//
// The etcd backend's own tests that need its internals cannot import this
// package (it imports the backend); its conformance test does, from the
// external test package.
package etcdtest

import (
	"context"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
)

// Server is a real etcd server that tests open clients on. New returns the
// test environment's; a test that runs its own server fills in the fields.
type Server struct {
	Endpoints []string
	// Username and Password authenticate the harness's own clients on a
	// server with authentication enabled; the user must be allowed to
	// revoke any lease and delete any key (root).
	Username, Password string
}

// New returns the etcd server of the test environment
// (testenv.EtcdEndpoints): without one, the test fails under
// scripts/test.sh and is skipped otherwise.
func New(t testing.TB) *Server {
	t.Helper()
	return &Server{Endpoints: testenv.EtcdEndpoints(t)}
}

// Config returns the configuration of a client of the etcd backend on
// namespace ns of the server, with the Server's credentials.
func (s *Server) Config(ns string) etcd.Config {
	return etcd.Config{Endpoints: s.Endpoints, Namespace: ns, Username: s.Username, Password: s.Password, DialTimeout: 5 * time.Second}
}

// Open opens a client of the etcd backend with Config(ns) and closes it at
// the test's cleanup. It fails the test when the server cannot be reached.
func (s *Server) Open(t testing.TB, ns string) *etcd.Repo {
	t.Helper()
	r, err := etcd.Open(testenv.Context(t), s.Config(ns))
	if err != nil {
		t.Fatalf("open etcd namespace %q: %v", ns, err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// Client returns a plain client of the server that sees every key, outside
// any namespace. It is closed at the test's cleanup.
func (s *Server) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	c, err := s.client()
	if err != nil {
		t.Fatalf("etcd client on %v: %v", s.Endpoints, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (s *Server) client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   s.Endpoints,
		Username:    s.Username,
		Password:    s.Password,
		DialTimeout: 5 * time.Second,
	})
}

// Namespace returns a fresh namespace (testenv.Namespace(prefix)) and
// deletes every key of it at the test's cleanup: the key named like the
// namespace and those under it, not those of a namespace that merely
// shares its name as a prefix. The deletion is registered now, so it runs
// after the cleanups registered later, such as those closing the test's
// clients. A failed deletion fails the test.
func (s *Server) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	ns := testenv.Namespace(prefix)
	t.Cleanup(func() {
		c, err := s.client()
		if err != nil {
			t.Errorf("drop namespace %s: %v", ns, err)
			return
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.Txn(ctx).Then(clientv3.OpDelete(ns), clientv3.OpDelete(ns+"/", clientv3.WithPrefix())).Commit(); err != nil {
			t.Errorf("drop namespace %s: %v", ns, err)
		}
	})
	return ns
}

// ExpireSession makes the server end sess the way a lost lease would, not
// the way Close does: it revokes the session's lease through a second
// client. The server deletes the session's keys and releases its locks at
// once; sess's owner learns of it from its keep-alive, and then Done is
// closed. sess must be a session of the etcd backend on this server (its
// ID is the lease ID in hex). It fails the test when the revoke fails.
func (s *Server) ExpireSession(t testing.TB, sess registry.Session) {
	t.Helper()
	lease, err := strconv.ParseInt(sess.ID(), 16, 64)
	if err != nil {
		t.Fatalf("etcd session ID %q is not a lease ID: %v", sess.ID(), err)
	}
	c, err := s.client()
	if err != nil {
		t.Fatalf("revoke lease %s: %v", sess.ID(), err)
	}
	defer c.Close()
	if _, err := c.Revoke(testenv.Context(t), clientv3.LeaseID(lease)); err != nil {
		t.Fatalf("revoke lease %s: %v", sess.ID(), err)
	}
}
