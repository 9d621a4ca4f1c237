package metadata

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/registry"
)

// BenchmarkPropsPropagation10Nodes: a props change made on one of 10 nodes
// (each with its own registry client and watches), timed until every node
// has it in its snapshot. Reports p50 and p99 over all node observations.
//
//	go test ./internal/metadata -run - -bench PropsPropagation -benchtime 200x
func BenchmarkPropsPropagation10Nodes(b *testing.B) {
	for _, be := range realBackends(b) {
		b.Run(be.name, func(b *testing.B) {
			first := be.open(b)
			stores := make([]*Store, 10)
			repos := make([]registry.Repository, 10)
			for i := range stores {
				repos[i] = first
				if i > 0 {
					repos[i] = another(b, first)
				}
				stores[i], _ = bootOn(b, repos[i], &config.Config{Props: config.Props{}}, nil)
				runStore(b, stores[i])
			}
			var mu sync.Mutex
			var lat []time.Duration
			var start time.Time
			var want string
			var wg sync.WaitGroup
			for _, s := range stores {
				seen := ""
				s.Subscribe(func(snap *Snapshot, _ []Change) {
					v := snap.Props.Value("proxy-netty-backlog")
					mu.Lock()
					defer mu.Unlock()
					if v == want && v != seen {
						seen = v
						lat = append(lat, time.Since(start))
						wg.Done()
					}
				})
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				mu.Lock()
				want = strconv.Itoa(2000 + i)
				start = time.Now()
				wg.Add(len(stores))
				mu.Unlock()
				if err := SetProps(ctx, repos[i%len(repos)], map[string]string{"proxy-netty-backlog": want}); err != nil {
					b.Fatal(err)
				}
				wg.Wait()
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max_ms")
		})
	}
}

// BenchmarkTables10k: node 1 boots on an empty registry with a database of
// 10,000 introspected tables (path A, persisted), node 2 boots from the
// registry (path B). Reports both durations in seconds, the CPU time the
// process spent on each (user and system: on a loaded machine the
// durations grow with the load, the CPU time much less), and the live
// heap node 2's store holds once loaded.
//
//	go test ./internal/metadata -run - -bench Tables10k -benchtime 1x
func BenchmarkTables10k(b *testing.B) {
	const n = 10000
	tables := map[string]datasource.Table{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("t_order_%05d", i)
		tables[name] = datasource.Table{Name: name, Columns: []datasource.Column{
			{Name: "order_id", DataType: -5, TypeName: "bigint", PrimaryKey: true, Generated: true},
			{Name: "user_id", DataType: 4, TypeName: "int"},
			{Name: "status", DataType: 12, TypeName: "varchar(32)", Nullable: true},
			{Name: "created", DataType: 93, TypeName: "timestamp", Nullable: true},
		}, Indexes: []datasource.Index{{Name: "idx_user", Columns: []string{"user_id"}}}}
	}
	introspect := func(context.Context, config.Database) ([]datasource.Schema, error) {
		return []datasource.Schema{{Name: "big_db", Tables: tables}}, nil
	}
	cfg := &config.Config{Props: config.Props{}, Databases: []config.Database{{Name: "big_db",
		DataSources: map[string]config.DataSource{"ds": config.NewDataSource("jdbc:sqlite:/tmp/unused.db", "", "")}}}}
	for _, be := range realBackends(b) {
		b.Run(be.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				first := be.open(b)
				c0, t0 := cpuTime(), time.Now()
				s1, _ := bootOn(b, first, cfg, introspect)
				persist, persistCPU := time.Since(t0), cpuTime()-c0
				second := another(b, first)
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				c1, t1 := cpuTime(), time.Now()
				s2, _ := bootOn(b, second, &config.Config{}, nil)
				load, loadCPU := time.Since(t1), cpuTime()-c1
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				b.ReportMetric(persistCPU.Seconds(), "persist_cpu_s")
				b.ReportMetric(loadCPU.Seconds(), "load_cpu_s")
				b.ReportMetric((float64(after.HeapAlloc)-float64(before.HeapAlloc))/(1<<20), "load_heap_MiB")
				if got := len(s2.Current().Databases["big_db"].Schemas["big_db"].Tables); got != n || len(s1.Current().Databases["big_db"].Schemas["big_db"].Tables) != n {
					b.Fatalf("node 2 loaded %d tables", got)
				}
				b.ReportMetric(persist.Seconds(), "persist_s")
				b.ReportMetric(load.Seconds(), "load_s")
			}
		})
	}
}

// cpuTime is the user and system time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
