package httpapi

import (
	"net/http"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

// TestMigrateRoute, on real etcd and ZooKeeper: POST
// /api/v1/registry/migrate lists a dry run's keys and writes nothing,
// migrates without dryRun, and refuses with 409 a sharding cache the
// target cannot hold, and with 400 a release it does not know.
func TestMigrateRoute(t *testing.T) {
	realtest.Each(t, "sk_migrate_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo := open(t)
		keyed := config.Rule{Type: "sharding", Content: map[string]any{
			"tables": map[string]any{"t_order": map[string]any{"actualDataNodes": "ds_0.t_order",
				"keyGenerateStrategy": map[string]any{"column": "order_id", "keyGeneratorName": "snowflake"}}},
			"keyGenerators": map[string]any{"snowflake": map[string]any{"type": "SNOWFLAKE"}}}}
		if err := metadatatest.CreateDatabase(ctx, repo, paths.Layout553, config.Database{Name: "db", Rules: []config.Rule{keyed}}); err != nil {
			t.Fatal(err)
		}
		n := startNode(t, repo, "node-migrate", nil)
		var ans struct {
			DryRun    bool `json:"dryRun"`
			Databases []struct {
				Database string `json:"database"`
				Migrated bool   `json:"migrated"`
				Steps    []struct {
					Action string `json:"action"`
					Key    string `json:"key"`
				} `json:"steps"`
			} `json:"databases"`
		}
		r := do(t, n, "POST", "/api/v1/registry/migrate", testToken, `{"to":"5.5.4","dryRun":true}`)
		if r.status != http.StatusOK {
			t.Fatalf("dry run: %d %s", r.status, r.body)
		}
		r.json(t, &ans)
		strategy, _ := paths.RuleItem("db", "sharding", "key_generate_strategies", "t_order_order_id")
		if !ans.DryRun || len(ans.Databases) != 1 || ans.Databases[0].Migrated || len(ans.Databases[0].Steps) != 2 ||
			ans.Databases[0].Steps[0] != (struct {
				Action string `json:"action"`
				Key    string `json:"key"`
			}{"add", strategy}) {
			t.Fatalf("dry run: %s", r.body)
		}
		// 5.5.2 and 5.5.3 write this rule alike.
		if tree, err := metadata.TreeLayouts(ctx, repo); err != nil || len(tree) != 2 || tree[1] != paths.Layout553 {
			t.Fatalf("after the dry run the tree is in %v %v, want 5.5.2 and 5.5.3", tree, err)
		}
		r = do(t, n, "POST", "/api/v1/registry/migrate", testToken, `{"to":"5.5.4"}`)
		if r.status != http.StatusOK {
			t.Fatalf("migrate: %d %s", r.status, r.body)
		}
		r.json(t, &ans)
		if len(ans.Databases) != 1 || !ans.Databases[0].Migrated {
			t.Fatalf("migrate: %s", r.body)
		}
		if tree, err := metadata.TreeLayouts(ctx, repo); err != nil || len(tree) != 1 || tree[0] != paths.Layout554 {
			t.Fatalf("after the migration the tree is in %v %v", tree, err)
		}
		do(t, n, "POST", "/api/v1/registry/migrate", testToken, `{"to":"5.4.1"}`).apiError(t, http.StatusBadRequest, 0, "5.5.x")

		cached := config.Rule{Type: "sharding", Content: map[string]any{"shardingCache": map[string]any{"allowedMaxSqlLength": 100}}}
		if err := metadatatest.CreateDatabase(ctx, repo, paths.Layout553, config.Database{Name: "cached", Rules: []config.Rule{cached}}); err != nil {
			t.Fatal(err)
		}
		do(t, n, "POST", "/api/v1/registry/migrate", testToken, `{"to":"5.5.4"}`).apiError(t, http.StatusConflict, 0, "shardingCache")
	})
}
