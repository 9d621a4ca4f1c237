package metadata

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/registry"
)

// BenchmarkDataSourceStatePropagation3Nodes: a read data source disabled or
// enabled by one of 3 nodes (each with its own registry client and
// watches), timed until every node has it in its snapshot, next to the
// baseline measured in the same run: a put of the same size and depth
// seen by 3 raw registry watches. Reports p50 and p99 over all node observations for both, and
// the ratio of the p50s.
//
//	go test ./internal/metadata -run - -bench DataSourceStatePropagation -benchtime 200x
func BenchmarkDataSourceStatePropagation3Nodes(b *testing.B) {
	for _, be := range realBackends(b) {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			first := be.open(b)
			repos := []registry.Repository{first, another(b, first), another(b, first)}
			q := QualifiedDataSource{"rw_db", "readwrite_ds", "read_ds_0"}
			// The baseline's key: the same depth, outside what the stores
			// watch.
			raw := "/nodes/bench_baseline/" + q.String()
			var mu sync.Mutex
			var lat, base []time.Duration
			var start time.Time
			want := ""
			var wg sync.WaitGroup
			for _, r := range repos {
				s, err := Load(ctx, r, nil)
				if err != nil {
					b.Fatal(err)
				}
				runStore(b, s)
				seen := ""
				s.Subscribe(func(snap *Snapshot, _ []Change) {
					v := snap.DataSourceStates[q]
					mu.Lock()
					defer mu.Unlock()
					if v == want && v != seen {
						seen = v
						lat = append(lat, time.Since(start))
						wg.Done()
					}
				})
				wctx, cancel := context.WithCancel(ctx)
				b.Cleanup(cancel)
				_, events, err := r.Watch(wctx, "/nodes/bench_baseline")
				if err != nil {
					b.Fatal(err)
				}
				go func() {
					for ev := range events {
						if ev.KV.Key != raw || ev.Type != registry.EventPut {
							continue
						}
						mu.Lock()
						if string(ev.KV.Value) == want {
							base = append(base, time.Since(start))
							wg.Done()
						}
						mu.Unlock()
					}
				}()
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				state := []string{StateDisabled, StateEnabled}[i%2]
				mu.Lock()
				want, start = state, time.Now()
				wg.Add(len(repos))
				mu.Unlock()
				if err := SetDataSourceState(ctx, repos[i%len(repos)], q, state); err != nil {
					b.Fatal(err)
				}
				wg.Wait()
				mu.Lock()
				want, start = "raw-"+state, time.Now()
				wg.Add(len(repos))
				mu.Unlock()
				if _, err := repos[i%len(repos)].Put(ctx, raw, []byte("raw-"+state)); err != nil {
					b.Fatal(err)
				}
				wg.Wait()
			}
			b.StopTimer()
			slices.Sort(lat)
			slices.Sort(base)
			p50, bp50 := lat[len(lat)/2], base[len(base)/2]
			b.ReportMetric(float64(p50.Microseconds())/1000, "p50_ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
			b.ReportMetric(float64(bp50.Microseconds())/1000, "watch_p50_ms")
			b.ReportMetric(float64(base[len(base)*99/100].Microseconds())/1000, "watch_p99_ms")
			b.ReportMetric(float64(p50)/float64(bp50), "p50_ratio")
		})
	}
}
