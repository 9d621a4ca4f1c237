package sharding

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// TestReferencesByCountAsByScan: 400 random statements (CREATE, ALTER
// and DROP SHARDING TABLE RULE, DROP SHARDING ALGORITHM and KEY
// GENERATOR, ALTER SHARDING KEY GENERATE STRATEGY, DROP DEFAULT SHARDING
// TABLE STRATEGY) on a rule whose tables share some algorithms, key
// generators and auditors and own others, each run with the references
// a cache counts (rule.Database.BeforeUses, from TallyOf) and without
// (a scan of every table): the same rule or the same refusal, and the
// same check of the result; the entries a table statement reports as
// all it touched (rule.Edits) hold every entry that differs. Between them, an algorithm or key generator
// removed by hand while tables may still name it: the check by count
// refuses as the full check does, naming the same tables.
func TestReferencesByCountAsByScan(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 8))
	ctx := context.Background()
	alg := func() map[string]any {
		return map[string]any{"type": "INLINE", "props": map[string]any{"algorithm-expression": "t_${id % 2}"}}
	}
	c := map[string]any{
		"shardingAlgorithms": map[string]any{"shared_a": alg(), "shared_b": alg(), "default_alg": alg()},
		"keyGenerators":      map[string]any{"snow": map[string]any{"type": "SNOWFLAKE"}, "uuid": map[string]any{"type": "UUID"}},
		"auditors":           map[string]any{"audit": map[string]any{"type": "DML_SHARDING_CONDITIONS"}},
		"tables":             map[string]any{},
		"keyGenerateStrategies": map[string]any{
			"s_0": map[string]any{"keyGenerateType": "column", "logicTable": "t_0", "keyGenerateColumn": "id", "keyGeneratorName": "uuid"},
		},
		"defaultTableStrategy": map[string]any{"standard": map[string]any{"shardingColumn": "id", "shardingAlgorithmName": "default_alg"}},
	}
	tables := rule.Map(c["tables"])
	for i := range 30 {
		t := map[string]any{"actualDataNodes": fmt.Sprintf("ds_${0..1}.t_%d_${0..1}", i)}
		own := fmt.Sprintf("t_%d_table_inline", i)
		switch i % 3 {
		case 0:
			t["tableStrategy"] = map[string]any{"standard": map[string]any{"shardingColumn": "id", "shardingAlgorithmName": "shared_a"}}
		case 1:
			t["tableStrategy"] = map[string]any{"standard": map[string]any{"shardingColumn": "id", "shardingAlgorithmName": own}}
			rule.Map(c["shardingAlgorithms"])[own] = alg()
		case 2:
			t["databaseStrategy"] = map[string]any{"complex": map[string]any{"shardingColumns": "id", "shardingAlgorithmName": "shared_b"}}
			t["auditStrategy"] = map[string]any{"auditorNames": []any{"audit"}, "allowHintDisable": true}
		}
		if i%4 == 0 {
			t["keyGenerateStrategy"] = map[string]any{"column": "id", "keyGeneratorName": "snow"}
		}
		tables[fmt.Sprintf("t_%d", i)] = t
	}
	sources := map[string]bool{"ds_0": true, "ds_1": true}
	algNames := func(read map[string]any) []string {
		return append(rule.SortedKeys(rule.Map(read["shardingAlgorithms"])), "absent")
	}
	table := func() string { return fmt.Sprintf("t_%d", rnd.IntN(36)) }
	statement := func(read map[string]any) distsql.Statement {
		inline := &distsql.Algorithm{Type: "INLINE", Props: []distsql.Property{{Key: "algorithm-expression", Value: distsql.Value{Text: "t_${id % 2}"}}}}
		switch rnd.IntN(8) {
		case 0, 1:
			return &DropTableRule{IfExists: true, Tables: []string{table(), table()}}
		case 2, 3:
			name := table()
			st := &CreateTableRule{IfNotExists: true}
			if _, ok := rule.Map(read["tables"])[name]; ok {
				return &AlterTableRule{Rules: []TableRule{{Table: name, DataNodes: []string{"ds_${0..1}." + name + "_${0..1}"}, TableStrategy: &Strategy{Type: "standard", Columns: []string{"id"}, Algorithm: inline}}}}
			}
			st.Rules = []TableRule{{Table: name, DataNodes: []string{"ds_${0..1}." + name + "_${0..1}"}, TableStrategy: &Strategy{Type: "standard", Columns: []string{"id"}, Algorithm: inline}}}
			return st
		case 4:
			names := algNames(read)
			return &DropAlgorithm{IfExists: true, Names: []string{names[rnd.IntN(len(names))]}}
		case 5:
			return &DropKeyGenerator{IfExists: true, Names: []string{[]string{"snow", "uuid", "absent"}[rnd.IntN(3)]}}
		case 6:
			_, exists := rule.Map(read["keyGenerateStrategies"])["s_0"]
			return &CreateKeyGenerateStrategy{Alter: exists, Name: "s_0", Definition: KeyGenerateStrategyDefinition{Table: "t_0", Column: "id", Generator: []string{"snow", "uuid"}[rnd.IntN(2)]}}
		default:
			return &DropDefaultStrategy{IfExists: true, Kind: "TABLE"}
		}
	}
	check := func(read, next map[string]any, counted bool) string {
		d := rule.Database{Name: "db", Sources: sources, Changing: Type, Before: read}
		if counted {
			d.BeforeUses = TallyOf(read).Uses
		}
		errs, err := Family.Check(ctx, d, next)
		return fmt.Sprint(errs, err)
	}
	refusedByHand, reportedSteps := 0, 0
	for step := range 400 {
		read := c
		st := statement(read)
		var got [2]map[string]any
		var errs [2]string
		edits := rule.NewEdits()
		for i, counted := range []bool{true, false} {
			d := rule.Database{Name: "db", Sources: sources, Rules: map[string]map[string]any{Type: read}}
			if counted {
				d.BeforeUses, d.Edits = TallyOf(read).Uses, edits
			}
			next, err := Family.Change(st)(ctx, d, config.CopyFields(read))
			got[i], errs[i] = next, fmt.Sprint(err)
		}
		if reported, complete := edits.Entries(); complete && errs[0] == "<nil>" {
			for _, f := range Family.Items().Named {
				om, nm := rule.Map(read[f]), rule.Map(got[0][f])
				for name, e := range nm {
					if oe, had := om[name]; (!had || !rule.Same(oe, e)) && !reported[[2]string{f, name}] {
						t.Fatalf("step %d, %T: %s %s added or replaced, not reported in %v", step, st, f, name, reported)
					}
				}
				for name := range om {
					if _, kept := nm[name]; !kept && !reported[[2]string{f, name}] {
						t.Fatalf("step %d, %T: %s %s removed, not reported in %v", step, st, f, name, reported)
					}
				}
			}
			reportedSteps++
		}
		if errs[0] != errs[1] || !reflect.DeepEqual(got[0], got[1]) {
			t.Fatalf("step %d, %T %+v:\nby count: %v, %v\nby scan:  %v, %v", step, st, st, errs[0], got[0], errs[1], got[1])
		}
		if errs[0] == "<nil>" {
			if a, b := check(read, got[0], true), check(read, got[0], false); a != b {
				t.Fatalf("step %d, %T: the check by count %s, by scan %s", step, st, a, b)
			}
			c = got[0]
		}
		// An algorithm or key generator removed by hand, used or not.
		section := []string{"shardingAlgorithms", "keyGenerators"}[rnd.IntN(2)]
		names := rule.SortedKeys(rule.Map(c[section]))
		if len(names) == 0 {
			continue
		}
		next := config.CopyFields(c)
		delete(rule.Map(next[section]), names[rnd.IntN(len(names))])
		a, b := check(c, next, true), check(c, next, false)
		if a != b {
			t.Fatalf("step %d, %s removed by hand: the check by count %s, by scan %s", step, section, a, b)
		}
		if a != "[] <nil>" {
			refusedByHand++
		}
	}
	if reportedSteps < 100 {
		t.Fatalf("%d of the changes reported their edits complete; the table statements should", reportedSteps)
	}
	if refusedByHand < 20 {
		t.Fatalf("%d of the removals by hand were refused; the rule's shared names should make many", refusedByHand)
	}
}
