package metadata

import (
	"fmt"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestRuleWritesLoadInUpstreamClasses writes, with RuleWrites and
// GlobalWrites as the rule statements do, a readwrite-splitting rule with
// a load balancer, a single rule and the global rules DistSQL alters, for
// each layout, then removes a group again: every value written loads in
// the release's classes (strict Go decoder and SnakeYAML mirrors), and a
// removed item leaves no key behind.
func TestRuleWritesLoadInUpstreamClasses(t *testing.T) {
	for _, layout := range []paths.Layout{paths.Layout552, paths.Layout553, paths.Layout554} {
		t.Run(fmt.Sprint(layout), func(t *testing.T) {
			ctx := testenv.Context(t)
			repo := memory.New()
			if err := CreateDatabase(ctx, repo, layout, config.Database{Name: "db"}); err != nil {
				t.Fatal(err)
			}
			sess, err := repo.NewSession(ctx, registry.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			commit := func(conds []registry.Cond, ops []registry.Op, err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := sess.Commit(ctx, registry.Txn{Conds: conds, Ops: ops}); err != nil {
					t.Fatal(err)
				}
			}
			rw := func(groups ...string) config.Rule {
				g := map[string]any{}
				for _, n := range groups {
					g[n] = map[string]any{"writeDataSourceName": "ds_0", "readDataSourceNames": []any{"ds_1", "ds_2"},
						"transactionalReadQueryStrategy": "FIXED", "loadBalancerName": n + "_random"}
				}
				lb := map[string]any{}
				for _, n := range groups {
					lb[n+"_random"] = map[string]any{"type": "RANDOM", "props": map[string]any{"a": "1"}}
				}
				return config.Rule{Type: "readwrite_splitting", Content: map[string]any{"dataSourceGroups": g, "loadBalancers": lb}}
			}
			commit(RuleWrites(ctx, repo, layout, "db", config.Rule{}, rw("rw_a", "rw_b")))
			commit(RuleWrites(ctx, repo, layout, "db", config.Rule{}, config.Rule{Type: "single", Content: map[string]any{"tables": []any{"ds_0.*", "*.t_x"}, "defaultDataSource": "ds_1"}}))
			commit(GlobalWrites(ctx, repo, []config.Rule{
				{Type: "transaction", Content: map[string]any{"defaultType": "XA", "providerType": "Narayana", "props": map[string]any{}}},
				{Type: "sql_parser", Content: map[string]any{"parseTreeCache": map[string]any{"initialCapacity": 64, "maximumSize": 512}}},
				{Type: "global_clock", Content: map[string]any{"type": "TSO", "provider": "local", "enabled": true}},
				{Type: "sql_federation", Content: map[string]any{"sqlFederationEnabled": true}},
			}, nil))
			values := persistedValues(t, repo)
			for _, v := range values {
				if err := checkUpstreamLoads(layout, v.k, v.data); err != nil {
					t.Errorf("%s: upstream cannot load it: %v\n%s", v.key, err, v.data)
				}
			}
			failures, err := loadWithSnakeYAML(t, layout, values)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range failures {
				t.Error(f)
			}

			// Dropping rw_b deletes its group and load balancer items.
			commit(RuleWrites(ctx, repo, layout, "db", rw("rw_a", "rw_b"), rw("rw_a")))
			for _, item := range []struct{ item, name string }{{"data_source_groups", "rw_b"}, {"load_balancers", "rw_b_random"}} {
				node, _ := layout.RuleItem("db", "readwrite_splitting", item.item, item.name)
				if kvs, err := repo.List(ctx, node); err != nil || len(kvs) != 0 {
					t.Errorf("%s after the drop: %v, %v", node, kvs, err)
				}
			}
			node, _ := layout.RuleItem("db", "readwrite_splitting", "data_source_groups", "rw_a")
			if kv, err := repo.Get(ctx, paths.ActiveVersion(node)); err != nil || string(kv.Value) != "0" {
				t.Errorf("rw_a, unchanged, was rewritten: %s %v", kv.Value, err)
			}
		})
	}
}
