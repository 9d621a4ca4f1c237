package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardkeeper/shardkeeper/internal/zapslog"
)

// SlowWindow is the window over which the embedded registry's slow
// requests are reported: at most one log line per window, only when there
// were some.
const SlowWindow = time.Minute

// reportSlow logs, at the end of every window with slow requests in
// slow, one warning with their number and rate, until ctx ends. The
// first window includes what slow counted before.
func reportSlow(ctx context.Context, slow *zapslog.Slow, log *slog.Logger, window time.Duration) {
	t := time.NewTicker(window)
	defer t.Stop()
	var last int64 // those of the start count in the first window
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := slow.Count()
		if d := n - last; d > 0 {
			log.Warn("registry: the embedded etcd was slow to apply requests; keys and changes wait for it: give it a faster disk or more CPU, or move to an external etcd cluster (docs/operations.md)",
				"slow_requests", d, "window", window, "per_second", float64(d)/window.Seconds())
		}
		last = n
	}
}

// slowCollector exposes slow as shardkeeper_registry_slow_requests_total.
func slowCollector(slow *zapslog.Slow) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "shardkeeper_registry_slow_requests_total",
		Help: "Requests (and disk writes) the embedded etcd reported as slow: over 100 ms to apply. Always 0 on an external registry.",
	}, func() float64 { return float64(slow.Count()) })
}
