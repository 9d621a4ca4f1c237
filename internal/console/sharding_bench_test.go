package console

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

// benchMember starts a node on its own registry client with a running
// metadata store and acknowledgement, as the daemon does; cleanup stops
// them. It returns the node and its store.
func benchMember(b testing.TB, repo registry.Repository, id string) (*cluster.Node, *metadata.Store) {
	b.Helper()
	return benchMemberFor(b, repo, id, 600*time.Millisecond)
}

// benchMemberFor is benchMember with the node's registration reservation
// (a longer one keeps a node busy applying thousands of items registered).
func benchMemberFor(b testing.TB, repo registry.Repository, id string, reservation time.Duration) (*cluster.Node, *metadata.Store) {
	b.Helper()
	ctx := testenv.Context(b)
	node, err := cluster.Open(ctx, repo, cluster.Config{InstanceID: id, Port: 3307, Reservation: reservation, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	store, err := metadata.Bootstrap(ctx, repo, nil, nil, metadata.Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = store.Run(runCtx) }()
	a, err := distvar.StartAcker(ctx, repo, distvar.AckerConfig{InstanceID: id, Node: node, Store: store, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		a.Close()
		stop()
		<-done
		_ = node.Close(context.Background())
	})
	return node, store
}

// BenchmarkCreateShardingTableRule measures CREATE SHARDING TABLE RULE on
// a cluster of 10 shardkeeper nodes (a metadata store and an
// acknowledgement each, each on its own registry client): the time from
// the statement until every node confirmed the new rules, 10 statements
// per iteration (each followed by an untimed DROP). It reports p50 and
// p99 and, as the baseline from the same run and cluster, SET DIST
// VARIABLE's p50 and p99 (the same wait for a /props version).
func BenchmarkCreateShardingTableRule(b *testing.B) {
	realtest.Each(b, "sk_rules_", func(b *testing.B, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(b)
		repo := open(b)
		db := config.Database{Name: "bench_db", DataSources: map[string]config.DataSource{}}
		for i := range 2 {
			db.DataSources[fmt.Sprintf("ds_%d", i)] = config.DataSource{URL: fmt.Sprintf("jdbc:mysql://127.0.0.1:3306/ds_%d", i), MaxPoolSize: 5}
		}
		if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, db); err != nil {
			b.Fatal(err)
		}
		var first *cluster.Node
		var store *metadata.Store
		for i := range 10 {
			r := repo
			if i > 0 {
				r = open(b)
			}
			n, st := benchMember(b, r, fmt.Sprintf("bench-%02d", i))
			if i == 0 {
				first, store = n, st
			}
		}
		e := New(Deps{Repo: repo, Node: first, Metadata: store, Logger: quietLogger(), SetVariableTimeout: 10 * time.Second})
		s := newSession()
		s.Database = "bench_db"
		testenv.Eventually(b, "the store to see bench_db", func() bool { return store.Current().Databases["bench_db"] != nil })
		run := func(q string) time.Duration {
			start := time.Now()
			res, err := e.Execute(ctx, s, q)
			if err != nil {
				b.Fatalf("%s: %v", q, err)
			}
			d := time.Since(start)
			if len(res.Warnings) > 0 {
				b.Fatalf("%s: %v", q, res.Warnings)
			}
			return d
		}
		var create, set []time.Duration
		n := 0
		for b.Loop() {
			for range 10 {
				n++
				create = append(create, run("CREATE SHARDING TABLE RULE t_bench (DATANODES('ds_${0..1}.t_bench_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='t_bench_${id % 2}')))))"))
				run("DROP SHARDING TABLE RULE t_bench")
				set = append(set, run(fmt.Sprintf("SET DIST VARIABLE sql_show = %t", n%2 == 0)))
			}
		}
		slices.Sort(create)
		slices.Sort(set)
		b.ReportMetric(ms(pct(create, 50)), "create-p50-ms")
		b.ReportMetric(ms(pct(create, 99)), "create-p99-ms")
		b.ReportMetric(ms(pct(set, 50)), "set-p50-ms")
		b.ReportMetric(ms(pct(set, 99)), "set-p99-ms")
	})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pct returns the p-th percentile of sorted.
func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
