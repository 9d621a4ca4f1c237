package embedded

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
	"github.com/shardkeeper/shardkeeper/registry/registrytest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// freeURL returns an http URL on a loopback port that was free a moment ago.
func freeURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

func start(t *testing.T, c Config) *Server {
	t.Helper()
	s, err := Start(testenv.Context(t), c)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	s := start(t, Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0"})
	eps := s.Endpoints()
	srv := &etcdtest.Server{Endpoints: eps, Username: RootUser, Password: s.Credentials().Password}
	registrytest.Run(t, registrytest.Harness{
		New: func(t *testing.T, ns string) registry.Repository {
			r, err := etcd.Open(testenv.Context(t), etcd.Config{Endpoints: eps, Namespace: ns, Username: RootUser, Password: s.Credentials().Password})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Close() })
			return r
		},
		ExpireSession: func(t *testing.T, sess registry.Session) { srv.ExpireSession(t, sess) },
		LoseWatches:   func(t *testing.T, repo registry.Repository) { repo.(*etcd.Repo).CloseWatches() },
	})
}

func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, ClientURL: freeURL(t), PeerURL: freeURL(t), Namespace: "governance_ds"}
	r, err := Open(testenv.Context(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Put(testenv.Context(t), "/metadata/db1/active_version", []byte("0"))
	if err != nil {
		t.Fatal(err)
	}
	// A second plain etcd client, as another node would use it, reads the
	// write under the raw namespace prefix.
	creds, err := LoadCredentials(dir)
	if err != nil {
		t.Fatal(err)
	}
	other, err := etcd.Open(testenv.Context(t), etcd.Config{Endpoints: r.Server().Endpoints(), Namespace: "governance_ds", Username: creds.Username, Password: creds.Password})
	if err != nil {
		t.Fatal(err)
	}
	if kv, err := other.Get(testenv.Context(t), "/metadata/db1/active_version"); err != nil || string(kv.Value) != "0" || kv.Version != v {
		t.Fatalf("second client Get = %v, %v", kv, err)
	}
	raw := other.Client()
	if resp, err := raw.Get(testenv.Context(t), "governance_ds/metadata/db1/active_version"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw Get = %v, %v", resp, err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}

	// The directory is locked while the server runs.
	if _, err := Start(testenv.Context(t), Config{Dir: dir, ClientURL: "http://127.0.0.1:0"}); !errors.Is(err, ErrDirInUse) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Start on a directory in use = %v, want an error saying so", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(testenv.Context(t), "/metadata/db1/active_version"); err == nil {
		t.Fatal("Get after Close succeeded")
	}

	r2, err := Open(testenv.Context(t), cfg)
	if err != nil {
		t.Fatalf("restart on the same dir: %v", err)
	}
	defer r2.Close()
	kv, err := r2.Get(testenv.Context(t), "/metadata/db1/active_version")
	if err != nil || string(kv.Value) != "0" || kv.Version != v {
		t.Fatalf("after restart Get = %v, %v (version before: %d)", kv, err, v)
	}
}

func TestPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = Start(testenv.Context(t), Config{Dir: t.TempDir(), ClientURL: "http://" + l.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "port is taken") || !strings.Contains(err.Error(), "set another clientUrl") {
		t.Fatalf("Start on a taken port = %v, want an error saying so and naming the clientUrl prop", err)
	}
	t.Log(err)
}

func TestConfigErrors(t *testing.T) {
	_, err := Start(testenv.Context(t), Config{ClientURL: "https://127.0.0.1:1", PeerURL: "http://127.0.0.1", Namespace: "ns/"})
	for _, want := range []string{"no data directory", "ClientURL", "has no port", "namespace"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Start with a bad config = %v, want it to mention %q", err, want)
		}
	}
}

// Username and password reach the server; wrong ones fail Open with a clear
// error. (The shared etcd 3.4 test server runs without auth, so this uses an
// embedded server of its own, which has auth on with its root user. Its
// bcrypt checks are slow under -race: hence the long dial timeouts.)
func TestAuth(t *testing.T) {
	s := start(t, Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0"})
	admin := rootClient(t, s)
	c := testenv.Context(t)
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(c, "sk", "skpw"); return err },
		func() error { _, err := admin.RoleAdd(c, "sk"); return err },
		func() error {
			_, err := admin.RoleGrantPermission(c, "sk", "governance_ds/", clientv3.GetPrefixRangeEnd("governance_ds/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := admin.UserGrantRole(c, "sk", "sk"); return err },
	} {
		if err := step(); err != nil {
			t.Fatalf("auth setup: %v", err)
		}
	}
	r, err := etcd.Open(c, etcd.Config{Endpoints: s.Endpoints(), Namespace: "governance_ds", Username: "sk", Password: "skpw", DialTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("Open with credentials: %v", err)
	}
	defer r.Close()
	if _, err := r.Put(c, "/nodes/x", []byte("v")); err != nil {
		t.Fatalf("Put with credentials: %v", err)
	}
	_, err = etcd.Open(c, etcd.Config{Endpoints: s.Endpoints(), Namespace: "governance_ds", Username: "sk", Password: "wrong", DialTimeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "rejected user") {
		t.Fatalf("Open with a wrong password = %v, want a credentials error", err)
	}
	t.Log(err)
	// Outside its role's range the user is refused, with a clear error.
	other, err := etcd.Open(c, etcd.Config{Endpoints: s.Endpoints(), Namespace: "elsewhere", Username: "sk", Password: "skpw", DialTimeout: 20 * time.Second})
	if err == nil {
		other.Close()
		t.Fatal("Open on a namespace the user may not read succeeded")
	}
	t.Log(err)
}

// TestMaxRequestBytes: the embedded server takes the request limit it is
// given, and its repository checks writes against the same limit: at
// 64 KiB a 100 KB value is refused with registry.ErrTooLarge before it is
// sent, and the server itself refuses it from a client that does not
// check; at 4 MiB a 3 MB value, beyond etcd's default 1.5 MiB, is written.
func TestMaxRequestBytes(t *testing.T) {
	ctx := testenv.Context(t)
	small, err := Open(ctx, Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0", Namespace: "ns", MaxRequestBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	value := make([]byte, 100_000)
	if _, err := small.Put(ctx, "/big", value); !errors.Is(err, registry.ErrTooLarge) {
		t.Fatalf("100 KB under a 64 KiB limit: %v, want registry.ErrTooLarge", err)
	}
	if _, err := small.Client().Put(ctx, "ns/big", string(value)); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("100 KB sent unchecked to a server of a 64 KiB limit: %v, want the server's refusal", err)
	}
	if _, err := small.Put(ctx, "/fits", value[:60_000]); err != nil {
		t.Fatalf("60 KB under a 64 KiB limit: %v", err)
	}

	large, err := Open(ctx, Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0", Namespace: "ns", MaxRequestBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer large.Close()
	if _, err := large.Put(ctx, "/big", make([]byte, 3_000_000)); err != nil {
		t.Fatalf("3 MB under a 4 MiB limit: %v", err)
	}
}
