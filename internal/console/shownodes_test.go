package console_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
)

// TestShowNodesOfARuleBeyondTheBounds: SHOW SHARDING TABLE NODES of a rule
// another node wrote beyond the rule bound (11 tables of 10,000 nodes)
// builds at most 100,000 nodes and shows the tables past them as
// written; cancelled (KILL, the client gone), it stops and builds none.
func TestShowNodesOfARuleBeyondTheBounds(t *testing.T) {
	s := etcdtest.New(t)
	repo := s.Open(t, s.Namespace(t, "show-nodes"))
	mc := startMySQLConsole(t, repo, "show-nodes", console.Deps{})
	tables := map[string]any{}
	for i := range 11 {
		tables[fmt.Sprintf("t_%02d", i)] = map[string]any{"actualDataNodes": fmt.Sprintf("ds_${0..1}.t_%02d_${0..4999}", i)}
	}
	persistRuleDB(t, repo, mc, "big_db", shardingTables(tables))
	testenv.Eventually(t, "the node to load every table", func() bool {
		return len(rule.Map(mc.store.Current().Databases["big_db"].Rules["sharding"].Content["tables"])) == 11
	})
	sess := &console.Session{ID: console.NewSessionID(), User: "root", Host: "127.0.0.1", Protocol: "MySQL"}
	res, err := mc.engine.Execute(testenv.Context(t), sess, "SHOW SHARDING TABLE NODES FROM big_db")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 11 {
		t.Fatalf("%d rows, want 11", len(res.Rows))
	}
	built := 0
	for i, row := range res.Rows {
		nodes := *row[1]
		if i < 10 {
			built += strings.Count(nodes, ", ") + 1
			continue
		}
		if nodes != "ds_${0..1}.t_10_${0..4999}" {
			t.Errorf("the table past the bound: %.80s, want it as written", nodes)
		}
	}
	if built != 100_000 {
		t.Errorf("%d nodes built, want 100,000", built)
	}

	ctx, cancel := context.WithCancel(testenv.Context(t))
	cancel()
	if _, err := mc.engine.Execute(ctx, sess, "SHOW SHARDING TABLE NODES FROM big_db"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// TestRulesUsedUnitOfARuleBeyondTheBounds: SHOW RULES USED STORAGE UNIT
// and the usage count give one answer for a sharding rule another node
// wrote beyond the bounds (a table's data nodes and an auto table's
// storage units of 10,001 data sources each): the tables claim every unit
// they could name, in both, without building their names.
func TestRulesUsedUnitOfARuleBeyondTheBounds(t *testing.T) {
	s := etcdtest.New(t)
	repo := s.Open(t, s.Namespace(t, "rules-used"))
	mc := startMySQLConsole(t, repo, "rules-used", console.Deps{})
	persistRuleDB(t, repo, mc, "far_db", config.Rule{Type: "sharding", Content: map[string]any{
		"tables": map[string]any{
			"far":  map[string]any{"actualDataNodes": "ds_${0..10000}.t_far"},
			"near": map[string]any{"actualDataNodes": "ds_0.t_near"},
		},
		"autoTables": map[string]any{
			"far_auto": map[string]any{"actualDataSources": "ds_${0..10000}"},
		},
	}})
	testenv.Eventually(t, "the node to load every table", func() bool {
		c := mc.store.Current().Databases["far_db"].Rules["sharding"].Content
		return len(rule.Map(c["tables"])) == 2 && len(rule.Map(c["autoTables"])) == 1
	})
	sess := &console.Session{ID: console.NewSessionID(), User: "root", Host: "127.0.0.1", Protocol: "MySQL"}
	rows := func(stmt string) []string {
		t.Helper()
		res, err := mc.engine.Execute(testenv.Context(t), sess, stmt)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		var out []string
		for _, row := range res.Rows {
			out = append(out, *row[0]+" "+*row[1])
		}
		return out
	}
	if got := rows("SHOW STORAGE UNITS FROM far_db WHERE USAGE_COUNT = 0"); len(got) != 0 {
		t.Errorf("units counted unused: %v, want none", got)
	}
	for unit, want := range map[string][]string{
		"ds_0": {"sharding far", "sharding near", "sharding far_auto"},
		"ds_1": {"sharding far", "sharding far_auto"},
	} {
		if got := rows("SHOW RULES USED STORAGE UNIT " + unit + " FROM far_db"); !slices.Equal(got, want) {
			t.Errorf("rules used %s: %v, want %v", unit, got, want)
		}
	}
}
