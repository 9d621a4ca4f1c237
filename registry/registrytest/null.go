package registrytest

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// testNoNullValues writes through every write path, with nil and empty
// values and with parents the backend creates, and asserts that no key of
// the namespace is stored as null (ShardingSphere's ZooKeeper repository
// throws on a null znode and its watch listener loses the event), while
// the ephemeral, exclusive and lock keys still exist.
func testNoNullValues(t *testing.T, h Harness) {
	if h.NullKeys == nil {
		t.Skip("the backend stores no null values")
	}
	e := newEnv(t, h)
	r := e.open()
	s := e.session(r, 0)
	c := testenv.Context(t)
	check := func(what string) {
		t.Helper()
		if null := h.NullKeys(t, e.ns); len(null) > 0 {
			t.Fatalf("after %s, %d keys are stored as null: %v", what, len(null), null)
		}
	}
	for _, key := range []string{"/null/put/deep/a", "/null/put/empty"} {
		if _, err := r.Put(c, key, nil); err != nil {
			t.Fatalf("Put(%s, nil): %v", key, err)
		}
	}
	if _, err := r.Put(c, "/null/put/empty", []byte{}); err != nil {
		t.Fatal(err)
	}
	v, err := r.Create(c, "/null/create/deep/b", nil)
	if err != nil {
		t.Fatalf("Create(nil): %v", err)
	}
	if _, err := r.Update(c, "/null/create/deep/b", nil, v); err != nil {
		t.Fatalf("Update(nil): %v", err)
	}
	check("Put, Create and Update")
	if err := s.PutEphemeral(c, "/null/eph/deep/c", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEphemeral(c, "/null/eph/deep/c", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateExclusiveEphemeral(c, "/null/excl/deep/d", nil); err != nil {
		t.Fatal(err)
	}
	check("PutEphemeral and CreateExclusiveEphemeral")
	if _, err := s.Commit(c, registry.Txn{
		Conds: []registry.Cond{{Key: "/null/txn/deep/e"}, {Key: "/null/txn/deep/e/f"}, {Key: "/null/txn/absent/g"}, {Key: "/null/txn/eph/h"}},
		Ops: []registry.Op{
			{Key: "/null/txn/deep/e"}, {Key: "/null/txn/deep/e/f", Value: []byte{}},
			{Key: "/null/txn/eph/h", Ephemeral: true},
		},
	}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	kv := mustGet(t, r, "/null/txn/deep/e")
	if _, err := s.Commit(c, registry.Txn{
		Conds: []registry.Cond{{Key: kv.Key, Version: kv.Version}},
		Ops:   []registry.Op{{Key: kv.Key}},
	}); err != nil {
		t.Fatalf("Commit of a set: %v", err)
	}
	check("Commit")
	l, err := s.Lock(c, "/null/lock/deep")
	if err != nil {
		t.Fatal(err)
	}
	check("Lock (held)")
	if err := l.Unlock(c); err != nil {
		t.Fatal(err)
	}
	tl, err := s.TryLock(c, "/null/trylock")
	if err != nil {
		t.Fatal(err)
	}
	check("TryLock (held)")
	if err := tl.Unlock(c); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"/null/eph/deep/c", "/null/excl/deep/d", "/null/txn/eph/h", "/null/txn/deep/e/f"} {
		if !exists(t, r, key) {
			t.Fatalf("%s is gone", key)
		}
	}
}
