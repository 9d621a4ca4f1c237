package zookeeper_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

const (
	opGetData     = 4
	opGetChildren = 8
	opMultiRead   = 22
)

// putTables writes n tables under /m/t in one Commit (versionedTxn), the
// shape of the metadata a node loads, and returns what List must return.
func putTables(t *testing.T, r registry.Repository, n int) map[string]string {
	t.Helper()
	ctx := testenv.Context(t)
	sess, err := r.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Close(ctx) }()
	if _, err := sess.Commit(ctx, versionedTxn("/m/t", 0, n)); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/m": "", "/m/t": ""}
	for i := range n {
		table := fmt.Sprintf("/m/t/t_%05d", i)
		want[table], want[table+"/versions"] = "", ""
		want[table+"/active_version"], want[table+"/versions/0"] = "0", fmt.Sprintf("table %d", i)
	}
	return want
}

// A List of a large subtree reads it with a few multiRead requests (at
// most 128 reads each) instead of a request per znode, and returns
// every key with its value.
func TestListReadsLevelsWithMultiRead(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_multiread_")
	want := putTables(t, zs.Open(t, ns), 300)
	d := &dialRecorder{zs: zs}
	r := openDialed(t, zs, ns, d)
	if got := listed(t, r, "/m"); !maps.Equal(got, want) {
		t.Fatalf("List returned %d keys, want %d", len(got), len(want))
	}
	// /m and /m/t are read one request each (a level of fewer than 64),
	// then per level the data, then the children of the parents: the
	// tables (300 + 300 reads: 3 + 3 requests), active_version and
	// versions (600 + 300: 5 + 3), versions/0 (300: 3).
	single := d.ops[opGetData].Load() + d.ops[opGetChildren].Load()
	if n := d.ops[opMultiRead].Load(); n != 17 || single > 10 {
		t.Fatalf("List sent %d multiRead requests and %d single reads, want 17 and a few", n, single)
	}
}

// A server without multiRead (3.5; here the first multiRead is sent with
// an opcode no server knows) answers it with an error and closes the
// connection: List reads the znodes one request each instead, and the
// Repo does not send multiRead again.
func TestListWithoutMultiRead(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_nomultiread_")
	want := putTables(t, zs.Open(t, ns), 100)
	// xid 1 is the session's sync, xid 2 its first multiRead.
	d := &dialRecorder{zs: zs, unknown: []byte{0, 0, 0, 2, 0, 0, 0, opMultiRead}}
	r := openDialed(t, zs, ns, d)
	if got := listed(t, r, "/m"); !maps.Equal(got, want) {
		t.Fatalf("List returned %d keys, want %d", len(got), len(want))
	}
	if d.sent.Load() != 1 || !zookeeper.MultiReadOff(r) {
		t.Fatalf("%d multiRead requests refused, multiRead off: %v; want 1 and off", d.sent.Load(), zookeeper.MultiReadOff(r))
	}
	before := d.ops[opMultiRead].Load()
	if got := listed(t, r, "/m/t"); len(got) != len(want)-1 {
		t.Fatalf("the second List returned %d keys, want %d", len(got), len(want)-1)
	}
	if n := d.ops[opMultiRead].Load(); n != before {
		t.Fatalf("%d multiRead requests sent after the server refused one", n-before)
	}
}

// Each value decoded from a multiRead answer is its own copy: a value a
// memo or a Watch keeps must not keep the whole answer (up to 128 reads)
// in memory, and the answer's buffer may be reused. A null value stays
// nil, an empty one empty.
func TestMultiReadValuesAreCopies(t *testing.T) {
	body := zookeeper.DataAnswer([]byte("first"), []byte("second"), []byte{}, nil)
	values, err := zookeeper.DecodeValues(body, 4)
	if err != nil {
		t.Fatal(err)
	}
	clear(body)
	if got := fmt.Sprintf("%q", values); got != `["first" "second" "" ""]` {
		t.Fatalf("values after the answer was overwritten: %s", got)
	}
	if values[2] == nil || values[3] != nil {
		t.Errorf("empty value %#v, null value %#v: want empty non-nil and nil", values[2], values[3])
	}
}

// A multiRead answers each read with its result or its own error: a
// missing znode is zk.ErrNoNode, one the session may not read zk.ErrNoAuth, in the order of the reads,
// across requests.
func TestMultiReadResultsPerRead(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_multireadops_")
	r := zs.Open(t, ns)
	ctx := testenv.Context(t)
	conn := r.Conn()
	root := "/" + ns
	if _, err := r.Put(ctx, "/a/b", []byte("value of b")); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(root+"/secret", []byte("x"), 0, zk.DigestACL(zk.PermAll, "someone", "pw")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zs.DropNamespace(t, ns, "someone:pw") }) // before the namespace's own drop, which may not read it
	paths := []string{root + "/a/b", root + "/missing", root + "/secret", root + "/a"}
	for i := range 300 { // past one request's reads
		paths = append(paths, fmt.Sprintf("%s/missing_%d", root, i))
	}
	paths = append(paths, root+"/a/b")
	values, _, errs, err := zookeeper.MultiRead(ctx, r, false, paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(values) != len(paths) || string(values[0]) != "value of b" || errs[0] != nil || string(values[len(paths)-1]) != "value of b" {
		t.Fatalf("%d results, the first %q (%v), the last %q, want %d and %q", len(values), values[0], errs[0], values[len(values)-1], len(paths), "value of b")
	}
	for i := 4; i < len(paths)-1; i++ {
		if !errors.Is(errs[i], zk.ErrNoNode) {
			t.Fatalf("%s: %v, want zk.ErrNoNode", paths[i], errs[i])
		}
	}
	if !errors.Is(errs[1], zk.ErrNoNode) || !errors.Is(errs[2], zk.ErrNoAuth) || errs[3] != nil || len(values[3]) != 0 {
		t.Fatalf("a znode without access: %v; a parent: %q, %v", errs[2], values[3], errs[3])
	}
	_, kids, errs, err := zookeeper.MultiRead(ctx, r, true, []string{root + "/a", root + "/missing", root})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(kids[2])
	if !slices.Equal(kids[0], []string{"b"}) || !errors.Is(errs[1], zk.ErrNoNode) || !slices.Contains(kids[2], "a") || !slices.Contains(kids[2], "secret") {
		t.Fatalf("children: %q, %v, %q", kids[0], errs[1], kids[2])
	}
}

// With the recursive watch, a Watch loads a large subtree with a few
// multiRead requests instead of two requests per znode; its initial keys
// are the subtree's, and it follows changes after.
func TestWatchLoadsWithMultiRead(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_watchmultiread_")
	w := zs.Open(t, ns)
	want := putTables(t, w, 300)
	d := &dialRecorder{zs: zs}
	r := openDialed(t, zs, ns, d)
	initial, ch, err := r.Watch(testenv.Context(t), "/m")
	if err != nil {
		t.Fatal(err)
	}
	state := stateOf(t, initial)
	if !maps.Equal(state, want) {
		t.Fatalf("the Watch loaded %d keys, want %d", len(state), len(want))
	}
	// /m and /m/t are read one request each (a level of fewer than 64),
	// then per level the data, then the children of the parents, each
	// with its data again: the tables (300 + 600 reads: 3 + 5 requests),
	// active_version and versions (600 + 600: 5 + 5), versions/0 (300: 3).
	single := d.ops[opGetData].Load() + d.ops[opGetChildren].Load()
	if n := d.ops[opMultiRead].Load(); n != 21 || single > 10 {
		t.Fatalf("the Watch sent %d multiRead requests and %d single reads, want 21 and a few", n, single)
	}
	putAndFollow(t, w, ch, state, "/m/t/t_00007/active_version", "1")
	putAndFollow(t, w, ch, state, "/m/t/t_00300/versions/0", "new table")
	sameAsList(t, r, "/m", state)
}

// Once the recursive watch is registered again after a failure, the
// Watch reads every znode it tracks again with a few multiRead requests,
// not a round trip per znode, and reports what changed meanwhile.
func TestWatchResyncReadsAhead(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_watchreadahead_")
	w := zs.Open(t, ns)
	putTables(t, w, 300)
	d := &dialRecorder{zs: zs}
	r := openDialed(t, zs, ns, d)
	opened := len(d.dialed())
	initial, ch, err := r.Watch(testenv.Context(t), "/m")
	if err != nil {
		t.Fatal(err)
	}
	state := stateOf(t, initial)
	// Lost, and not registered again while dialing fails: the Watch
	// reads every znode arming watches, in order, so the change of the
	// last one is reported once it is done.
	last := "/m/t/t_00299/versions/0"
	d.refuse.Store(true)
	d.dialed()[opened].Close()
	waitRecursive(t, r, 0)
	putAndFollow(t, w, ch, state, last, "changed while lost")
	multi, single := d.ops[opMultiRead].Load(), d.ops[opGetData].Load()+d.ops[opGetChildren].Load()
	d.refuse.Store(false)
	waitRecursive(t, r, 1)
	putAndFollow(t, w, ch, state, last, "changed again")
	converge(t, ch, w, "/m", state)
	// 1,202 znodes: their data (10 requests), then the children and data
	// again of the 602 parents (10).
	multi, single = d.ops[opMultiRead].Load()-multi, d.ops[opGetData].Load()+d.ops[opGetChildren].Load()-single
	if multi != 20 || single > 20 {
		t.Fatalf("reading the tracked znodes again took %d multiRead requests and %d single reads, want 20 and a few", multi, single)
	}
}
