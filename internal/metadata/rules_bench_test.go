package metadata

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// shardingRule is a sharding rule of n tables over two storage units, each
// table with its own strategies and key generate strategy, sharing two
// algorithms and a key generator, as CREATE SHARDING TABLE RULE writes them.
func shardingRule(n int) config.Rule {
	tables := map[string]any{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("t_order_%05d", i)
		tables[name] = map[string]any{
			"actualDataNodes":     "ds_${0..1}." + name + "_${0..1}",
			"databaseStrategy":    map[string]any{"standard": map[string]any{"shardingColumn": "user_id", "shardingAlgorithmName": "db_mod"}},
			"tableStrategy":       map[string]any{"standard": map[string]any{"shardingColumn": "order_id", "shardingAlgorithmName": "t_mod"}},
			"keyGenerateStrategy": map[string]any{"column": "order_id", "keyGeneratorName": "snowflake"},
		}
	}
	return config.Rule{Type: "sharding", Content: map[string]any{
		"tables": tables,
		"shardingAlgorithms": map[string]any{
			"db_mod": map[string]any{"type": "MOD", "props": map[string]any{"sharding-count": 2}},
			"t_mod":  map[string]any{"type": "MOD", "props": map[string]any{"sharding-count": 2}},
		},
		"keyGenerators": map[string]any{"snowflake": map[string]any{"type": "SNOWFLAKE"}},
	}}
}

// shardingKVs are the keys under /metadata/db/rules of shardingRule(n), as
// a fresh database holds them.
func shardingKVs(tb testing.TB, n int) []registry.KV {
	tb.Helper()
	kvs, err := DatabaseWrites(paths.DefaultLayout, config.Database{Name: "db", Rules: []config.Rule{shardingRule(n)}})
	if err != nil {
		tb.Fatal(err)
	}
	return kvs[1:] // the database node itself is not under rules
}

// BenchmarkDecodeRules decodes a sharding rule of n and of 4n tables in the
// same run and reports the ratio of the times per decode (4 for work
// linear in the items, 16 for quadratic).
//
//	go test ./internal/metadata -run - -bench DecodeRules -benchtime 5x
func BenchmarkDecodeRules(b *testing.B) {
	const n = 1000
	small, large := shardingKVs(b, n), shardingKVs(b, 4*n)
	decodeEach := func(kvs []registry.KV, want int) time.Duration {
		t0 := time.Now()
		rules := DecodeRules("db", kvs)
		d := time.Since(t0)
		if got := len(rules["sharding"].Content["tables"].(map[string]any)); got != want {
			b.Fatalf("decoded %d tables, want %d", got, want)
		}
		return d
	}
	var ts, tl time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ts += decodeEach(small, n)
		tl += decodeEach(large, 4*n)
	}
	b.ReportMetric(float64(ts.Microseconds())/1000/float64(b.N), "ms/decode_1k")
	b.ReportMetric(float64(tl.Microseconds())/1000/float64(b.N), "ms/decode_4k")
	b.ReportMetric(float64(tl)/float64(ts), "ratio_4k/1k")
}

// BenchmarkApplyOneTable applies, as a node's Store does from its watch,
// the keys of one new sharding table and then its removal next to 0,
// 1,000 and 10,000 existing tables: the work each node does per CREATE
// and DROP of a table.
//
//	go test ./internal/metadata -run - -bench ApplyOneTable -benchtime 200x
func BenchmarkApplyOneTable(b *testing.B) {
	for _, n := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ap := newApplier(nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
			d := newDraft(emptySnapshot())
			var events []registry.Event
			for _, kv := range shardingKVs(b, n) {
				events = append(events, registry.Event{Type: registry.EventPut, KV: kv})
			}
			ap.apply(context.Background(), d, events, true)
			snap := d.s
			node, err := paths.RuleItem("db", "sharding", "tables", "t_bench")
			if err != nil {
				b.Fatal(err)
			}
			value := []byte("actualDataNodes: ds_${0..1}.t_bench_${0..1}\nlogicTable: t_bench\n")
			put := []registry.Event{
				{Type: registry.EventPut, KV: registry.KV{Key: paths.Version(node, 0), Value: value, Version: 1}},
				{Type: registry.EventPut, KV: registry.KV{Key: paths.ActiveVersion(node), Value: []byte("0"), Version: 1}},
			}
			del := []registry.Event{
				{Type: registry.EventDelete, KV: registry.KV{Key: paths.Version(node, 0)}},
				{Type: registry.EventDelete, KV: registry.KV{Key: paths.ActiveVersion(node)}},
			}
			b.ResetTimer()
			for range b.N {
				for _, batch := range [][]registry.Event{put, del} {
					d := newDraft(snap)
					ap.apply(context.Background(), d, batch, true)
					snap = d.s
					_ = snap.Databases["db"].RulesDigest()
				}
			}
		})
	}
}
