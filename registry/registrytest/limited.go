package registrytest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// testListLimited: registry.ListLimited returns what List returns while
// the subtree fits its limits, and otherwise stops within them (rows, and
// bytes of keys and values) and says it left keys out, so that a reader
// serving a listing never holds a subtree someone filled.
func testListLimited(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r := e.open()
	c := testenv.Context(t)
	kvs, truncated, err := registry.ListLimited(c, r, "/lim", registry.Limits{Rows: 10, Bytes: 1 << 20})
	if err != nil || len(kvs) != 0 || truncated {
		t.Fatalf("ListLimited of a missing prefix = %v, %v, %v", kvs, truncated, err)
	}
	big := strings.Repeat("v", 10<<10)
	for i := range 20 {
		mustPut(t, r, fmt.Sprintf("/lim/%02d", i), big)
		mustPut(t, r, fmt.Sprintf("/lim/%02d/row", i), "r")
	}
	mustPut(t, r, "/lim/05/deep/x", "d") // a parent that etcd and memory do not store
	mustPut(t, r, "/lim10/x", "sibling")
	all, err := r.List(c, "/lim")
	if err != nil {
		t.Fatal(err)
	}
	got, truncated, err := registry.ListLimited(c, r, "/lim", registry.Limits{Rows: 1000, Bytes: 1 << 20})
	if err != nil || truncated || !slices.EqualFunc(got, all, func(a, b registry.KV) bool {
		return a.Key == b.Key && string(a.Value) == string(b.Value) && a.Version == b.Version
	}) {
		t.Fatalf("ListLimited within its limits = %d keys, truncated %v, %v; want List's %d", len(got), truncated, err, len(all))
	}
	for _, lim := range []registry.Limits{{Rows: 7, Bytes: 1 << 20}, {Rows: 1000, Bytes: 35 << 10}, {Rows: 1, Bytes: 1}} {
		got, truncated, err := registry.ListLimited(c, r, "/lim", lim)
		if err != nil || !truncated {
			t.Fatalf("ListLimited(%+v) = truncated %v, %v; want truncated", lim, truncated, err)
		}
		var bytes int64
		var keys []string
		for _, kv := range got {
			bytes += int64(len(kv.Key) + len(kv.Value))
			keys = append(keys, kv.Key)
			if !slices.ContainsFunc(all, func(a registry.KV) bool { return a.Key == kv.Key && string(a.Value) == string(kv.Value) }) {
				t.Fatalf("ListLimited(%+v) returned %s, which List does not", lim, kv.Key)
			}
		}
		if len(got) > lim.Rows || bytes > lim.Bytes || !slices.IsSorted(keys) {
			t.Fatalf("ListLimited(%+v) = %d keys, %d bytes, sorted %v: over its limits", lim, len(got), bytes, slices.IsSorted(keys))
		}
	}
}
