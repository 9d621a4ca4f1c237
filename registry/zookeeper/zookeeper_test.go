package zookeeper_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/registrytest"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	zs := zktest.New(t)
	var dropped sync.Map
	registrytest.Run(t, registrytest.Harness{
		New: func(t *testing.T, ns string) registry.Repository {
			if _, seen := dropped.LoadOrStore(ns, true); !seen {
				// Registered first, so it runs after every client of the test closed.
				t.Cleanup(func() { zs.DropNamespace(t, ns, "") })
			}
			return zs.Open(t, ns)
		},
		ExpireSession: func(t *testing.T, sess registry.Session) { zs.ExpireSession(t, sess) },
		LoseWatches: func(t *testing.T, repo registry.Repository) {
			zs.Expire(t, repo.(*zookeeper.Repo).Conn().SessionID())
		},
		NullKeys: func(t *testing.T, ns string) []string { return zs.NullKeys(t, ns) },
		BetweenReadAndWrite: func(t *testing.T, repo registry.Repository, fn func()) {
			zookeeper.SetBetweenReadAndWrite(repo.(*zookeeper.Repo), fn)
		},
	})
}

// openDigest opens a client on ns that authenticates with digest.
func openDigest(t *testing.T, zs *zktest.Server, ns, digest string) *zookeeper.Repo {
	t.Helper()
	cfg := zs.Config(ns)
	cfg.Digest = digest
	r, err := zookeeper.Open(testenv.Context(t), cfg)
	if err != nil {
		t.Fatalf("Open with digest %q: %v", digest, err)
	}
	return r
}

func TestNamespaceIsRootZnode(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "governance_ds_")
	r := zs.Open(t, "/"+ns)
	defer r.Close()
	ctx := testenv.Context(t)
	if _, err := r.Put(ctx, "/nodes/compute_nodes/online/proxy/i1", []byte("attr")); err != nil {
		t.Fatal(err)
	}
	data, _, err := r.Conn().Get("/" + ns + "/nodes/compute_nodes/online/proxy/i1")
	if err != nil || string(data) != "attr" {
		t.Fatalf("raw znode = %q, %v", data, err)
	}
	kids, _, err := r.Conn().Children("/" + ns)
	if err != nil || len(kids) != 1 || kids[0] != "nodes" {
		t.Fatalf("children of the namespace root = %v, %v", kids, err)
	}
	// Parents are keys with empty values.
	kv, err := r.Get(ctx, "/nodes/compute_nodes")
	if err != nil || len(kv.Value) != 0 {
		t.Fatalf("parent Get = %q, %v", kv.Value, err)
	}
	if _, err := r.Put(ctx, "/", []byte("x")); !errors.Is(err, registry.ErrBadKey) {
		t.Fatalf("Put(/) = %v, want ErrBadKey", err)
	}
}

func TestVersionIsMzxid(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_versions_")
	r := zs.Open(t, ns)
	defer r.Close()
	ctx := testenv.Context(t)
	v1, err := r.Create(ctx, "/k", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	_, stat1, _ := r.Conn().Get("/" + ns + "/k")
	if registry.Version(stat1.Mzxid) != v1 {
		t.Fatalf("Create returned v%d, znode Mzxid %d", v1, stat1.Mzxid)
	}
	if err := r.Delete(ctx, "/k"); err != nil {
		t.Fatal(err)
	}
	v2, err := r.Put(ctx, "/k", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	_, stat2, _ := r.Conn().Get("/" + ns + "/k")
	if stat1.Version != stat2.Version {
		t.Logf("znode data versions %d, %d", stat1.Version, stat2.Version)
	}
	if v1 == v2 {
		t.Fatalf("version v%d repeated after delete and re-create (the per-node Version would: %d, %d)", v1, stat1.Version, stat2.Version)
	}
	if _, err := r.Update(ctx, "/k", []byte("b"), v1); !errors.Is(err, registry.ErrBadVersion) {
		t.Fatalf("Update with the old incarnation's version = %v, want ErrBadVersion", err)
	}
	if _, err := r.Update(ctx, "/k", []byte("b"), v2); err != nil {
		t.Fatalf("Update with the current version: %v", err)
	}
}

func TestDeleteLeavesNamePrefixSiblings(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_delete_")
	r := zs.Open(t, ns)
	defer r.Close()
	ctx := testenv.Context(t)
	for _, k := range []string{"/metadata/db1/schemas/s", "/metadata/db10/schemas/s", "/metadata/db1x"} {
		if _, err := r.Put(ctx, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Delete(ctx, "/metadata/db1"); err != nil {
		t.Fatal(err)
	}
	kids, err := r.Children(ctx, "/metadata")
	if err != nil || strings.Join(kids, ",") != "db10,db1x" {
		t.Fatalf("Children(/metadata) = %v, %v; want [db10 db1x]", kids, err)
	}
}

func TestOpenUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	start := time.Now()
	_, err = zookeeper.Open(context.Background(), zookeeper.Config{Servers: []string{addr}, Namespace: "ns", ConnectTimeout: 1500 * time.Millisecond})
	took := time.Since(start)
	if !errors.Is(err, registry.ErrUnavailable) {
		t.Fatalf("Open = %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Fatalf("error does not name the server %s: %v", addr, err)
	}
	if took > 5*time.Second {
		t.Fatalf("Open took %v with a 1.5s connect timeout", took)
	}
	t.Log(err)

	// ctx bounds it too.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := zookeeper.Open(ctx, zookeeper.Config{Servers: []string{addr}, Namespace: "ns"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Open with a short ctx = %v, want DeadlineExceeded", err)
	}
}

func TestConfigValidate(t *testing.T) {
	err := zookeeper.Config{Digest: "nocolon", SessionTimeout: -1}.Validate()
	for _, want := range []string{"Servers", "Namespace", "Digest", "SessionTimeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Validate = %v, want a problem with %s", err, want)
		}
	}
}

func TestDigestACL(t *testing.T) {
	zs := zktest.New(t)
	ns := testenv.Namespace("sk_digest_")
	const digest = "shardkeeper:s3cret"
	t.Cleanup(func() { zs.DropNamespace(t, ns, digest) })
	owner := openDigest(t, zs, ns, digest)
	defer owner.Close()
	ctx := testenv.Context(t)
	if _, err := owner.Put(ctx, "/props", []byte("secret")); err != nil {
		t.Fatal(err)
	}
	sess, err := owner.NewSession(ctx, registry.SessionOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	if err := sess.PutEphemeral(ctx, "/nodes/i1", []byte("e")); err != nil {
		t.Fatal(err)
	}
	// The same credentials on another client can read and write.
	friend := openDigest(t, zs, ns, digest)
	defer friend.Close()
	if kv, err := friend.Get(ctx, "/props"); err != nil || string(kv.Value) != "secret" {
		t.Fatalf("same digest Get = %q, %v", kv.Value, err)
	}
	// A Watch's recursive watch authenticates too: it registers on the
	// protected namespace and reports the keys another client creates.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	initial, ch, err := owner.Watch(wctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	if n := zookeeper.RecursiveWatches(owner); n != 1 {
		t.Fatalf("%d recursive watches with digest auth, want 1", n)
	}
	state := map[string]string{}
	for _, kv := range initial {
		apply(t, state, registry.Event{Type: registry.EventPut, KV: kv})
	}
	if _, err := friend.Put(ctx, "/new/key", []byte("v")); err != nil {
		t.Fatal(err)
	}
	follow(t, ch, state, "/new/key", "v")
	cancel()
	for _, d := range []string{"", "shardkeeper:wrong", "other:s3cret"} {
		stranger := openDigest(t, zs, ns, d)
		for _, k := range []string{"/props", "/nodes/i1"} {
			if _, err := stranger.Get(ctx, k); err == nil || !strings.Contains(err.Error(), "permission denied") {
				t.Fatalf("digest %q: Get(%s) = %v, want permission denied", d, k, err)
			}
		}
		if _, err := stranger.Put(ctx, "/props", []byte("evil")); err == nil {
			t.Fatalf("digest %q: Put over a protected key succeeded", d)
		}
		if _, err := stranger.Put(ctx, "/newkey", []byte("evil")); err == nil {
			t.Fatalf("digest %q: Put under the protected namespace root succeeded", d)
		}
		stranger.Close()
	}
	acl, _, err := owner.Conn().GetACL("/" + ns + "/props")
	if err != nil || len(acl) != 1 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, "shardkeeper:") {
		t.Fatalf("ACL = %+v, %v; want one digest ACL for shardkeeper", acl, err)
	}
}

func TestSessionTakesOverForeignEphemeral(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_takeover_")
	r := zs.Open(t, ns)
	defer r.Close()
	ctx := testenv.Context(t)
	s1, err := r.NewSession(ctx, registry.SessionOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close(ctx)
	s2, err := r.NewSession(ctx, registry.SessionOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.PutEphemeral(ctx, "/online/i1", []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := s2.PutEphemeral(ctx, "/online/i1", []byte("new")); err != nil {
		t.Fatal(err)
	}
	_, stat, err := r.Conn().Get("/" + ns + "/online/i1")
	if err != nil || fmt.Sprintf("0x%x", stat.EphemeralOwner) != s2.ID() {
		t.Fatalf("owner = 0x%x, %v; want session 2", stat.EphemeralOwner, err)
	}
	if err := s2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _ := registry.Exists(ctx, r, "/online/i1"); ok {
		t.Fatal("the key outlived the session that took it over")
	}
}

func TestLockQueueCleanedOnTimeout(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_lock_")
	r := zs.Open(t, ns)
	defer r.Close()
	ctx := testenv.Context(t)
	s1, _ := r.NewSession(ctx, registry.SessionOptions{TTL: 5 * time.Second})
	defer s1.Close(ctx)
	s2, _ := r.NewSession(ctx, registry.SessionOptions{TTL: 5 * time.Second})
	defer s2.Close(ctx)
	l, err := s1.Lock(ctx, "/lock/x")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = s2.Lock(short, "/lock/x")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v", err)
	}
	if _, err := s2.TryLock(ctx, "/lock/x"); !errors.Is(err, registry.ErrLocked) {
		t.Fatalf("TryLock = %v", err)
	}
	kids, _ := r.Children(ctx, "/lock/x")
	if len(kids) != 1 {
		t.Fatalf("queue = %v, want only the holder's node", kids)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, registry.ErrLockNotHeld) {
		t.Fatalf("second Unlock = %v", err)
	}
}

// Curator interop: a Curator-named node with a lower sequence holds the lock.
func TestLockOrdersBySequence(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_lockseq_")
	r := zs.Open(t, ns)
	defer r.Close()
	ctx := testenv.Context(t)
	if _, err := r.Put(ctx, "/lock/y", nil); err != nil {
		t.Fatal(err)
	}
	// A foreign holder, as Curator would name it.
	foreign, err := r.Conn().Create("/"+ns+"/lock/y/_c_0000-lock-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := r.NewSession(ctx, registry.SessionOptions{TTL: 5 * time.Second})
	defer s.Close(ctx)
	if _, err := s.TryLock(ctx, "/lock/y"); !errors.Is(err, registry.ErrLocked) {
		t.Fatalf("TryLock with a Curator holder = %v, want ErrLocked", err)
	}
	if err := r.Conn().Delete(foreign, -1); err != nil {
		t.Fatal(err)
	}
	l, err := s.TryLock(ctx, "/lock/y")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Unlock(ctx)
}

// The TreeCache-style watch ends up with the server's tree after a burst of
// creates, updates, subtree deletes and re-creates at several depths, from
// two writers at once.
func TestWatchConvergesUnderChurn(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_churn_")
	r := zs.Open(t, ns)
	defer r.Close()
	ctx := testenv.Context(t)
	_, ch, err := r.Watch(ctx, "/t")
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]string{}
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		writer := zs.Open(t, ns)
		defer writer.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 150; i++ {
				var b [3]byte
				_, _ = rand.Read(b[:])
				k := "/t/" + string('a'+rune(b[0]%3)) + "/" + string('a'+rune(b[1]%3)) + "/" + string('a'+rune(b[2]%2))
				var err error
				switch b[0] % 5 {
				case 0:
					err = writer.Delete(ctx, k[:len("/t/a")])
				case 1:
					err = writer.Delete(ctx, k[:len("/t/a/a")])
				default:
					_, err = writer.Put(ctx, k, []byte(hex.EncodeToString(b[:])))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if _, err := r.Put(ctx, "/t/done", []byte("1")); err != nil {
		t.Fatal(err)
	}
	for state["/t/done"] != "1" {
		ev := <-ch
		if ev.Err != nil {
			t.Fatal(ev.Err)
		}
		if ev.Type == registry.EventPut {
			state[ev.KV.Key] = string(ev.KV.Value)
		} else {
			delete(state, ev.KV.Key)
		}
	}
	initial, _, err := r.Watch(ctx, "/t")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, kv := range initial {
		want[kv.Key] = string(kv.Value)
	}
	if len(want) != len(state) {
		t.Errorf("watch state has %d keys, server %d", len(state), len(want))
	}
	for k, v := range want {
		if got, ok := state[k]; !ok || got != v {
			t.Errorf("%s: watch state %q (present %v), server %q", k, got, ok, v)
		}
	}
}

// TestNullZnodesRewritten: znodes an older version of this package created
// with null data (its parents and lock nodes) are rewritten as empty when
// Open, Get, List or a Watch's loading reads them, with the version the
// rewrite made, so a CAS on what was read still succeeds.
func TestNullZnodesRewritten(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_null_")
	conn, _, err := zk.Connect(zs.Servers, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"", "/get", "/list", "/list/a", "/list/a/b", "/watch", "/watch/a", "/watch/a/b", "/unread"} {
		if _, err := conn.Create("/"+ns+p, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	if got := zs.NullKeys(t, ns); len(got) != 9 {
		t.Fatalf("null keys written = %v, want 9", got)
	}
	r := zs.Open(t, ns)
	defer r.Close()
	ctx := testenv.Context(t)
	kv, err := r.Get(ctx, "/get")
	if err != nil || kv.Value == nil || len(kv.Value) != 0 {
		t.Fatalf("Get of a null znode = %#v, %v", kv.Value, err)
	}
	if _, err := r.Update(ctx, "/get", []byte("x"), kv.Version); err != nil {
		t.Fatalf("Update at the version Get returned: %v", err)
	}
	list, err := r.List(ctx, "/list")
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v", list, err)
	}
	for _, kv := range list {
		if kv.Value == nil {
			t.Fatalf("List returned %s with a nil value", kv.Key)
		}
		if _, err := r.Update(ctx, kv.Key, []byte("y"), kv.Version); err != nil {
			t.Fatalf("Update of %s at the version List returned: %v", kv.Key, err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	initial, events, err := r.Watch(wctx, "/watch")
	if err != nil || len(initial) != 3 {
		t.Fatalf("Watch initial = %v, %v", initial, err)
	}
	for _, kv := range initial {
		if kv.Value == nil {
			t.Fatalf("Watch returned %s with a nil value", kv.Key)
		}
	}
	// The rewrite is not reported as a change: the next event is ours.
	if _, err := r.Put(ctx, "/watch/a/b", []byte("z")); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.Err != nil || ev.KV.Key != "/watch/a/b" || string(ev.KV.Value) != "z" {
			t.Fatalf("first event after the load = %+v, want the put of /watch/a/b", ev)
		}
	case <-time.After(registrytest.Timeout):
		t.Fatal("no event")
	}
	// List reads below its prefix, not the prefix itself.
	if got := zs.NullKeys(t, ns); !slices.Equal(got, []string{"/list", "/unread"}) {
		t.Fatalf("null keys after the reads = %v, want only the unread /list and /unread", got)
	}
}

// freezer makes the connections dialed through it behave as if the server
// stopped (SIGSTOP): while frozen, writes are swallowed and reads return
// nothing until their deadline. Thaw closes the connections.
type freezer struct {
	mu     sync.Mutex
	frozen bool
	thaw   chan struct{} // closed at Thaw
	conns  []net.Conn
}

func (f *freezer) Freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen, f.thaw = true, make(chan struct{})
}

func (f *freezer) Thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen {
		f.frozen = false
		close(f.thaw)
		// What was swallowed is lost: the connections go, as a stopped
		// server's would when it is killed and restarted.
		for _, c := range f.conns {
			c.Close()
		}
		f.conns = nil
	}
}

func (f *freezer) state() (bool, chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frozen, f.thaw
}

func (f *freezer) dial(base zk.Dialer) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := base(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		return &frozenConn{Conn: c, f: f}, nil
	}
}

type frozenConn struct {
	net.Conn
	f        *freezer
	mu       sync.Mutex
	deadline time.Time
}

func (c *frozenConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *frozenConn) Read(p []byte) (int, error) {
	for {
		frozen, thaw := c.f.state()
		if !frozen {
			return c.Conn.Read(p)
		}
		c.mu.Lock()
		d := c.deadline
		c.mu.Unlock()
		var timeout <-chan time.Time
		if !d.IsZero() {
			timer := time.NewTimer(time.Until(d))
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case <-thaw:
		case <-timeout:
			return 0, os.ErrDeadlineExceeded
		}
	}
}

func (c *frozenConn) Write(p []byte) (int, error) {
	if frozen, _ := c.f.state(); frozen {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// TestStoppedServerFailsFast: with the server stopped (no answers, the
// connection open), a request in flight fails when the client gives up on
// the connection (2/3 of the session timeout), and a request made while the
// client reconnects fails within ConnectTimeout with ErrUnavailable naming
// the servers, instead of waiting for the handshake's deadline (ten times
// the read timeout). Once the server answers again, requests succeed.
func TestStoppedServerFailsFast(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_stopped_")
	f := &freezer{}
	cfg := zs.Config(ns)
	cfg.SessionTimeout, cfg.ConnectTimeout, cfg.Dialer = 3*time.Second, time.Second, f.dial(zs.Dial)
	r, err := zookeeper.Open(testenv.Context(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := testenv.Context(t)
	if _, err := r.Put(ctx, "/k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	f.Freeze()
	defer f.Thaw()
	start := time.Now()
	_, err = r.Get(ctx, "/k")
	if !errors.Is(err, registry.ErrUnavailable) || time.Since(start) > 5*time.Second {
		t.Fatalf("Get in flight when the server stopped = %v after %v, want ErrUnavailable within 2/3 of 3 s", err, time.Since(start))
	}
	for i := range 2 {
		start = time.Now()
		_, err = r.Put(ctx, "/k", []byte("w"))
		took := time.Since(start)
		if !errors.Is(err, registry.ErrUnavailable) || took > 3*time.Second || !strings.Contains(err.Error(), zs.Servers[0]) {
			t.Fatalf("Put %d while reconnecting = %v after %v, want ErrUnavailable naming %s within the 1 s connect timeout", i, err, took, zs.Servers[0])
		}
		t.Logf("Put %d while the server is stopped: %v after %v", i, err, took.Round(time.Millisecond))
	}
	f.Thaw()
	testenv.Eventually(t, "a Get once the server answers again", func() bool {
		kv, err := r.Get(ctx, "/k")
		return err == nil && string(kv.Value) == "v"
	})
}
