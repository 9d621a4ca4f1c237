package sharding

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// TestShardingTableRuleStopsWhenCancelled: CREATE SHARDING TABLE RULE of
// ten tables of 10,000 data nodes (100,000, the statement bound) builds
// its rule with a live context; with its context cancelled (KILL, the
// client gone) it stops before building any table and answers
// context.Canceled.
func TestShardingTableRuleStopsWhenCancelled(t *testing.T) {
	st := &CreateTableRule{}
	for i := range 10 {
		st.Rules = append(st.Rules, TableRule{Table: fmt.Sprintf("t_%d", i), DataNodes: []string{fmt.Sprintf("ds_${0..1}.t_%d_${0..4999}", i)}})
	}
	change := Family.Change(st)
	if change == nil {
		t.Fatal("CREATE SHARDING TABLE RULE has no change that reads the statement's context")
	}
	d := rule.Database{Name: "db"}
	next, err := change(context.Background(), d, map[string]any{})
	if err != nil || len(rule.Map(next["tables"])) != 10 {
		t.Fatalf("live: %d tables, %v; want 10", len(rule.Map(next["tables"])), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	next, err = change(ctx, d, map[string]any{})
	if !errors.Is(err, context.Canceled) || next != nil {
		t.Errorf("cancelled: %v, %v; want context.Canceled and no rule", next, err)
	}
}
