package registrytest

import (
	"slices"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// testListChanged: registry.ListChanged returns, where the backend lists
// by revision, the keys written after a revision and how many keys are
// below the prefix, so that a reader holding a listing learns what
// changed (deletions by the count) without reading the rest again.
func testListChanged(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r := e.open()
	c := testenv.Context(t)
	mustPut(t, r, "/lc/a", "a1")
	mustPut(t, r, "/lc/b/x", "b1")
	mustPut(t, r, "/lc2/x", "sibling")
	all, err := r.List(c, "/lc")
	if err != nil {
		t.Fatal(err)
	}
	var since registry.Version
	for _, kv := range all {
		since = max(since, kv.Version)
	}
	got, ok, err := registry.ListChanged(c, r, "/lc", since, 10)
	if !ok {
		// A backend may answer only once it followed the prefix (ZooKeeper
		// from the second read of it on).
		if got, ok, err = registry.ListChanged(c, r, "/lc", since, 10); !ok {
			t.Skip("not a registry.ChangeLister")
		}
	}
	// The count is of the keys List returns (ZooKeeper's parents too).
	count := func() int {
		t.Helper()
		all, err := r.List(c, "/lc")
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}
	if err != nil || len(got.KVs) != 0 || got.Count != len(all) || got.Truncated || got.Rev < since {
		t.Fatalf("ListChanged with nothing changed = %+v, %v; want no keys, count %d, rev >= %d", got, err, len(all), since)
	}
	mustPut(t, r, "/lc/a", "a2")
	mustPut(t, r, "/lc/c", "c1")
	mustPut(t, r, "/lc2/y", "sibling")
	got, _, err = registry.ListChanged(c, r, "/lc", since, 10)
	if err != nil || got.Count != count() || len(got.KVs) != 2 || got.KVs[0].Key != "/lc/a" || string(got.KVs[0].Value) != "a2" || got.KVs[1].Key != "/lc/c" || string(got.KVs[1].Value) != "c1" {
		t.Fatalf("ListChanged after two writes = %+v, %v; want /lc/a=a2, /lc/c=c1, List's count", got, err)
	}
	for _, kv := range got.KVs {
		now, err := r.Get(c, kv.Key)
		if err != nil || now.Version != kv.Version || kv.Version > got.Rev {
			t.Fatalf("ListChanged's %s at version %d (rev %d), Get: %+v %v", kv.Key, kv.Version, got.Rev, now, err)
		}
	}
	if err := r.Delete(c, "/lc/b"); err != nil {
		t.Fatal(err)
	}
	after, _, err := registry.ListChanged(c, r, "/lc", got.Rev, 10)
	if err != nil || len(after.KVs) != 0 || after.Count != count() || after.Count >= got.Count {
		t.Fatalf("ListChanged after a delete = %+v, %v; want no keys, List's count, fewer than %d", after, err, got.Count)
	}
	mustPut(t, r, "/lc/d", "d")
	mustPut(t, r, "/lc/e", "e")
	mustPut(t, r, "/lc/f", "f")
	trunc, _, err := registry.ListChanged(c, r, "/lc", after.Rev, 2)
	if err != nil || !trunc.Truncated || len(trunc.KVs) != 0 || trunc.Count != count() {
		t.Fatalf("ListChanged of 3 changes with max 2 = %+v, %v; want truncated, no keys, List's count", trunc, err)
	}
}

// testReplayChanges: registry.ReplayChanges, where the backend keeps its
// history (etcd), replays the writes below a prefix since a revision, in
// order, up to a barrier write of its own (everything committed before
// the call) or up to a given revision, and gives up (ok false) past max.
func testReplayChanges(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r := e.open()
	c := testenv.Context(t)
	mustPut(t, r, "/rp/a", "a1")
	mustPut(t, r, "/rp/b/x", "b1")
	since := mustPut(t, r, "/rp2/x", "sibling")
	barrier := registry.ReplayBound{Barrier: "/rp_barrier"}
	got, ok, err := registry.ReplayChanges(c, r, "/rp", since, barrier, 10)
	if !ok && err == nil {
		t.Skip("keeps no history to replay (not a registry.ChangeReplayer, or one over such a backend)")
	}
	if err != nil || !ok || len(got.Events) != 0 || got.Rev <= since {
		t.Fatalf("ReplayChanges with nothing changed = %+v, %v, %v; want no events, a revision after %d", got, ok, err, since)
	}
	since = got.Rev
	va := mustPut(t, r, "/rp/a", "a2")
	mustPut(t, r, "/rp/c", "c1")
	if err := r.Delete(c, "/rp/b"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, r, "/rp2/y", "sibling")
	vc := mustPut(t, r, "/rp/c", "c2")
	got, ok, err = registry.ReplayChanges(c, r, "/rp", since, barrier, 10)
	type event struct {
		typ        registry.EventType
		key, value string
	}
	var events []event
	for _, ev := range got.Events {
		events = append(events, event{ev.Type, ev.KV.Key, string(ev.KV.Value)})
	}
	want := []event{{registry.EventPut, "/rp/a", "a2"}, {registry.EventPut, "/rp/c", "c1"}, {registry.EventDelete, "/rp/b/x", ""}, {registry.EventPut, "/rp/c", "c2"}}
	if err != nil || !ok || !slices.Equal(events, want) || got.Rev <= vc {
		t.Fatalf("ReplayChanges after writes = %v (rev %d), %v, %v; want %v, a revision after %d", events, got.Rev, ok, err, want, vc)
	}
	if got.Events[0].KV.Version != va || got.Events[3].KV.Version != vc {
		t.Fatalf("ReplayChanges' versions %d, %d; the puts' %d, %d", got.Events[0].KV.Version, got.Events[3].KV.Version, va, vc)
	}
	since = got.Rev
	vd := mustPut(t, r, "/rp/d", "d")
	mustPut(t, r, "/rp/e", "e")
	through, ok, err := registry.ReplayChanges(c, r, "/rp", since, registry.ReplayBound{Through: vd}, 10)
	if err != nil || !ok || len(through.Events) != 1 || through.Events[0].KV.Key != "/rp/d" || through.Rev != vd {
		t.Fatalf("ReplayChanges through /rp/d's write = %+v, %v, %v; want /rp/d alone, rev %d", through, ok, err, vd)
	}
	if _, ok, err := registry.ReplayChanges(c, r, "/rp", since, barrier, 1); ok || err != nil {
		t.Fatalf("ReplayChanges of 2 writes with max 1: ok %v, %v; want not ok (list instead)", ok, err)
	}
	if _, err := r.Get(c, "/rp_barrier"); err != nil {
		t.Fatalf("the barrier key: %v", err)
	}
}
