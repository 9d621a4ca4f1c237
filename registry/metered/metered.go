// Package metered measures the registry traffic of a node: it wraps a
// registry.Repository so that every call (and every call of the sessions
// and locks it returns) is timed and every watch event counted, and
// exposes the counts as Prometheus metrics:
//
//	shardkeeper_registry_request_duration_seconds{op}  histogram
//	shardkeeper_registry_errors_total{op}              counter
//	shardkeeper_registry_watch_events_total{prefix}    counter
//
// op is one of fault.Ops() with "-" written "_". A call answered "not
// found", "exists", "version mismatch" or "locked" worked and is no error;
// nor is a call its context ended.
package metered

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
)

// Buckets are the latency histogram's upper bounds in seconds.
var Buckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Metrics counts the calls made through the repositories it wraps. It is
// a prometheus.Collector; a series appears with the first call of its
// operation (or the first watch of its prefix, at 0). Safe for concurrent
// use.
type Metrics struct {
	latency *prometheus.HistogramVec
	errs    *prometheus.CounterVec
	events  *prometheus.CounterVec
	ops     []string // label values by fault.OpIndex
}

// New returns metrics with no calls counted.
func New() *Metrics {
	ops := fault.Ops()
	for i, op := range ops {
		ops[i] = strings.ReplaceAll(op, "-", "_")
	}
	return &Metrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "shardkeeper_registry_request_duration_seconds",
			Help:    "Registry calls made by this node, by operation.",
			Buckets: Buckets,
		}, []string{"op"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardkeeper_registry_errors_total",
			Help: "Registry calls that failed, by operation (not found, exists, version mismatch and locked are answers, not failures).",
		}, []string{"op"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardkeeper_registry_watch_events_total",
			Help: "Watch events received, by watched prefix.",
		}, []string{"prefix"}),
		ops: ops,
	}
}

// Instrument returns r wrapped so that its calls are counted in m. Closing
// the result closes r.
func (m *Metrics) Instrument(r registry.Repository) registry.Repository {
	return fault.Observe(r, hook{m})
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.latency.Describe(ch)
	m.errs.Describe(ch)
	m.events.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.latency.Collect(ch)
	m.errs.Collect(ch)
	m.events.Collect(ch)
}

// hook is the fault.Hook and fault.EventObserver that feeds Metrics.
type hook struct{ m *Metrics }

func (h hook) Before(_ context.Context, op, key string) (func(error) error, error) {
	if op == "watch" {
		h.m.events.WithLabelValues(key) // the prefix shows from its first watch, at 0
	}
	label := h.m.ops[fault.OpIndex(op)]
	start := time.Now()
	return func(err error) error {
		h.m.latency.WithLabelValues(label).Observe(time.Since(start).Seconds())
		c := h.m.errs.WithLabelValues(label)
		if err != nil && !isCtxErr(err) && !isAnswer(err) {
			c.Inc()
		}
		return err
	}, nil
}

func (h hook) Event(prefix string, ev registry.Event) {
	if ev.Err == nil {
		h.m.events.WithLabelValues(prefix).Inc()
	}
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// isAnswer reports whether err is the registry's answer about the state of
// a key (absent, present, changed, locked): the call worked.
func isAnswer(err error) bool {
	return errors.Is(err, registry.ErrNotFound) || errors.Is(err, registry.ErrExists) ||
		errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrLocked)
}
