package distvar

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

// TestWaitRulesNamesTheNodeHeldStill changes a database rule in one
// transaction (metadata.RuleWrites) and waits with WaitRules: the nodes
// that applied it are Applied, the one whose store is held still is
// Pending after the timeout, and once released it confirms.
func TestWaitRulesNamesTheNodeHeldStill(t *testing.T) {
	realtest.Each(t, "sk_distvar_rules_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo := open(t)
		if err := metadata.PersistDatabase(ctx, repo, paths.Layout554, config.Database{Name: "db"}); err != nil {
			t.Fatal(err)
		}
		a := startMember(t, open(t), "node-a")
		startMember(t, open(t), "node-b")
		c := startMember(t, open(t), "node-c")
		goOnline(t, repo, "node-a", "node-b", "node-c")
		testenv.Eventually(t, "every member to see db", func() bool {
			return a.store.Current().Databases["db"] != nil && c.store.Current().Databases["db"] != nil
		})
		c.stop()
		<-c.done

		rule := config.Rule{Type: "single", Content: map[string]any{"tables": []any{"*.*"}}}
		conds, ops, err := metadata.RuleWrites(ctx, repo, paths.Layout554, "db", nil, rule)
		if err != nil {
			t.Fatal(err)
		}
		sess, err := repo.NewSession(ctx, registry.SessionOptions{TTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close(context.Background())
		if _, err := sess.Commit(ctx, registry.Txn{Conds: conds, Ops: ops}); err != nil {
			t.Fatal(err)
		}
		target := func() string { return RulesFingerprint(a.store.Current().Databases["db"]) }
		testenv.Eventually(t, "node-a to apply the rule", func() bool { return a.store.Current().Databases["db"].Rules["single"].Content != nil })
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		var out Outcome
		err = WaitRules(wctx, repo, "db", target, &out)
		cancel()
		if err == nil || !slices.Equal(out.Pending, []string{"node-c"}) || !slices.Equal(out.Applied, []string{"node-a", "node-b"}) {
			t.Fatalf("WaitRules: %v, %+v; want node-c pending after the timeout", err, out)
		}
		c.run()
		if err := WaitRules(ctx, repo, "db", target, &out); err != nil || !slices.Equal(out.Applied, []string{"node-a", "node-b", "node-c"}) {
			t.Fatalf("after release: %v, %+v", err, out)
		}

		// The same content again writes nothing.
		applied, err := metadata.AppliedRuleContent(paths.Layout554, rule)
		if err != nil {
			t.Fatal(err)
		}
		if _, ops, err := metadata.RuleWrites(ctx, repo, paths.Layout554, "db", applied, rule); err != nil || len(ops) != 0 {
			t.Fatalf("unchanged rule: %d ops, %v; want none", len(ops), err)
		}
	})
}
