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
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

// BenchmarkCreateShardingTableRule times CREATE and DROP SHARDING TABLE
// RULE of one table next to 0, 1,000 and 10,000 existing tables, on the
// memory registry and on real etcd and ZooKeeper, with the console's rule
// cache (warm, as in a running node): the executing node's work per
// statement, with no other node to wait for.
func BenchmarkCreateShardingTableRule(b *testing.B) {
	eachRuleScaleRepo(b, func(b *testing.B, open func(b *testing.B) registry.Repository) {
		benchmarkCreateShardingTableRule(b, open, false)
	})
}

// BenchmarkCreateShardingTableRuleOnly is BenchmarkCreateShardingTableRule
// with CREATEs only, each of a new table (the tables grow by b.N): the
// cost of one CREATE, apart from DROP's.
func BenchmarkCreateShardingTableRuleOnly(b *testing.B) {
	eachRuleScaleRepo(b, func(b *testing.B, open func(b *testing.B) registry.Repository) {
		benchmarkCreateShardingTableRule(b, open, true)
	})
}

// eachRuleScaleRepo runs bench on the memory registry and on real etcd
// and ZooKeeper.
func eachRuleScaleRepo(b *testing.B, bench func(b *testing.B, open func(b *testing.B) registry.Repository)) {
	b.Run("memory", func(b *testing.B) {
		bench(b, func(b *testing.B) registry.Repository { return memory.New() })
	})
	realtest.Each(b, "rulescale", func(b *testing.B, open func(t testing.TB) registry.Repository) {
		bench(b, func(b *testing.B) registry.Repository { return open(b) })
	})
}

func benchmarkCreateShardingTableRule(b *testing.B, open func(b *testing.B) registry.Repository, createOnly bool) {
	for _, n := range []int{0, 1000, 10000} {
		runs := 0
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			repo := open(b)
			runs++ // the benchmark runs again for its b.N, in the same namespace
			db := fmt.Sprintf("db_%d_%d", n, runs)
			if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: db, DataSources: map[string]config.DataSource{
				"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", ""),
				"ds_1": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_1", "root", ""),
			}}); err != nil {
				b.Fatal(err)
			}
			if err := metadatatest.WriteShardingTables(ctx, repo, db, 0, n); err != nil {
				b.Fatal(err)
			}
			create, err := families.Parse("CREATE SHARDING TABLE RULE t_bench (DATANODES('ds_${0..1}.t_bench_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='t_bench_${id % 2}')))))")
			if err != nil {
				b.Fatal(err)
			}
			drop, err := families.Parse("DROP SHARDING TABLE RULE t_bench")
			if err != nil {
				b.Fatal(err)
			}
			opts := Options{Cache: metadata.NewRuleCache()}
			// The console's cache is warm in a running node: its one decode of
			// every table is not a statement's.
			if _, _, err := opts.Cache.ReadDatabase(ctx, repo, db); err != nil {
				b.Fatal(err)
			}
			statements := []distsql.Statement{create, drop}
			var creates []distsql.Statement // createOnly: one a table
			for i := 0; createOnly && i < b.N; i++ {
				st, err := families.Parse(fmt.Sprintf("CREATE SHARDING TABLE RULE t_new_%d (DATANODES('ds_${0..1}.t_new_%d_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='t_new_%d_${id %% 2}')))))", i, i, i))
				if err != nil {
					b.Fatal(err)
				}
				creates = append(creates, st)
			}
			b.ResetTimer()
			for i := range b.N {
				if createOnly {
					statements = creates[i : i+1]
				}
				for _, st := range statements {
					if out, err := Apply(ctx, repo, db, st, opts); err != nil || !out.Changed {
						b.Fatalf("%v: %+v %v", st, out, err)
					}
				}
			}
		})
	}
}
