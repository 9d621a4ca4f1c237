package registrytest

import (
	"fmt"
	"slices"
	"sync"
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

// testCommitAfterRecreate: a condition on a key's version fails once the
// key was deleted and created again between the read of the condition and
// the write, although the new key's backend-native version (a ZooKeeper
// data version: a Put or Create makes it 1 each time) is the old one's
// again. A rule item is deleted with its last entry and created again by
// the next change; a change decided before must not overwrite it.
func testCommitAfterRecreate(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r, other := e.open(), e.open()
	s := e.session(r, 0)
	c := testenv.Context(t)
	between := func(fn func()) {
		if h.BetweenReadAndWrite == nil {
			fn()
			return
		}
		var once sync.Once
		h.BetweenReadAndWrite(t, r, func() { once.Do(fn) })
		t.Cleanup(func() { h.BetweenReadAndWrite(t, r, nil) })
	}
	for _, tc := range []struct {
		name  string
		write func(key string, v registry.Version) error
	}{
		{"set", func(key string, v registry.Version) error {
			_, err := s.Commit(c, registry.Txn{Conds: []registry.Cond{{Key: key, Version: v}}, Ops: []registry.Op{{Key: key, Value: []byte("decided before")}}})
			return err
		}},
		{"delete", func(key string, v registry.Version) error {
			_, err := s.Commit(c, registry.Txn{Conds: []registry.Cond{{Key: key, Version: v}}, Ops: []registry.Op{{Key: key, Delete: true}}})
			return err
		}},
		{"check", func(key string, v registry.Version) error {
			_, err := s.Commit(c, registry.Txn{
				Conds: []registry.Cond{{Key: key, Version: v}, {Key: key + "-next"}},
				Ops:   []registry.Op{{Key: key + "-next", Value: []byte("decided before")}},
			})
			return err
		}},
		{"new-parent", func(key string, v registry.Version) error {
			// A created key whose parent the same multi creates: a
			// multi that fails on a missing parent is sent again.
			_, err := s.Commit(c, registry.Txn{
				Conds: []registry.Cond{{Key: key, Version: v}, {Key: key + "-dir/a/b"}},
				Ops:   []registry.Op{{Key: key, Value: []byte("decided before")}, {Key: key + "-dir/a/b", Value: []byte("decided before")}},
			})
			return err
		}},
		{"update", func(key string, v registry.Version) error {
			_, err := r.Update(c, key, []byte("decided before"), v)
			return err
		}},
		{"ephemeral", func(key string, v registry.Version) error {
			_, err := s.Commit(c, registry.Txn{Conds: []registry.Cond{{Key: key, Version: v}}, Ops: []registry.Op{{Key: key, Value: []byte("decided before"), Ephemeral: true}}})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "/aba/" + tc.name + "/active_version"
			if tc.name == "ephemeral" {
				// Another session takes the key over: ZooKeeper deletes
				// and creates it again in one multi.
				if err := s.PutEphemeral(c, key, []byte("0")); err != nil {
					t.Fatal(err)
				}
				s2 := e.session(other, 0)
				v := mustGet(t, r, key).Version
				between(func() {
					if err := s2.PutEphemeral(c, key, []byte("0")); err != nil {
						t.Errorf("PutEphemeral(%s): %v", key, err)
					}
				})
				err := tc.write(key, v)
				wantErr(t, "write conditioned on a key taken over", err, registry.ErrBadVersion)
				return
			}
			v := mustPut(t, r, key, "0")
			between(func() {
				if err := other.Delete(c, key); err != nil {
					t.Errorf("Delete(%s): %v", key, err)
				}
				if _, err := other.Create(c, key, []byte("0")); err != nil {
					t.Errorf("Create(%s): %v", key, err)
				}
			})
			err := tc.write(key, v)
			if err == nil {
				t.Fatalf("a write conditioned on %s v%d succeeded after the key was deleted and created again", key, v)
			}
			wantErr(t, "write conditioned on a re-created key", err, registry.ErrBadVersion)
			if h.BetweenReadAndWrite != nil {
				h.BetweenReadAndWrite(t, r, nil)
			}
			got := mustGet(t, other, key)
			if string(got.Value) != "0" || got.Version == v {
				t.Fatalf("%s = %q v%d after the failed write, want %q at a version other than v%d", key, got.Value, got.Version, "0", v)
			}
			for _, k := range []string{key + "-next", key + "-dir/a/b"} {
				if exists(t, other, k) {
					t.Fatalf("the failed write created %s", k)
				}
			}
		})
	}
}

// testCommitAfterOthersDeleted: deletions of other keys between the read
// of a write's conditions and the write do not fail it (on ZooKeeper they
// move the deletion guards the write checks on; it reads and writes
// again).
func testCommitAfterOthersDeleted(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r, other := e.open(), e.open()
	s := e.session(r, 0)
	c := testenv.Context(t)
	key := "/kept/active_version"
	for _, write := range []func(v registry.Version) error{
		func(v registry.Version) error {
			_, err := s.Commit(c, registry.Txn{Conds: []registry.Cond{{Key: key, Version: v}}, Ops: []registry.Op{{Key: key, Value: []byte("next")}}})
			return err
		},
		func(v registry.Version) error {
			_, err := r.Update(c, key, []byte("next"), v)
			return err
		},
	} {
		v := mustPut(t, r, key, "0")
		for i := range 200 { // more keys than ZooKeeper has guards
			mustPut(t, other, fmt.Sprintf("/gone/k%d", i), "x")
		}
		deleteOthers := func() {
			if err := other.Delete(c, "/gone"); err != nil {
				t.Errorf("Delete(/gone): %v", err)
			}
		}
		if h.BetweenReadAndWrite == nil {
			deleteOthers()
		} else {
			var once sync.Once
			h.BetweenReadAndWrite(t, r, func() { once.Do(deleteOthers) })
		}
		err := write(v)
		if h.BetweenReadAndWrite != nil {
			h.BetweenReadAndWrite(t, r, nil)
		}
		if err != nil {
			t.Fatalf("a write conditioned on %s v%d failed after other keys were deleted: %v", key, v, err)
		}
		if got := mustGet(t, other, key); string(got.Value) != "next" {
			t.Fatalf("%s = %q, want %q", key, got.Value, "next")
		}
	}
}

// testListAfterRecreate: a List that read a key (and may keep it) shows
// the key created again after a delete, value and version, although the
// new key's backend-native version is the old one's again.
func testListAfterRecreate(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r, other := e.open(), e.open()
	c := testenv.Context(t)
	key := "/relist/item/active_version"
	mustPut(t, r, "/relist/item/versions/0", "a")
	for round := range 3 {
		v := mustPut(t, other, key, fmt.Sprint(round))
		for range 2 { // listed twice: the second may come from a cache
			got, err := r.List(c, "/relist")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(got, func(kv registry.KV) bool {
				return kv.Key == key && string(kv.Value) == fmt.Sprint(round) && kv.Version == v
			}) {
				t.Fatalf("round %d: List(/relist) = %v, want %s = %q v%d", round, got, key, fmt.Sprint(round), v)
			}
		}
		if err := other.Delete(c, key); err != nil {
			t.Fatal(err)
		}
		got, err := r.List(c, "/relist")
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(got, func(kv registry.KV) bool { return kv.Key == key }) {
			t.Fatalf("round %d: List(/relist) = %v after %s was deleted", round, got, key)
		}
	}
}
