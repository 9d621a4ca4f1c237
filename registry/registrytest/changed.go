package registrytest

import (
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
