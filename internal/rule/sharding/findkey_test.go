package sharding

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// TestFindKey: a name is found in any case whether the keys' count of
// names that are not plain lets findKey look it up (every key plain, an
// ASCII name) or makes it scan (a key of mixed case, a non-ASCII name the
// Kelvin sign folds to "k", no count).
func TestFindKey(t *testing.T) {
	kelvin := "\u212a" // KELVIN SIGN: equal to "k" and "K" in any case
	for _, c := range []struct {
		keys []string
		name string
		want string
	}{
		{[]string{"t_a", "t_b"}, "t_a", "t_a"},
		{[]string{"t_a", "t_b"}, "T_A", "t_a"},
		{[]string{"t_a", "t_b"}, "t_c", ""},
		{[]string{"t_a", "t_b"}, "T_C", ""},
		{[]string{"T_A", "t_b"}, "t_a", "T_A"},
		{[]string{"T_A", "t_b"}, "T_a", "T_A"},
		{[]string{"T_A", "t_b"}, "T_B", "t_b"},
		{[]string{"k", "t_b"}, kelvin, "k"},
		{[]string{"k_" + kelvin}, "K_K", "k_" + kelvin},
		{[]string{"ünï"}, "ÜNÏ", "ünï"},
		{[]string{"ÜNÏ"}, "ünï", "ÜNÏ"},
	} {
		m := map[string]any{}
		notPlain := 0
		for _, k := range c.keys {
			m[k] = true
			if !PlainName(k) {
				notPlain++
			}
		}
		for _, count := range []int{notPlain, -1} {
			if got := findKey(m, c.name, count); got != c.want {
				t.Errorf("findKey(%q, %q, %d) = %q, want %q", c.keys, c.name, count, got, c.want)
			}
		}
	}
}

// TestFindKeyAsTheScan: over random sets of names of mixed case, with
// and without non-ASCII letters, findKey with the sets' true count
// finds a name exactly when a scan of every key does, and a key that
// equals it in any case.
func TestFindKeyAsTheScan(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	letters := []string{"a", "B", "k", "K", "\u212a", "s", "ſ", "é", "É", "_"}
	name := func() string {
		var b strings.Builder
		for range 1 + rnd.IntN(3) {
			b.WriteString(letters[rnd.IntN(len(letters))])
		}
		return b.String()
	}
	for range 2000 {
		m := map[string]any{}
		notPlain := 0
		for range rnd.IntN(6) {
			k := name()
			if _, dup := m[k]; !dup && !PlainName(k) {
				notPlain++
			}
			m[k] = true
		}
		n := name()
		got, scanned := findKey(m, n, notPlain), findKey(m, n, -1)
		if (got == "") != (scanned == "") || got != "" && (m[got] == nil || !strings.EqualFold(got, n)) {
			t.Fatalf("findKey(%v, %q, %d) = %q; the scan finds %q", m, n, notPlain, got, scanned)
		}
	}
}

// TestTableChangesFindAnyCase: CREATE, ALTER and DROP SHARDING TABLE RULE
// find an existing table in any case with the counts a cache hands them
// (rule.Database.ShardingNotPlain) as without, next to tables of plain
// names (found by lookup) and of mixed case and the Kelvin sign (found
// by a scan): "T_A" is "t_a", "t_mixed" is "T_Mixed", "K_KELVIN" is
// "\u212a_kelvin".
func TestTableChangesFindAnyCase(t *testing.T) {
	table := func(name string) TableRule {
		return TableRule{Table: name, DataNodes: []string{"ds_0." + strings.ToLower(name)}}
	}
	for _, existing := range [][]string{{"t_a", "T_Mixed", "\u212a_kelvin"}, {"t_a", "t_mixed", "k_kelvin"}} {
		content := func() map[string]any {
			var rules []TableRule
			for _, name := range existing {
				rules = append(rules, table(name))
			}
			c, err := Family.Change(&CreateTableRule{Rules: rules})(context.Background(), rule.Database{Name: "db"}, map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		counted := TallyOf(content()).NotPlain()
		for _, notPlain := range []map[string]int{counted, nil} {
			d := rule.Database{Name: "db", ShardingNotPlain: notPlain}
			for _, name := range []string{"T_A", "t_a", "t_mixed", "T_MIXED", "K_KELVIN", "k_kelvin"} {
				_, err := Family.Change(&CreateTableRule{Rules: []TableRule{table(name)}})(context.Background(), d, content())
				var se *sqlerr.Error
				if !errors.As(err, &se) || !strings.Contains(se.Message, "Duplicate") {
					t.Errorf("%v, counts %v: CREATE %s: %v, want a duplicate", existing, notPlain, name, err)
				}
				c, err := Family.Change(&DropTableRule{Tables: []string{name}})(context.Background(), d, content())
				if err != nil || len(rule.Map(c["tables"])) != 2 {
					t.Errorf("%v, counts %v: DROP %s: %d tables left, %v; want 2", existing, notPlain, name, len(rule.Map(c["tables"])), err)
				}
				c, err = Family.Change(&AlterTableRule{Rules: []TableRule{table(name)}})(context.Background(), d, content())
				if tables := rule.Map(c["tables"]); err != nil || len(tables) != 3 || tables[name] == nil {
					t.Errorf("%v, counts %v: ALTER %s: %v, %v; want it replaced, as the statement names it", existing, notPlain, name, tables, err)
				}
			}
			if notPlain != nil && (notPlain["tables"] != counted["tables"] || notPlain["autoTables"] != 0) {
				t.Fatalf("a change modified the counts it was handed: %v", notPlain)
			}
		}
	}
}
