package sharding

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
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
		if fresh := TallyOf(c); !sameTally(fresh, tally) {
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
		if again := TallyOf(old); !sameTally(again, before) {
			t.Fatalf("step %d: the count of the rule before it changed to %+v", i, again)
		}
	}
	if BeyondBounds(c) != "" {
		t.Fatal("the steps end within the bounds")
	}
}

// sameTally reports whether a and b count the same: the names, the
// expressions beyond the bound, the names not plain and the references.
func sameTally(a, b Tally) bool {
	return a.total == b.total && a.over == b.over && a.notPlain == b.notPlain && maps.Equal(a.uses.counts(), b.uses.counts())
}

// counts is what u counts, by name: base and delta together, without
// the names counted 0.
func (u uses) counts() map[usedName]int {
	out := map[usedName]int{}
	for _, m := range []map[usedName]int{u.base, u.delta} {
		for k, n := range m {
			if out[k] += n; out[k] == 0 {
				delete(out, k)
			}
		}
	}
	return out
}

// TestTallyUsesFollowEntries: a Tally recounting only the entry each of
// 2,000 random steps changes (a table, an auto table or a key generate
// strategy put, replaced or removed, naming algorithms under standard,
// complex and hint, key generators and auditors drawn from 150 names)
// counts each name's references as a fresh count does, through many
// merges of its delta into a new base; and a tally kept from an early
// step still counts that step's rule after all the others.
func TestTallyUsesFollowEntries(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 38))
	name := func(prefix string) string { return fmt.Sprintf("%s_%d", prefix, rnd.IntN(50)) }
	entry := func(section string) any {
		if section == "keyGenerateStrategies" {
			return map[string]any{"logicTable": "t", "keyGeneratorName": name("gen")}
		}
		e := map[string]any{}
		for _, f := range []string{"databaseStrategy", "tableStrategy", "shardingStrategy"} {
			if rnd.IntN(2) == 0 {
				continue
			}
			s := map[string]any{}
			for _, typ := range []string{"standard", "complex", "hint"} {
				if rnd.IntN(3) == 0 {
					s[typ] = map[string]any{"shardingColumn": "id", "shardingAlgorithmName": name("alg")}
				}
			}
			e[f] = s
		}
		if rnd.IntN(2) == 0 {
			e["keyGenerateStrategy"] = map[string]any{"column": "id", "keyGeneratorName": name("gen")}
		}
		if rnd.IntN(3) == 0 {
			e["auditStrategy"] = map[string]any{"auditorNames": []any{name("aud"), name("aud")}}
		}
		return e
	}
	sections := append(referringSections[:], "shardingAlgorithms")
	check := func(step int, tally Tally, c map[string]any) {
		t.Helper()
		fresh := TallyOf(c)
		for _, s := range []string{"shardingAlgorithms", "keyGenerators", "auditors"} {
			prefix := map[string]string{"shardingAlgorithms": "alg", "keyGenerators": "gen", "auditors": "aud"}[s]
			for i := range 50 {
				n := fmt.Sprintf("%s_%d", prefix, i)
				want := 0
				eachUsedName(c, func(kind int, got string) {
					if sectionOfKind[kind] == s && got == n {
						want++
					}
				})
				defaultNames(c, func(kind int, got string) { // not counted
					if sectionOfKind[kind] == s && got == n {
						want--
					}
				})
				if got := tally.Uses(s, n); got != want || fresh.Uses(s, n) != want {
					t.Fatalf("step %d: Uses(%s, %s) = %d, fresh %d; the rule refers to it %d times", step, s, n, got, fresh.Uses(s, n), want)
				}
			}
		}
	}
	c := map[string]any{"defaultTableStrategy": map[string]any{"standard": map[string]any{"shardingAlgorithmName": "alg_0"}}}
	tally := TallyOf(c)
	var early Tally
	var earlyRule map[string]any
	merges := 0
	for step := range 2000 {
		section := sections[rnd.IntN(len(sections))]
		key := fmt.Sprintf("e_%d", rnd.IntN(300))
		old := maps.Clone(c)
		m := maps.Clone(rulemap(c[section]))
		if rnd.IntN(4) == 0 {
			delete(m, key)
		} else {
			m[key] = entry(section)
		}
		c[section] = m
		base := tally.uses.base
		tally = tally.Table(old, c, section, key)
		if reflect.ValueOf(base).UnsafePointer() != reflect.ValueOf(tally.uses.base).UnsafePointer() {
			merges++
		}
		if step%50 == 0 {
			check(step, tally, c)
		}
		if step == 100 {
			early, earlyRule = tally, maps.Clone(c)
		}
	}
	check(2000, tally, c)
	check(100, early, earlyRule)
	if merges < 5 {
		t.Fatalf("the delta was merged into a new base %d times; the steps should make it so several times", merges)
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
