package zookeeper_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// versionedTxn writes version 0 and active_version of n new nodes under
// root, the shape of a metadata bulk write.
func versionedTxn(root string, from, n int) registry.Txn {
	var txn registry.Txn
	for i := from; i < from+n; i++ {
		v := fmt.Sprintf("%s/t_%05d/versions/0", root, i)
		a := fmt.Sprintf("%s/t_%05d/active_version", root, i)
		txn.Conds = append(txn.Conds, registry.Cond{Key: v}, registry.Cond{Key: a})
		txn.Ops = append(txn.Ops, registry.Op{Key: v, Value: []byte(fmt.Sprintf("table %d", i))}, registry.Op{Key: a, Value: []byte("0")})
	}
	return txn
}

// writeTables writes tables nodes of versionedTxn's shape under root
// through a new session of w, batch per Commit, and returns the session
// (closed when the test ends) for the test's later writes.
func writeTables(t testing.TB, w registry.Repository, root string, tables, batch int) registry.Session {
	t.Helper()
	ctx := testenv.Context(t)
	sess, err := w.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close(ctx) })
	for from := 0; from < tables; from += batch {
		if _, err := sess.Commit(ctx, versionedTxn(root, from, min(batch, tables-from))); err != nil {
			t.Fatal(err)
		}
	}
	return sess
}

// A Commit whose keys lack parents creates them in the same multi (one
// ZooKeeper transaction: every znode has the Commit's zxid), and a Commit
// whose condition fails leaves no parent behind.
func TestCommitCreatesParentsInItsMulti(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_parents_")
	r := zs.Open(t, ns)
	ctx := testenv.Context(t)
	sess, err := r.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Close(ctx) }()
	v, err := sess.Commit(ctx, versionedTxn("/m/db/tables", 0, 60))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/m", "/m/db", "/m/db/tables", "/m/db/tables/t_00007", "/m/db/tables/t_00007/versions", "/m/db/tables/t_00059/versions/0"} {
		data, stat, err := r.Conn().Get("/" + ns + p)
		if err != nil {
			t.Fatalf("%s after the Commit: %v", p, err)
		}
		if registry.Version(stat.Czxid) != v {
			t.Errorf("%s created at zxid %d, the Commit's is %d: not one transaction", p, stat.Czxid, v)
		}
		if p != "/m/db/tables/t_00059/versions/0" && len(data) != 0 {
			t.Errorf("parent %s = %q, want empty", p, data)
		}
	}

	txn := registry.Txn{
		Conds: []registry.Cond{{Key: "/n/a/b"}, {Key: "/m/db/tables/t_00003/active_version"}},
		Ops:   []registry.Op{{Key: "/n/a/b", Value: []byte("x")}, {Key: "/m/db/tables/t_00003/active_version", Value: []byte("1")}},
	}
	_, err = sess.Commit(ctx, txn)
	var oe *registry.OpError
	if !errors.Is(err, registry.ErrExists) || !errors.As(err, &oe) || oe.Key != "/m/db/tables/t_00003/active_version" {
		t.Fatalf("Commit over an existing key = %v, want ErrExists naming it", err)
	}
	if ok, _, err := r.Conn().Exists("/" + ns + "/n"); err != nil || ok {
		t.Fatalf("a failed Commit left the parent /n behind (exists %v, %v)", ok, err)
	}
}

// List and Watch read a tree wider than their window of requests in
// flight completely, with every value and version, and the watch then
// follows it.
func TestBulkReadsOfAWideTree(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_wide_")
	r := zs.Open(t, ns)
	ctx := testenv.Context(t)
	sess, err := r.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Close(ctx) }()
	const nodes, batch = 600, 60
	want := map[string]string{}
	for from := 0; from < nodes; from += batch {
		txn := versionedTxn("/w", from, batch)
		if _, err := sess.Commit(ctx, txn); err != nil {
			t.Fatal(err)
		}
		for _, o := range txn.Ops {
			want[o.Key] = string(o.Value)
		}
	}
	listed, err := r.List(ctx, "/w")
	if err != nil {
		t.Fatal(err)
	}
	initial, ch, err := r.Watch(ctx, "/w")
	if err != nil {
		t.Fatal(err)
	}
	for name, kvs := range map[string][]registry.KV{"List": listed, "Watch": initial} {
		got := map[string]registry.KV{}
		for _, kv := range kvs {
			got[kv.Key] = kv
		}
		// Each node has its own znode, versions and the two leaves.
		if len(got) < 4*nodes || len(got) > 4*nodes+1 {
			t.Errorf("%s(/w) has %d keys, want %d", name, len(got), 4*nodes)
		}
		for k, v := range want {
			kv, ok := got[k]
			if !ok || string(kv.Value) != v || kv.Version == 0 {
				t.Fatalf("%s(/w): %s = %q v%d (present %v), want %q", name, k, kv.Value, kv.Version, ok, v)
			}
		}
	}
	if !slices.IsSortedFunc(listed, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) }) {
		t.Error("List(/w) is not sorted by key")
	}
	if _, err := r.Put(ctx, "/w/t_00300/active_version", []byte("1")); err != nil {
		t.Fatal(err)
	}
	for ev := range ch {
		if ev.Err != nil {
			t.Fatal(ev.Err)
		}
		if ev.Type == registry.EventPut && ev.KV.Key == "/w/t_00300/active_version" && string(ev.KV.Value) == "1" {
			return
		}
	}
	t.Fatal("the watch ended without the change")
}
