package registrytest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

func testGetMany(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r, other := e.open(), e.open()
	c := testenv.Context(t)
	va := mustPut(t, r, "/many/a", "1")
	vb := mustPut(t, r, "/many/b/deep", "2")
	got, err := registry.GetMany(c, other, []string{"/many/b/deep", "/many/missing", "/many/a"})
	if err != nil {
		t.Fatal(err)
	}
	want := []registry.KV{{Key: "/many/b/deep", Value: []byte("2"), Version: vb}, {Key: "/many/missing"}, {Key: "/many/a", Value: []byte("1"), Version: va}}
	if len(got) != len(want) {
		t.Fatalf("GetMany = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Key != want[i].Key || string(got[i].Value) != string(want[i].Value) || got[i].Version != want[i].Version {
			t.Fatalf("GetMany[%d] = %s=%q v%d, want %s=%q v%d", i, got[i].Key, got[i].Value, got[i].Version, want[i].Key, want[i].Value, want[i].Version)
		}
	}
	if got, err := registry.GetMany(c, other, nil); err != nil || len(got) != 0 {
		t.Fatalf("GetMany of no keys = %v, %v", got, err)
	}
	_, err = registry.GetMany(c, other, []string{"/many/a", "bad"})
	wantErr(t, "GetMany with a bad key", err, registry.ErrBadKey)
}

func testCommitFirst(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r, other := e.open(), e.open()
	s, s2 := e.session(r, 0), e.session(other, 0)
	c := testenv.Context(t)
	if _, err := s2.Commit(c, claim(1, "taken", 0)); err != nil {
		t.Fatal(err)
	}
	i, v, err := registry.CommitFirst(c, s, []registry.Txn{claim(1, "i1", 0), claim(2, "i1", 0), claim(3, "i1", 0)})
	if err != nil || i != 1 || v == 0 {
		t.Fatalf("CommitFirst = %d, v%d, %v; want alternative 1", i, v, err)
	}
	for key, want := range map[string]string{
		"/reservation/worker_id/2": "i1", "/reservation/worker_id_fence/2": "epoch-of-i1", "/nodes/compute_nodes/worker_id/i1": "2",
	} {
		kv := mustGet(t, other, key)
		if string(kv.Value) != want || kv.Version != v {
			t.Fatalf("%s = %q v%d, want %q v%d", key, kv.Value, kv.Version, want, v)
		}
	}
	if exists(t, other, "/reservation/worker_id/3") || exists(t, other, "/reservation/worker_id_fence/3") {
		t.Fatal("CommitFirst wrote a later alternative too")
	}
	if got := mustGet(t, other, "/reservation/worker_id/1"); string(got.Value) != "taken" {
		t.Fatalf("CommitFirst changed the failed alternative's key to %q", got.Value)
	}

	// None applies: each alternative's failing condition is named.
	_, err = s2.Commit(c, claim(4, "taken4", 0))
	if err != nil {
		t.Fatal(err)
	}
	i, _, err = registry.CommitFirst(c, s2, []registry.Txn{claim(2, "i2", 0), claim(4, "i2", 0)})
	var none *registry.NoneApplied
	if i != -1 || !errors.As(err, &none) || len(none.Errs) != 2 {
		t.Fatalf("CommitFirst of taken ids = %d, %v; want -1 and a NoneApplied with 2 errors", i, err)
	}
	for j, key := range []string{"/reservation/worker_id/2", "/reservation/worker_id/4"} {
		var op *registry.OpError
		if !errors.As(none.Errs[j], &op) || op.Key != key || !errors.Is(op, registry.ErrExists) {
			t.Fatalf("alternative %d failed with %v, want ErrExists on %s", j, none.Errs[j], key)
		}
	}
	if !errors.Is(err, registry.ErrExists) {
		t.Fatalf("NoneApplied %v does not match ErrExists", err)
	}
	if exists(t, other, "/nodes/compute_nodes/worker_id/i2") {
		t.Fatal("a CommitFirst that applied nothing wrote the worker_id node")
	}
	// A version condition in a later alternative.
	fv := mustGet(t, r, "/reservation/worker_id_fence/2").Version
	bump := func(ver registry.Version, value string) registry.Txn {
		return registry.Txn{
			Conds: []registry.Cond{{Key: "/reservation/worker_id_fence/2", Version: ver}},
			Ops:   []registry.Op{{Key: "/reservation/worker_id_fence/2", Value: []byte(value)}},
		}
	}
	i, v, err = registry.CommitFirst(c, s, []registry.Txn{bump(fv+1000, "stale"), bump(fv, "fresh")})
	if err != nil || i != 1 || mustGet(t, other, "/reservation/worker_id_fence/2").Version != v {
		t.Fatalf("CommitFirst with a stale then a current version = %d, v%d, %v", i, v, err)
	}
	_, _, err = registry.CommitFirst(c, s, nil)
	wantErr(t, "CommitFirst of no alternatives", err, registry.ErrBadTxn)
	_, _, err = registry.CommitFirst(c, s, []registry.Txn{claim(9, "i1", 0), {Ops: []registry.Op{{Key: "/x", Value: []byte("1")}}}})
	wantErr(t, "CommitFirst with an invalid alternative", err, registry.ErrBadTxn)
	if exists(t, other, "/reservation/worker_id/9") {
		t.Fatal("CommitFirst with an invalid alternative wrote the valid one")
	}
}

// testCommitFirstRace: sessions racing with the same two alternatives
// (two ids) give exactly two winners, one per id.
func testCommitFirstRace(t *testing.T, h Harness) {
	e := newEnv(t, h)
	c := testenv.Context(t)
	sessions := []registry.Session{e.session(e.open(), 0), e.session(e.open(), 0)}
	var wins [2]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	start := make(chan struct{})
	for si, s := range sessions {
		for g := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				me := fmt.Sprintf("s%d-g%d", si, g)
				i, _, err := registry.CommitFirst(c, s, []registry.Txn{claim(5, me, 0), claim(6, me, 0)})
				var none *registry.NoneApplied
				switch {
				case err == nil:
					wins[i].Add(1)
				case !errors.As(err, &none):
					errs <- err
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("unexpected error in race: %v", err)
	}
	if wins[0].Load() != 1 || wins[1].Load() != 1 {
		t.Fatalf("winners per alternative = %d, %d; want 1, 1", wins[0].Load(), wins[1].Load())
	}
}
