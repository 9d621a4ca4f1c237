package console_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

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
