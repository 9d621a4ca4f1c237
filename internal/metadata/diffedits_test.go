package metadata

import (
	"maps"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// TestDiffOfEdits: a change that reports every entry it touched
// (rule.Edits, complete) gets the Diff a comparison of every entry finds,
// with entries reported that did not change left out; one that does not
// declare its report complete, or whose report leaves out an entry it
// added or removed (the field's size tells), is compared entry by entry;
// and one whose report leaves out an entry it replaced panics under go
// test, since its writes would be lost.
func TestDiffOfEdits(t *testing.T) {
	old := map[string]any{
		"tables":             map[string]any{"t_a": map[string]any{"actualDataNodes": "ds_0.t_a"}, "t_b": map[string]any{"actualDataNodes": "ds_0.t_b"}, "t_c": map[string]any{"actualDataNodes": "ds_0.t_c"}},
		"shardingAlgorithms": map[string]any{"alg": map[string]any{"type": "MOD"}},
		"bindingTables":      []any{"t_a,t_b"},
	}
	// change replaces t_a, removes t_b, adds t_d, and replaces the list.
	change := func() map[string]any {
		next := config.CopyFields(old)
		tables := next["tables"].(map[string]any)
		tables["t_a"] = map[string]any{"actualDataNodes": "ds_1.t_a"}
		delete(tables, "t_b")
		tables["t_d"] = map[string]any{"actualDataNodes": "ds_0.t_d"}
		next["bindingTables"] = []any{"t_a,t_d"}
		return next
	}
	report := func(complete bool, names ...string) *rule.Edits {
		e := rule.NewEdits()
		for _, n := range names {
			e.Touch("tables", n)
		}
		e.Touch("shardingAlgorithms", "alg") // reported, not changed
		if complete {
			e.Complete()
		}
		return e
	}
	next := change()
	want := DiffOf("sharding", old, next)
	if want == nil || len(want.Changed) != 3 {
		t.Fatalf("DiffOf: %+v; want t_a, t_b and t_d", want)
	}
	for _, edits := range []*rule.Edits{
		report(true, "t_a", "t_b", "t_d", "t_c"), // t_c left alone
		report(false, "t_a"),                     // not complete: compared
		report(true, "t_a", "t_b"),               // t_d added, not reported: the size tells
		nil,
	} {
		got := DiffOfEdits("sharding", old, next, edits)
		if got == nil || !maps.Equal(got.Changed, want.Changed) || len(got.SparseNext["tables"].(map[string]any)) != 2 ||
			len(got.SparseOld["tables"].(map[string]any)) != 2 || got.SparseNext["bindingTables"] == nil || got.SparseNext["shardingAlgorithms"] != nil {
			t.Fatalf("edits %v: %+v; want %+v", edits, got, want)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("a report that leaves out a replaced entry (t_a) did not panic under go test")
			}
		}()
		DiffOfEdits("sharding", old, next, report(true, "t_b", "t_d"))
	}()
}
