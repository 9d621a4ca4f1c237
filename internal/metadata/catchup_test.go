package metadata

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestCaughtUpWaitsForTheView: CaughtUp returns only once the store's
// view holds the rules and props the registry holds; while the view lags (the
// store not running, as a node cut off from the registry's events) it
// names the databases behind when its context ends.
func TestCaughtUpWaitsForTheView(t *testing.T) {
	ctx := testenv.Context(t)
	base := memory.New()
	n := bootNode(t, ctx, base, otherConfig())
	bounded := func(d time.Duration) error {
		c, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return n.store.CaughtUp(c)
	}
	if err := bounded(time.Second); err != nil {
		t.Fatalf("CaughtUp right after the store loaded: %v", err)
	}
	w := base.Clone()
	t.Cleanup(func() { _ = w.Close() })
	tbl := map[string]any{"actualDataNodes": "ds.t_new"}
	if err := AlterRuleItem(ctx, w, paths.DefaultLayout, "other_db", "sharding", "tables", "t_new", tbl); err != nil {
		t.Fatal(err)
	}
	if err := AlterGlobalRule(ctx, w, config.Rule{Type: "transaction", Content: map[string]any{"defaultType": "LOCAL"}}); err != nil {
		t.Fatal(err)
	}
	if err := AlterProps(ctx, w, config.Props{"sql-show": "false"}); err != nil {
		t.Fatal(err)
	}
	err := bounded(700 * time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "[/ /props other_db]") {
		t.Fatalf("CaughtUp while the view lags: %v; want the deadline, naming [/ /props other_db]", err)
	}
	n.run(t)
	if err := bounded(10 * time.Second); err != nil {
		t.Fatalf("CaughtUp with the store running: %v", err)
	}
	snap := n.store.Current()
	tables, _ := snap.Databases["other_db"].Rules["sharding"].Content["tables"].(map[string]any)
	if tables["t_new"] == nil || snap.GlobalRules["transaction"].Content == nil || snap.Props["sql-show"] != "false" {
		t.Fatalf("caught up without the new rules: sharding tables %v, global rules %v, props %v", tables, snap.GlobalRules, snap.Props)
	}
	// A database dropped in the registry: caught up once the view drops it.
	if err := DropDatabase(ctx, w, "other_db"); err != nil {
		t.Fatal(err)
	}
	if err := bounded(10 * time.Second); err != nil {
		t.Fatalf("CaughtUp after a DROP DATABASE: %v", err)
	}
	if d := n.store.Current().Databases["other_db"]; d.RulesDigest() != "" {
		t.Fatalf("caught up with other_db's rules still in the view: %v", d.Rules)
	}
}
