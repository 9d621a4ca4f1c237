package rules

import (
	"context"
	"fmt"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// scaleTables writes n sharding tables into database db's sharding rule,
// 50 per transaction, as new items (as tools/rulescalebench does).
func scaleTables(ctx context.Context, tb testing.TB, repo registry.Repository, n int) {
	tb.Helper()
	for lo := 0; lo < n; lo += 50 {
		tables := map[string]any{}
		for i := lo; i < min(lo+50, n); i++ {
			name := fmt.Sprintf("t_scale_%05d", i)
			tables[name] = map[string]any{
				"actualDataNodes": "ds_${0..1}." + name + "_${0..1}",
				"tableStrategy":   map[string]any{"standard": map[string]any{"shardingColumn": "order_id", "shardingAlgorithmName": "scale_mod"}},
			}
		}
		content := map[string]any{"tables": tables}
		if lo == 0 {
			content["shardingAlgorithms"] = map[string]any{"scale_mod": map[string]any{"type": "MOD", "props": map[string]any{"sharding-count": 2}}}
		}
		kvs, err := metadata.DatabaseWrites(paths.DefaultLayout, config.Database{Name: "db", Rules: []config.Rule{{Type: "sharding", Content: content}}})
		if err != nil {
			tb.Fatal(err)
		}
		var conds []registry.Cond
		var ops []registry.Op
		for _, kv := range kvs[1:] {
			conds = append(conds, registry.Cond{Key: kv.Key})
			ops = append(ops, registry.Op{Key: kv.Key, Value: kv.Value})
		}
		if err := metadatatest.Commit(ctx, repo, conds, ops); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkCreateShardingTableRule times CREATE and DROP SHARDING TABLE
// RULE of one table next to 0, 1,000 and 10,000 existing tables, on the
// memory registry, with the console's rule cache: the executing node's
// work per statement.
func BenchmarkCreateShardingTableRule(b *testing.B) {
	for _, n := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			repo := memory.New()
			if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "db", DataSources: map[string]config.DataSource{
				"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", ""),
				"ds_1": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_1", "root", ""),
			}}); err != nil {
				b.Fatal(err)
			}
			scaleTables(ctx, b, repo, n)
			create, err := families.Parse("CREATE SHARDING TABLE RULE t_bench (DATANODES('ds_${0..1}.t_bench_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='t_bench_${id % 2}')))))")
			if err != nil {
				b.Fatal(err)
			}
			drop, err := families.Parse("DROP SHARDING TABLE RULE t_bench")
			if err != nil {
				b.Fatal(err)
			}
			opts := Options{Cache: metadata.NewRuleCache()}
			b.ResetTimer()
			for range b.N {
				for _, st := range []distsql.Statement{create, drop} {
					if out, err := Apply(ctx, repo, "db", st, opts); err != nil || !out.Changed {
						b.Fatalf("%v: %+v %v", st, out, err)
					}
				}
			}
		})
	}
}
