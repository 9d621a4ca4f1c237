package main

import (
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestRegistryMigrate, on real etcd and ZooKeeper: registry migrate
// --dry-run prints every key a migration from 5.5.3 to 5.5.4 adds,
// changes and removes and writes nothing; without it the tree is then in
// the 5.5.4 layout; a target the tree cannot move to without loss is
// refused.
func TestRegistryMigrate(t *testing.T) {
	for _, reg := range realRegistries(t) {
		t.Run(reg.name, func(t *testing.T) {
			ctx := testenv.Context(t)
			conf := clusterConf(t, reg, "sk_migrate_", "", nil)
			repo := openConf(ctx, t, conf, "/metadata")
			keyed := config.Rule{Type: "sharding", Content: map[string]any{
				"tables": map[string]any{"t_order": map[string]any{"actualDataNodes": "ds_0.t_order",
					"keyGenerateStrategy": map[string]any{"column": "order_id", "keyGeneratorName": "snowflake"}}},
				"keyGenerators":        map[string]any{"snowflake": map[string]any{"type": "SNOWFLAKE"}},
				"defaultTableStrategy": map[string]any{"none": ""}}}
			if err := metadatatest.CreateDatabase(ctx, repo, paths.Layout553, config.Database{Name: "db", Rules: []config.Rule{keyed}}); err != nil {
				t.Fatal(err)
			}
			table, _ := paths.RuleItem("db", "sharding", "tables", "t_order")
			strategy, _ := paths.RuleItem("db", "sharding", "key_generate_strategies", "t_order_order_id")
			out := mustRun(t, "registry", "migrate", "--to", "5.5.4", "--dry-run", "--conf", conf)
			for _, want := range []string{"change " + table + "\n", "add " + strategy + "\n", "dry run: nothing written"} {
				if !strings.Contains(out, want) {
					t.Errorf("the dry run does not print %q:\n%s", want, out)
				}
			}
			if tree, err := metadata.TreeLayouts(ctx, repo); err != nil || len(tree) != 1 || tree[0] != paths.Layout553 {
				t.Fatalf("after the dry run the tree is in %v %v, want 5.5.3 still", tree, err)
			}
			if out := mustRun(t, "registry", "migrate", "--to", "5.5.4", "--conf", conf); !strings.Contains(out, "database db: migrated (2 keys)") {
				t.Fatalf("migrate --to 5.5.4:\n%s", out)
			}
			if tree, err := metadata.TreeLayouts(ctx, repo); err != nil || len(tree) != 1 || tree[0] != paths.Layout554 {
				t.Fatalf("after the migration the tree is in %v %v, want 5.5.4", tree, err)
			}
			if out, err := run(t, ctx, "registry", "migrate", "--to", "5.4.1", "--conf", conf); err == nil || !strings.Contains(err.Error(), "5.5.x") {
				t.Fatalf("migrate --to 5.4.1: %v\n%s", err, out)
			}
		})
	}
}
