package registrytest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

func testList(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r := e.open()
	c := testenv.Context(t)
	got, err := r.List(c, "/list")
	if err != nil || len(got) != 0 {
		t.Fatalf("List of a missing prefix = %v, %v", got, err)
	}
	want := map[string]string{"/list/b": "2", "/list/a": "1", "/list/a/deep/x": "3", "/list/c": ""}
	versions := map[string]registry.Version{}
	for k, v := range want {
		versions[k] = mustPut(t, r, k, v)
	}
	mustPut(t, r, "/list", "parent")
	mustPut(t, r, "/list10/x", "sibling")
	mustPut(t, r, "/listx", "sibling")
	got, err = r.List(c, "/list")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range got {
		keys = append(keys, kv.Key)
		w, ok := want[kv.Key]
		if !ok && string(kv.Value) != "" {
			t.Fatalf("List(/list) returned %s=%q, not under /list or the prefix itself", kv.Key, kv.Value)
		}
		if ok && (string(kv.Value) != w || kv.Version != versions[kv.Key]) {
			t.Fatalf("List: %s = %q v%d, want %q v%d", kv.Key, kv.Value, kv.Version, w, versions[kv.Key])
		}
	}
	if !slices.IsSorted(keys) {
		t.Fatalf("List not sorted: %v", keys)
	}
	for k := range want {
		if !slices.Contains(keys, k) {
			t.Fatalf("List(/list) = %v, missing %s", keys, k)
		}
	}
	if slices.Contains(keys, "/list") {
		t.Fatal("List returned the prefix itself")
	}
}

// claim is the worker-id claim shape: reservation absent, fence at a known
// version (or absent), worker_id node absent.
func claim(id int, holder string, fence registry.Version) registry.Txn {
	res := fmt.Sprintf("/reservation/worker_id/%d", id)
	fk := fmt.Sprintf("/reservation/worker_id_fence/%d", id)
	node := "/nodes/compute_nodes/worker_id/" + holder
	return registry.Txn{
		Conds: []registry.Cond{{Key: res}, {Key: fk, Version: fence}, {Key: node}},
		Ops: []registry.Op{
			{Key: res, Value: []byte(holder), Ephemeral: true},
			{Key: fk, Value: []byte("epoch-of-" + holder)},
			{Key: node, Value: []byte(fmt.Sprint(id)), Ephemeral: true},
		},
	}
}

func testCommit(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r, other := e.open(), e.open()
	s := e.session(r, 0)
	c := testenv.Context(t)

	v, err := s.Commit(c, claim(7, "i1", 0))
	if err != nil || v == 0 {
		t.Fatalf("Commit claim = v%d, %v", v, err)
	}
	for key, want := range map[string]string{
		"/reservation/worker_id/7": "i1", "/reservation/worker_id_fence/7": "epoch-of-i1", "/nodes/compute_nodes/worker_id/i1": "7",
	} {
		kv := mustGet(t, other, key)
		if string(kv.Value) != want || kv.Version != v {
			t.Fatalf("%s = %q v%d, want %q v%d", key, kv.Value, kv.Version, want, v)
		}
	}

	// A failing condition writes nothing and names the key.
	s2 := e.session(other, 0)
	_, err = s2.Commit(c, claim(7, "i2", v))
	wantErr(t, "claim of a reserved id", err, registry.ErrExists)
	if op := err.(*registry.OpError); op.Key != "/reservation/worker_id/7" {
		t.Fatalf("failing key = %s, want /reservation/worker_id/7", op.Key)
	}
	if exists(t, other, "/nodes/compute_nodes/worker_id/i2") {
		t.Fatal("a failed Commit wrote the worker_id node")
	}
	if got := mustGet(t, other, "/reservation/worker_id_fence/7"); string(got.Value) != "epoch-of-i1" {
		t.Fatalf("a failed Commit changed the fence to %q", got.Value)
	}

	// Version conditions: stale version, missing key.
	fence := "/reservation/worker_id_fence/7"
	renew := func(ver registry.Version, value string) error {
		_, err := s.Commit(c, registry.Txn{
			Conds: []registry.Cond{{Key: fence, Version: ver}},
			Ops:   []registry.Op{{Key: fence, Value: []byte(value)}},
		})
		return err
	}
	v2, err := s.Commit(c, registry.Txn{
		Conds: []registry.Cond{{Key: fence, Version: v}, {Key: "/reservation/worker_id/7", Version: v}},
		Ops:   []registry.Op{{Key: fence, Value: []byte("renewed")}},
	})
	if err != nil || v2 == v {
		t.Fatalf("renew = v%d, %v", v2, err)
	}
	wantErr(t, "renew with a stale fence version", renew(v, "stale"), registry.ErrBadVersion)
	_, err = s.Commit(c, registry.Txn{Conds: []registry.Cond{{Key: "/txn/missing", Version: v}}, Ops: []registry.Op{{Key: "/txn/missing", Value: []byte("x")}}})
	wantErr(t, "condition on a missing key", err, registry.ErrNotFound)

	// Delete ops remove one key (a leaf: ZooKeeper cannot remove a znode
	// with children this way).
	mustPut(t, r, "/txn/d", "x")
	mustPut(t, r, "/txn/d0", "y")
	dv := mustGet(t, r, "/txn/d").Version
	if _, err := s.Commit(c, registry.Txn{Conds: []registry.Cond{{Key: "/txn/d", Version: dv}}, Ops: []registry.Op{{Key: "/txn/d", Delete: true}}}); err != nil {
		t.Fatal(err)
	}
	if exists(t, other, "/txn/d") || !exists(t, other, "/txn/d0") {
		t.Fatal("a Delete op must remove exactly its key")
	}

	// A key and its descendants created by one Commit, the child's
	// condition first: the key is created before them, with its value.
	if _, err := s.Commit(c, registry.Txn{
		Conds: []registry.Cond{{Key: "/txn/tree/a/b/c"}, {Key: "/txn/tree/a"}, {Key: "/txn/tree/a/b2"}},
		Ops: []registry.Op{
			{Key: "/txn/tree/a/b/c", Value: []byte("c")}, {Key: "/txn/tree/a", Value: []byte("a")}, {Key: "/txn/tree/a/b2", Value: []byte("b2")},
		},
	}); err != nil {
		t.Fatalf("Commit of a key and its descendants: %v", err)
	}
	for key, want := range map[string]string{"/txn/tree/a": "a", "/txn/tree/a/b/c": "c", "/txn/tree/a/b2": "b2"} {
		if got := mustGet(t, other, key); string(got.Value) != want {
			t.Fatalf("%s = %q, want %q", key, got.Value, want)
		}
	}
	_, err = s.Commit(c, registry.Txn{
		Conds: []registry.Cond{{Key: "/txn/tree/a/x"}, {Key: "/txn/tree/a"}},
		Ops:   []registry.Op{{Key: "/txn/tree/a/x", Value: []byte("x")}, {Key: "/txn/tree/a", Value: []byte("again")}},
	})
	wantErr(t, "Commit creating an existing key with a child", err, registry.ErrExists)
	if exists(t, other, "/txn/tree/a/x") {
		t.Fatal("a failed Commit created a child")
	}

	// Malformed transactions are refused before any I/O.
	_, err = s.Commit(c, registry.Txn{Ops: []registry.Op{{Key: "/txn/unguarded", Value: []byte("x")}}})
	wantErr(t, "op without condition", err, registry.ErrBadTxn)
	_, err = s.Commit(c, registry.Txn{Conds: []registry.Cond{{Key: "/txn/../x"}}, Ops: []registry.Op{{Key: "/txn/../x"}}})
	wantErr(t, "bad key in txn", err, registry.ErrBadKey)
	if exists(t, other, "/txn/unguarded") {
		t.Fatal("a refused Commit wrote")
	}

	// Ephemeral writes of a Commit go with the session.
	if err := s.Close(c); err != nil {
		t.Fatal(err)
	}
	if exists(t, other, "/reservation/worker_id/7") || exists(t, other, "/nodes/compute_nodes/worker_id/i1") {
		t.Fatal("ephemeral keys written by Commit survived session Close")
	}
	if got := mustGet(t, other, fence); string(got.Value) != "renewed" {
		t.Fatalf("persistent fence after session Close = %q", got.Value)
	}
	if _, err := s.Commit(c, claim(8, "i1", 0)); err == nil {
		t.Fatal("Commit on a closed session succeeded")
	}
}

func testCommitRace(t *testing.T, h Harness) {
	e := newEnv(t, h)
	c := testenv.Context(t)
	race(t, e, 20, func(s registry.Session, me string) error {
		_, err := s.Commit(c, claim(5, me, 0))
		return err
	})
}
