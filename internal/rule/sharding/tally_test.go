package sharding

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

// TestTallyFollowsTableByTable: a Tally recounting only the table each
// step changes says what BeyondBounds says of the whole rule after every
// step, through the bounds and back: an expression beyond inline.MaxNames,
// a rule beyond inline.MaxRuleNames, a table moved to autoTables, sections
// that name no data sources, a table without an expression; and its count
// of table names that are not plain, by section, through tables of mixed
// case and of non-ASCII names created, altered and dropped.
func TestTallyFollowsTableByTable(t *testing.T) {
	c := map[string]any{}
	tally := TallyOf(c)
	put := func(section, table string, v any) {
		m := maps.Clone(rulemap(c[section]))
		if v == nil {
			delete(m, table)
		} else {
			m[table] = v
		}
		c[section] = m
	}
	steps := []struct {
		section, table string
		v              any // nil: removed
	}{
		{"tables", "t_small", map[string]any{"actualDataNodes": "ds_${0..1}.t_${0..9}"}},    // 20 names
		{"tables", "t_huge", map[string]any{"actualDataNodes": "ds_${0..1}.t_${0..99999}"}}, // over MaxNames
		{"autoTables", "t_auto", map[string]any{"actualDataSources": "ds_${0..9999}"}},      // 10,000
		{"tables", "t_huge", nil}, // within again
		{"tables", "t_big", map[string]any{"actualDataNodes": "ds_${0..9}.t_${0..9999}"}},    // 100,000: the rule over MaxRuleNames
		{"shardingAlgorithms", "t_big", map[string]any{"type": "MOD"}},                       // not a table
		{"tables", "t_big", map[string]any{"logicTable": "t_big"}},                           // no expression
		{"tables", "t_small", map[string]any{"actualDataNodes": "ds_${0..1}.t_${0..49999}"}}, // 100,000
		{"autoTables", "t_auto", nil},                                                        // within again
		{"tables", "t_bad", map[string]any{"actualDataNodes": "ds_${0..1"}},                  // does not parse
		{"autoTables", "t_small", map[string]any{"actualDataSources": "ds_${0..1}"}},         // same name, other section
		{"tables", "t_small", nil},
		{"tables", "T_Mixed", map[string]any{"actualDataNodes": "ds_${0..1}.t_${0..1}"}}, // not plain
		{"tables", "\u212a_kelvin", map[string]any{"logicTable": "x"}},                   // not ASCII
		{"autoTables", "T_Mixed", map[string]any{"actualDataSources": "ds_0"}},           // not plain, other section
		{"tables", "T_Mixed", map[string]any{"actualDataNodes": "ds_0.t_0"}},             // altered: still one
		{"tables", "T_Mixed", nil},
		{"tables", "\u212a_kelvin", nil},
		{"autoTables", "T_Mixed", nil},
	}
	for i, s := range steps {
		old := maps.Clone(c) // put replaces the section it changes
		put(s.section, s.table, s.v)
		before := tally
		tally = tally.Table(old, c, s.section, s.table)
		want := BeyondBounds(c)
		if got := tally.Reason(); got != want {
			t.Fatalf("step %d (%s %s): Reason %q, BeyondBounds %q", i, s.section, s.table, got, want)
		}
		if fresh := TallyOf(c); fresh != tally {
			t.Fatalf("step %d: %+v; a fresh count: %+v", i, tally, fresh)
		}
		wantNotPlain := map[string]int{}
		for _, f := range tableSections {
			for name := range rulemap(c[f]) {
				if name != strings.ToLower(name) || !isASCII(name) {
					wantNotPlain[f]++
				}
			}
		}
		if got := tally.NotPlain(); got["tables"] != wantNotPlain["tables"] || got["autoTables"] != wantNotPlain["autoTables"] {
			t.Fatalf("step %d: NotPlain %v, want %v", i, got, wantNotPlain)
		}
		if again := TallyOf(old); again != before {
			t.Fatalf("step %d: the count of the rule before it changed to %+v", i, again)
		}
	}
	if BeyondBounds(c) != "" {
		t.Fatal("the steps end within the bounds")
	}
}

func rulemap(v any) map[string]any {
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

func ExampleTally() {
	c := map[string]any{"tables": map[string]any{"t_order": map[string]any{"actualDataNodes": "ds_${0..1}.t_order_${0..99999}"}}}
	tally := TallyOf(c)
	fmt.Println(tally.Reason())
	next := map[string]any{"tables": map[string]any{}}
	tally = tally.Table(c, next, "tables", "t_order")
	fmt.Printf("%q\n", tally.Reason())
	// Output:
	// 1 of its tables' expressions stand for more than 10000 names each, the most one expression may
	// ""
}
