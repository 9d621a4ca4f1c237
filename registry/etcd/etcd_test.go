package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens a Repo on the real test server and closes it at cleanup.
func open(t *testing.T, endpoints []string, ns string) *Repo {
	t.Helper()
	r, err := Open(testenv.Context(t), Config{Endpoints: endpoints, Namespace: ns, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestNamespaceIsRawPrefix(t *testing.T) {
	eps := testenv.EtcdEndpoints(t)
	ns := testenv.Namespace("governance_ds_")
	r := open(t, eps, ns)
	if _, err := r.Put(testenv.Context(t), "/nodes/compute_nodes/status/i1", []byte("OK")); err != nil {
		t.Fatal(err)
	}
	raw := r.Client()
	resp, err := raw.Get(testenv.Context(t), ns+"/nodes/compute_nodes/status/i1")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "OK" {
		t.Fatalf("raw etcd key %s/nodes/... = %v, want OK", ns, resp.Kvs)
	}
	// A key written by a ShardingSphere node (jetcd, raw prefix) is read back.
	if _, err := raw.Put(testenv.Context(t), ns+"/states/cluster_state", "OK"); err != nil {
		t.Fatal(err)
	}
	kv, err := r.Get(testenv.Context(t), "/states/cluster_state")
	if err != nil || string(kv.Value) != "OK" {
		t.Fatalf("Get of a raw-written key = %v, %v", kv, err)
	}
	// Nothing leaks to a namespace that merely shares the name prefix.
	other := open(t, eps, ns+"x")
	if kids, err := other.Children(testenv.Context(t), "/"); err != nil || len(kids) != 0 {
		t.Fatalf("namespace %sx sees %v, %v", ns, kids, err)
	}
	if err := r.Delete(testenv.Context(t), "/"); err != nil {
		t.Fatal(err)
	}
	resp, err = raw.Get(testenv.Context(t), ns+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Fatalf("Delete(/) left %d keys (%v)", resp.Count, err)
	}
}

func TestDeleteLeavesNamePrefixSiblings(t *testing.T) {
	eps := testenv.EtcdEndpoints(t)
	r := open(t, eps, testenv.Namespace("sk_del_"))
	c := testenv.Context(t)
	for _, k := range []string{"/metadata/db1", "/metadata/db1/schemas/s", "/metadata/db10/x", "/metadata/db1-x", "/metadata/db1.bak"} {
		if _, err := r.Put(c, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Delete(c, "/metadata/db1"); err != nil {
		t.Fatal(err)
	}
	kids, err := r.Children(c, "/metadata")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"db1-x", "db1.bak", "db10"}; !slices.Equal(kids, want) {
		t.Fatalf("after Delete(/metadata/db1): Children = %v, want %v", kids, want)
	}
}

func TestChildrenPagesAndSkipsSubtrees(t *testing.T) {
	eps := testenv.EtcdEndpoints(t)
	r := open(t, eps, testenv.Namespace("sk_kids_"))
	r.childrenPage = 7
	c := testenv.Context(t)
	// Names that interleave in byte order with their subtrees ("a-x" sorts
	// between "a" and "a/..."), a big subtree, and many leaves.
	var ops []clientv3.Op
	want := []string{}
	put := func(k string) { ops = append(ops, clientv3.OpPut(r.full(k), "v")) }
	for _, n := range []string{"a", "a-x", "a.b", "b"} {
		put("/t/" + n)
		want = append(want, n)
	}
	for i := range 40 {
		put(fmt.Sprintf("/t/a/sub%02d/leaf", i))
		put(fmt.Sprintf("/t/a-x/sub%02d", i))
	}
	for i := range 30 {
		n := fmt.Sprintf("tbl%03d", i)
		put("/t/" + n)
		put("/t/" + n + "/columns/id")
		want = append(want, n)
	}
	put("/t0/outside")
	for chunk := range slices.Chunk(ops, 100) {
		if _, err := r.client.Txn(c).Then(chunk...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	got, err := r.Children(c, "/t")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Children(/t) = %v\nwant %v", got, want)
	}
	if got, _ := r.Children(c, "/"); !slices.Equal(got, []string{"t", "t0"}) {
		t.Fatalf("Children(/) = %v", got)
	}
	// List pages through the same subtree at one revision.
	all, err := r.List(c, "/t")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(ops)-1 || !slices.IsSortedFunc(all, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) }) {
		t.Fatalf("List(/t) returned %d keys (sorted: %v), want %d", len(all), slices.IsSortedFunc(all, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) }), len(ops)-1)
	}
}

func TestOpenUnreachable(t *testing.T) {
	start := time.Now()
	_, err := Open(context.Background(), Config{Endpoints: []string{"http://127.0.0.1:1"}, DialTimeout: 500 * time.Millisecond})
	if err == nil {
		t.Fatal("Open of an unreachable endpoint succeeded")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Open took %v with a 500ms dial timeout", d)
	}
	if !errors.Is(err, registry.ErrUnavailable) || !strings.Contains(err.Error(), "http://127.0.0.1:1") {
		t.Fatalf("error %q should wrap ErrUnavailable and name the endpoint", err)
	}
	t.Log(err)
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		ns string
		ok bool
	}{
		{"", true}, {"governance_ds", true}, {"/shardkeeper", true}, {"a/b", true},
		{"ns/", false}, {"/", false}, {"a//b", false}, {"a/../b", false}, {"a\nb", false}, {strings.Repeat("x", 256), false},
	} {
		err := Config{Endpoints: []string{"http://127.0.0.1:2379"}, Namespace: tc.ns}.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("namespace %q: Validate = %v, want ok=%v", tc.ns, err, tc.ok)
		}
	}
	err := Config{DialTimeout: -1, Password: "p"}.Validate()
	for _, want := range []string{"no endpoints", "negative dial timeout", "password set without a username"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate of a bad config = %v, want it to mention %q", err, want)
		}
	}
}

func TestBadKeyNeverWrites(t *testing.T) {
	eps := testenv.EtcdEndpoints(t)
	ns := testenv.Namespace("sk_bad_")
	r := open(t, eps, ns)
	for _, k := range []string{"x", "/a/../b", "/a/", "/a//b", "/a\x00b"} {
		if _, err := r.Put(testenv.Context(t), k, []byte("v")); !errors.Is(err, registry.ErrBadKey) {
			t.Fatalf("Put(%q) = %v, want ErrBadKey", k, err)
		}
	}
	resp, err := r.Client().Get(testenv.Context(t), ns, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Fatalf("refused keys wrote %d keys (%v)", resp.Count, err)
	}
}

// A watch that falls behind a compaction ends with ErrWatchLost.
func TestWatchCompacted(t *testing.T) {
	eps := testenv.EtcdEndpoints(t)
	r := open(t, eps, testenv.Namespace("sk_compact_"))
	c := testenv.Context(t)
	v1, err := r.Put(c, "/c/k", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := r.Put(c, "/c/k", []byte("2"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.client.Compact(c, int64(v2)); err != nil {
		t.Fatal(err)
	}
	// The watch a Watch call would have started right before the
	// compaction, from the revision after its snapshot.
	start, end := r.rangeOf("/c")
	wctx, cancel := context.WithCancel(c)
	defer cancel()
	wch := r.client.Watch(wctx, start, clientv3.WithRange(end), clientv3.WithRev(int64(v1)))
	out := make(chan registry.Event, 10)
	next := int64(v1)
	err = r.pump(c, "/c", wch, out, &next)
	if !errors.Is(err, registry.ErrWatchLost) {
		t.Fatalf("pump after compaction = %v, want ErrWatchLost", err)
	}
	t.Log(err)
}

// Close does not wait for a consumer that stopped reading, and every
// goroutine ends (TestMain checks for leaks).
func TestCloseWithSlowConsumer(t *testing.T) {
	eps := testenv.EtcdEndpoints(t)
	ctx0 := testenv.Context(t)
	r, err := Open(ctx0, Config{Endpoints: eps, Namespace: testenv.Namespace("sk_slow_")})
	if err != nil {
		t.Fatal(err)
	}
	_, ch, err := r.Watch(ctx0, "/s")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := r.NewSession(ctx0, registry.SessionOptions{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Lock(ctx0, "/s/lock"); err != nil {
		t.Fatal(err)
	}
	for i := range 2 * watchBuffer {
		if _, err := r.Put(ctx0, "/s/k", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- r.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a watch consumer that does not read")
	}
	for range ch {
	}
	<-sess.Done()
	if !errors.Is(sess.Err(), registry.ErrClosed) {
		t.Fatalf("session Err after Repo.Close = %v, want ErrClosed", sess.Err())
	}
}

// Keys that share the name prefix and sort inside the watched range
// ("/db1-x" and "/db1.bak" sort between "/db1" and "/db1/") are neither in
// the snapshot nor in the events.
func TestWatchIgnoresNamePrefixSiblings(t *testing.T) {
	eps := testenv.EtcdEndpoints(t)
	r := open(t, eps, testenv.Namespace("sk_wsib_"))
	c := testenv.Context(t)
	for _, k := range []string{"/m/db1", "/m/db1-x", "/m/db1.bak/y", "/m/db1/t"} {
		if _, err := r.Put(c, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	initial, ch, err := r.Watch(c, "/m/db1")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range initial {
		keys = append(keys, kv.Key)
	}
	if want := []string{"/m/db1", "/m/db1/t"}; !slices.Equal(keys, want) {
		t.Fatalf("snapshot keys %v, want %v", keys, want)
	}
	for _, k := range []string{"/m/db1-x", "/m/db1.bak/y", "/m/db1/t"} {
		if _, err := r.Put(c, k, []byte("w")); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case ev := <-ch:
		if ev.Err != nil || ev.KV.Key != "/m/db1/t" {
			t.Fatalf("first event %+v, want the put of /m/db1/t", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
}

// TestReplayChanges: on etcd ReplayChanges answers from the Repo's
// history (ok), also past writes that came while no call ran; not ok,
// with no error, from before the history's start, and from a revision
// etcd compacted (a client whose history would start there): the caller
// lists instead.
func TestReplayChanges(t *testing.T) {
	eps := testenv.EtcdEndpoints(t)
	ns := testenv.Namespace("sk_replay_")
	r := open(t, eps, ns)
	c := testenv.Context(t)
	barrier := registry.ReplayBound{Barrier: "/rp_barrier"}
	v1, err := r.Put(c, "/rp/k", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := r.Put(c, "/rp/k", []byte("2"))
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := registry.ReplayChanges(c, r, "/rp", v1, barrier, 10)
	if err != nil || !ok || len(got.Events) != 1 || got.Events[0].KV.Version != v2 {
		t.Fatalf("ReplayChanges since the first put = %+v, %v, %v; want the second put", got, ok, err)
	}
	v3, err := r.Put(c, "/rp/k", []byte("3"))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := registry.ReplayChanges(c, r, "/rp", got.Rev, barrier, 10); err != nil || !ok || len(got.Events) != 1 || got.Events[0].KV.Version != v3 {
		t.Fatalf("ReplayChanges of the running history = %+v, %v, %v; want the third put", got, ok, err)
	}
	if got, ok, err := registry.ReplayChanges(c, r, "/rp", v1-1, barrier, 10); ok || err != nil {
		t.Fatalf("ReplayChanges from before the history's start = %+v, %v, %v; want not ok, no error", got, ok, err)
	}
	if _, err := r.client.Compact(c, int64(v2)); err != nil {
		t.Fatal(err)
	}
	fresh := open(t, eps, ns)
	if got, ok, err := registry.ReplayChanges(c, fresh, "/rp", v1-1, barrier, 10); ok || err != nil {
		t.Fatalf("ReplayChanges from a compacted revision = %+v, %v, %v; want not ok, no error", got, ok, err)
	}
	if got, ok, err := registry.ReplayChanges(c, fresh, "/rp", v2, barrier, 10); err != nil || !ok || len(got.Events) != 1 || got.Events[0].KV.Version != v3 {
		t.Fatalf("ReplayChanges after a failed start = %+v, %v, %v; want the third put", got, ok, err)
	}
}

// TestReplayStartsNearTheCall: a history started by a call whose revision
// is far (more than historyWrites revisions) past since starts at that
// revision, not at since, and serves the next call.
func TestReplayStartsNearTheCall(t *testing.T) {
	eps := testenv.EtcdEndpoints(t)
	r := open(t, eps, testenv.Namespace("sk_replayfar_"))
	c := testenv.Context(t)
	v1, err := r.Put(c, "/rp/k", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	far := registry.ReplayBound{Through: v1 + historyWrites + 1}
	if got, ok, err := registry.ReplayChanges(c, r, "/rp", v1-1, far, 10); ok || err != nil {
		t.Fatalf("ReplayChanges far past since = %+v, %v, %v; want not ok, no error", got, ok, err)
	}
	r.mu.Lock()
	h := r.history
	r.mu.Unlock()
	h.mu.Lock()
	floor := h.floor
	h.mu.Unlock()
	if floor != int64(far.Through) {
		t.Fatalf("the history starts after revision %d, want %d", floor, far.Through)
	}
}
