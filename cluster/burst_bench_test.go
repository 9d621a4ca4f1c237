package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// burstKeys is the size of one burst.
const burstKeys = 1_000_000

// burstBorrow covers a burst: 1M keys are 245 ms of 4096-key milliseconds.
const burstBorrow = 250 * time.Millisecond

// BenchmarkBurst issues bursts of 1M keys on one node, without borrowing
// (the baseline: at most 4096 keys per millisecond of the clock) and with
// a MaxBorrow that covers the burst, alternating in the same run, one key
// per call and 1000 per call. It reports the keys/s of both and the ratio;
// between bursts it waits until the clock has caught up with the last key,
// so that every burst starts with the whole borrow.
//
//	go test -run '^$' -bench Burst -benchtime 5x ./cluster
func BenchmarkBurst(b *testing.B) {
	for _, batch := range []int{1, 1000} {
		b.Run(fmt.Sprintf("per-call=%d", batch), func(b *testing.B) {
			ctx := context.Background()
			base := openBurstNode(b, "burst-base", 0)
			borrow := openBurstNode(b, "burst-borrow", burstBorrow)
			buf := make([]int64, 0, batch)
			var baseTime, borrowTime time.Duration
			b.ResetTimer()
			for range b.N {
				baseTime += burst(ctx, b, base, batch, buf)
				borrowTime += burst(ctx, b, borrow, batch, buf)
				time.Sleep(burstBorrow)
			}
			b.StopTimer()
			baseRate := float64(b.N*burstKeys) / baseTime.Seconds()
			borrowRate := float64(b.N*burstKeys) / borrowTime.Seconds()
			b.ReportMetric(borrowRate, "keys/s")
			b.ReportMetric(baseRate, "baseline-keys/s")
			b.ReportMetric(borrowRate/baseRate, "x-baseline")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func openBurstNode(b *testing.B, id string, borrow time.Duration) *cluster.Node {
	b.Helper()
	sf := snowflake.DefaultConfig()
	sf.MaxBorrow = borrow
	n, err := cluster.Open(context.Background(), memory.New(), cluster.Config{InstanceID: id, Snowflake: sf, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = n.Close(context.Background()) })
	return n
}

// burst issues burstKeys keys from n, batch per call, and returns how long
// it took.
func burst(ctx context.Context, b *testing.B, n *cluster.Node, batch int, buf []int64) time.Duration {
	start := time.Now()
	var err error
	if batch == 1 {
		for range burstKeys {
			if _, err = n.NextID(ctx); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		for i := 0; i < burstKeys; i += batch {
			if buf, err = n.AppendIDs(ctx, buf[:0], min(batch, burstKeys-i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	return time.Since(start)
}
