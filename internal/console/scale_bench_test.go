package console

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

// BenchmarkRuleStatementsAtScale measures the rule statements next to
// 0, 1,000 and 10,000 existing sharding tables on 3 shardkeeper nodes (a
// metadata store and an acknowledgement each, each on its own registry
// client, one console on the first), in one run per registry: CREATE and
// ALTER SHARDING TABLE RULE of one table (each until every node confirmed
// the new rules digest; an untimed DROP follows), SET DIST VARIABLE and
// SHOW SHARDING TABLE RULES, 20 of each per size (RULE_SCALE_STATEMENTS
// changes it; RULE_SCALE_TABLES the sizes, "0,1000,10000"). For each size it reports p50 and p99, the CPU time of the
// process (the 3 nodes, the console and their registry clients) per
// statement, the resident set and the live heap once the tables are
// loaded, and for CREATE, ALTER and SET the ratio of the p50 and of the
// CPU to the empty database's. The existing tables are written straight
// to the registry (as ShardingSphere or an import would), in
// transactions of 50 tables, and applied by the nodes through their
// watches.
//
//	make bench-rules-scale
func BenchmarkRuleStatementsAtScale(b *testing.B) {
	sizes := []int{0, 1000, 10000}
	per := 20
	if v, err := strconv.Atoi(os.Getenv("RULE_SCALE_STATEMENTS")); err == nil && v > 0 {
		per = v
	}
	if v := os.Getenv("RULE_SCALE_TABLES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 || n > 100000 {
				b.Fatalf("RULE_SCALE_TABLES=%q: want table counts from 0 to 100000, comma-separated", v)
			}
			sizes = append(sizes, n)
		}
		if len(sizes) == 0 || sizes[0] != 0 {
			b.Fatalf("RULE_SCALE_TABLES=%q: the first size is 0, the empty database the ratios compare with", v)
		}
	}
	realtest.Each(b, "sk_scale_", func(b *testing.B, open func(t testing.TB) registry.Repository) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		b.Cleanup(cancel)
		repo := open(b)
		db := config.Database{Name: "scale_db", DataSources: map[string]config.DataSource{}}
		for i := range 2 {
			db.DataSources[fmt.Sprintf("ds_%d", i)] = config.DataSource{URL: fmt.Sprintf("jdbc:mysql://127.0.0.1:3306/ds_%d", i), MaxPoolSize: 5}
		}
		if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, db); err != nil {
			b.Fatal(err)
		}
		var stores []*metadata.Store
		var e *Engine
		for i := range 3 {
			r := repo
			if i > 0 {
				r = open(b)
			}
			n, st := benchMemberFor(b, r, fmt.Sprintf("scale-%d", i), 10*time.Second)
			stores = append(stores, st)
			if i == 0 {
				e = New(Deps{Repo: repo, Node: n, Metadata: st, Logger: quietLogger(), SetVariableTimeout: 30 * time.Second})
			}
		}
		s := newSession()
		s.Database = "scale_db"
		tables := func(st *metadata.Store) int {
			d := st.Current().Databases["scale_db"]
			if d == nil {
				return -1
			}
			m, _ := d.Rules["sharding"].Content["tables"].(map[string]any)
			return len(m)
		}
		cpu := func() time.Duration {
			var ru syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
		type cell struct{ lat, cpu []time.Duration }
		run := func(c *cell, q string, timed bool) *Result {
			c0, t0 := cpu(), time.Now()
			res, err := e.Execute(ctx, s, q)
			d, dc := time.Since(t0), cpu()-c0
			if err != nil {
				b.Fatalf("%s: %v", q, err)
			}
			if len(res.Warnings) > 0 {
				b.Fatalf("%s: %v", q, res.Warnings)
			}
			if timed {
				c.lat, c.cpu = append(c.lat, d), append(c.cpu, dc)
			}
			return res
		}
		const create = "CREATE SHARDING TABLE RULE t_bench (DATANODES('ds_${0..1}.t_bench_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='t_bench_${id % 2}')))))"
		const alter = "ALTER SHARDING TABLE RULE t_bench (DATANODES('ds_${0..1}.t_bench_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=uid, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='t_bench_${uid % 2}')))))"
		base := map[string]float64{}
		have := 0
		for b.Loop() {
			for _, n := range sizes {
				t0 := time.Now()
				writeTables(ctx, b, repo, have, n)
				have = max(have, n)
				for _, st := range stores {
					if _, err := st.Wait(ctx, func(*metadata.Snapshot) bool { return tables(st) == n || (n == 0 && tables(st) <= 0) }); err != nil {
						b.Fatalf("waiting for the 3 nodes to hold %d tables: %v", n, err)
					}
				}
				loaded := time.Since(t0)
				runtime.GC()
				var mem runtime.MemStats
				runtime.ReadMemStats(&mem)
				rss := rssMiB()
				var cCreate, cAlter, cSet, cShow, drop cell
				for i := range per {
					run(&cCreate, create, true)
					run(&cAlter, alter, true)
					run(&drop, "DROP SHARDING TABLE RULE t_bench", false)
					run(&cSet, fmt.Sprintf("SET DIST VARIABLE sql_show = %t", i%2 == 0), true)
					if res := run(&cShow, "SHOW SHARDING TABLE RULES", true); len(res.Rows) != n {
						b.Fatalf("SHOW SHARDING TABLE RULES: %d rows, want %d", len(res.Rows), n)
					}
				}
				var line []string
				for _, x := range []struct {
					name string
					c    *cell
				}{{"create", &cCreate}, {"alter", &cAlter}, {"set", &cSet}, {"show", &cShow}} {
					slices.Sort(x.c.lat)
					slices.Sort(x.c.cpu)
					p50, p99, c50 := ms(pct(x.c.lat, 50)), ms(pct(x.c.lat, 99)), ms(pct(x.c.cpu, 50))
					prefix := fmt.Sprintf("t%d-%s", n, x.name)
					b.ReportMetric(p50, prefix+"-p50-ms")
					b.ReportMetric(p99, prefix+"-p99-ms")
					b.ReportMetric(c50, prefix+"-cpu-ms")
					if n == 0 {
						base[x.name+"p50"], base[x.name+"cpu"] = p50, c50
					} else if x.name != "show" {
						b.ReportMetric(p50/base[x.name+"p50"], prefix+"-p50-ratio")
						b.ReportMetric(c50/base[x.name+"cpu"], prefix+"-cpu-ratio")
					}
					line = append(line, fmt.Sprintf("%s p50 %.1f p99 %.1f cpu %.1f ms", x.name, p50, p99, c50))
				}
				b.ReportMetric(rss, fmt.Sprintf("t%d-rss-MiB", n))
				b.ReportMetric(float64(mem.HeapInuse)/(1<<20), fmt.Sprintf("t%d-heap-MiB", n))
				b.Logf("%d tables (written and loaded by 3 nodes in %s; rss %.0f MiB, heap %.0f MiB): %s", n, loaded.Round(time.Millisecond), rss, float64(mem.HeapInuse)/(1<<20), strings.Join(line, "; "))
			}
		}
	})
}

// writeTables writes sharding tables t_scale_{from..to-1} (and the
// algorithm they use) into scale_db's sharding rule, 50 tables per
// transaction, as new items.
func writeTables(ctx context.Context, b *testing.B, repo registry.Repository, from, to int) {
	for lo := from; lo < to; lo += 50 {
		tables := map[string]any{}
		for i := lo; i < min(lo+50, to); i++ {
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
		kvs, err := metadata.DatabaseWrites(paths.DefaultLayout, config.Database{Name: "scale_db", Rules: []config.Rule{{Type: "sharding", Content: content}}})
		if err != nil {
			b.Fatal(err)
		}
		var conds []registry.Cond
		var ops []registry.Op
		for _, kv := range kvs[1:] {
			conds = append(conds, registry.Cond{Key: kv.Key})
			ops = append(ops, registry.Op{Key: kv.Key, Value: kv.Value})
		}
		if err := metadatatest.Commit(ctx, repo, conds, ops); err != nil {
			b.Fatal(err)
		}
	}
}

// rssMiB is the process's resident set in MiB (0 where /proc is not).
func rssMiB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
