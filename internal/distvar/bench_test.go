package distvar

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

// BenchmarkSetDistVariable measures SET DIST VARIABLE on a cluster of 10
// shardkeeper nodes (a metadata store and an Acker each, each with its own
// registry client): the time from the call until every node confirmed the
// new /props version, 20 statements per iteration. It reports p50 and p99
// and, as a baseline from the same run, the p99 of the /props write alone
// (MergeProps, what Set does before it waits). ShardingSphere's
// SetDistVariableExecutor returns after its write plus an unconditional
// 3 s wait for its own node (reference 6.3), and confirms no other node.
func BenchmarkSetDistVariable(b *testing.B) {
	realtest.Each(b, "sk_distvar_", func(b *testing.B, open func(t testing.TB) registry.Repository) {
		repo := open(b)
		ids := make([]string, 10)
		for i := range ids {
			ids[i] = fmt.Sprintf("node-%02d", i)
			startMember(b, open(b), ids[i])
		}
		goOnline(b, repo, ids...)
		ctx := testenv.Context(b)
		var lat, base []time.Duration
		n := 0
		for b.Loop() {
			for range 20 {
				n++
				start := time.Now()
				out, err := Set(ctx, repo, "sql_show", strconv.FormatBool(n%2 == 0), Options{Timeout: 10 * time.Second})
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				if len(out.Applied) != len(ids) {
					b.Fatalf("statement %d: %+v", n, out)
				}
				start = time.Now()
				if _, err := metadata.MergeProps(ctx, repo, map[string]string{"sql-simple": strconv.FormatBool(n%2 == 0)}); err != nil {
					b.Fatal(err)
				}
				base = append(base, time.Since(start))
			}
		}
		slices.Sort(lat)
		slices.Sort(base)
		b.ReportMetric(ms(pct(lat, 50)), "p50-ms")
		b.ReportMetric(ms(pct(lat, 99)), "p99-ms")
		b.ReportMetric(ms(pct(base, 99)), "write-p99-ms")
	})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pct returns the p-th percentile of sorted.
func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
