package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
)

// Metrics collects what /metrics exposes beyond the node's own counters:
// registry call latency and errors per operation, watch events per
// prefix, HTTP requests per route and errors per status. Create it before
// the node (Instrument wraps the repository the node uses). Safe for
// concurrent use.
type Metrics struct {
	ops     []opStats // by fault.OpIndex
	watchMu sync.Mutex
	watch   map[string]*atomic.Int64 // by watched prefix
	routeMu sync.Mutex
	routes  map[string]*atomic.Int64 // requests by route pattern
	errMu   sync.Mutex
	errs    map[int]*atomic.Int64 // error answers by HTTP status
	started time.Time

	tlsHandshakeErrors atomic.Int64
}

// NewMetrics returns empty metrics.
func NewMetrics() *Metrics {
	return &Metrics{ops: make([]opStats, len(fault.Ops())), watch: map[string]*atomic.Int64{}, routes: map[string]*atomic.Int64{}, errs: map[int]*atomic.Int64{}, started: time.Now()}
}

// Registry operations, as reported in the op label: fault.Ops() with
// underscores (Prometheus label values by convention).
var opNames = func() []string {
	names := fault.Ops()
	for i, op := range names {
		names[i] = strings.ReplaceAll(op, "-", "_")
	}
	return names
}()

// latencyBuckets are the histogram's upper bounds in seconds.
var latencyBuckets = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

type opStats struct {
	buckets [len(latencyBuckets)]atomic.Int64
	count   atomic.Int64
	sumNs   atomic.Int64
	errors  atomic.Int64
}

func (m *Metrics) observe(op int, start time.Time, err error) {
	d := time.Since(start)
	s := &m.ops[op]
	sec := d.Seconds()
	for i, b := range latencyBuckets {
		if sec <= b {
			s.buckets[i].Add(1)
			break
		}
	}
	s.count.Add(1)
	s.sumNs.Add(int64(d))
	if err != nil && !isCtxErr(err) && !isAnswer(err) {
		s.errors.Add(1)
	}
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// isAnswer reports whether err is the registry's answer about the state of
// a key (absent, present, changed, locked): the call worked, so it is not
// counted in shardkeeper_registry_errors_total.
func isAnswer(err error) bool {
	return errors.Is(err, registry.ErrNotFound) || errors.Is(err, registry.ErrExists) ||
		errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrLocked)
}

func counterIn(mu *sync.Mutex, m map[string]*atomic.Int64, key string) *atomic.Int64 {
	mu.Lock()
	defer mu.Unlock()
	c := m[key]
	if c == nil {
		c = new(atomic.Int64)
		m[key] = c
	}
	return c
}

func (m *Metrics) httpError(status int) {
	m.errMu.Lock()
	c := m.errs[status]
	if c == nil {
		c = new(atomic.Int64)
		m.errs[status] = c
	}
	m.errMu.Unlock()
	c.Add(1)
}

// Instrument returns r wrapped so that every call, and every call of the
// sessions and locks it returns, is timed into m, and every watch event is
// counted.
func (m *Metrics) Instrument(r registry.Repository) registry.Repository {
	return fault.Observe(r, m)
}

// Before implements fault.Hook: it times the call.
func (m *Metrics) Before(_ context.Context, op, key string) (func(error) error, error) {
	if op == "watch" {
		counterIn(&m.watchMu, m.watch, key) // the prefix shows from its first watch, at 0
	}
	i, start := fault.OpIndex(op), time.Now()
	return func(err error) error {
		m.observe(i, start, err)
		return err
	}, nil
}

// Event implements fault.EventObserver: it counts watch events per prefix.
func (m *Metrics) Event(prefix string, ev registry.Event) {
	if ev.Err == nil {
		counterIn(&m.watchMu, m.watch, prefix).Add(1)
	}
}

// countRoute wraps h to count its requests under pattern.
func (m *Metrics) countRoute(pattern string, h http.HandlerFunc) http.HandlerFunc {
	c := counterIn(&m.routeMu, m.routes, pattern)
	return func(w http.ResponseWriter, r *http.Request) {
		c.Add(1)
		h(w, r)
	}
}

// handleMetrics writes the Prometheus text exposition format (0.0.4).
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	m := s.metrics
	var b bytes.Buffer
	st := s.cfg.Node.Stats()
	snap := s.cfg.Store.Current()
	ready, _ := s.ready()
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", name, help, name, name, fmtFloat(v))
	}
	counter := func(name, help string, v int64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	counter("shardkeeper_keys_issued_total", "Keys issued by this node.", st.Keys)
	counter("shardkeeper_key_requests_refused_total", "Key requests refused while the node held no worker id with a valid reservation.", st.Refused)
	counter("shardkeeper_fence_renewals_total", "Time reservations (fence writes) committed.", st.Renewals)
	counter("shardkeeper_fence_renewal_failures_total", "Fence renewals whose outcome was unknown (the node kept its last committed limit).", st.RenewalFailures)
	counter("shardkeeper_fence_stalls_total", "Key requests that ran out of reserved time.", st.Stalls)
	counter("shardkeeper_worker_id_acquisitions_total", "Worker ids acquired (1 plus re-acquisitions).", st.Acquisitions)
	counter("shardkeeper_worker_id_losses_total", "Worker ids lost (session or fence): issuing stopped until re-acquired.", st.Losses)
	counter("shardkeeper_registry_corrupt_values_total", "Corrupt membership values skipped.", st.CorruptValues)
	counter("shardkeeper_clock_steps_back_total", "Steps back of the wall clock of at least 10 ms seen between two fence renewals (reservations wait for the clock to catch up).", st.ClockStepsBack)
	gauge("shardkeeper_worker_id", "The worker id this node holds, -1 while none.", float64(st.WorkerID))
	gauge("shardkeeper_fence_reserved_until_seconds", "Unix time up to which this node may stamp keys (its last committed reservation).", float64(st.ReservedUntilMs)/1000)
	issuing := 0.0
	if st.Issuing {
		issuing = 1
	}
	gauge("shardkeeper_issuing", "1 while the node holds a worker id with a live session and a valid reservation.", issuing)
	fmt.Fprintf(&b, "# HELP shardkeeper_session_state The node's registry session state (1 for the current one).\n# TYPE shardkeeper_session_state gauge\n")
	for _, state := range []string{"holding", "lost"} {
		v := 0
		if (state == "holding") == st.Issuing {
			v = 1
		}
		fmt.Fprintf(&b, "shardkeeper_session_state{state=%q} %d\n", state, v)
	}
	readyV := 0.0
	if ready {
		readyV = 1
	}
	gauge("shardkeeper_ready", "1 while /readyz answers 200 (keys can be issued).", readyV)
	instances := s.cfg.Node.Instances()
	withID := 0
	for _, in := range instances {
		if in.WorkerID >= 0 {
			withID++
		}
	}
	gauge("shardkeeper_compute_nodes", "Online compute nodes this node sees.", float64(len(instances)))
	gauge("shardkeeper_worker_ids_in_use", "Worker ids held by the online compute nodes this node sees (of 1024), ShardingSphere nodes included.", float64(withID))
	gauge("shardkeeper_metadata_sequence", "Sequence number of the metadata snapshot this node serves.", float64(snap.Seq))
	gauge("shardkeeper_databases", "Logical databases.", float64(len(snap.Databases)))
	fmt.Fprintf(&b, "# HELP shardkeeper_cluster_state The cluster state (1 for the current one).\n# TYPE shardkeeper_cluster_state gauge\n")
	for _, state := range []string{"OK", "READ_ONLY", "UNAVAILABLE"} {
		v := 0
		if snap.ClusterState == state {
			v = 1
		}
		fmt.Fprintf(&b, "shardkeeper_cluster_state{state=%q} %d\n", state, v)
	}

	b.WriteString("# HELP shardkeeper_registry_request_duration_seconds Registry calls made by this node, by operation.\n# TYPE shardkeeper_registry_request_duration_seconds histogram\n")
	for op := range m.ops {
		s := &m.ops[op]
		count := s.count.Load()
		if count == 0 {
			continue
		}
		var cum int64
		for i, ub := range latencyBuckets {
			cum += s.buckets[i].Load()
			fmt.Fprintf(&b, "shardkeeper_registry_request_duration_seconds_bucket{op=%q,le=%q} %d\n", opNames[op], fmtFloat(ub), cum)
		}
		fmt.Fprintf(&b, "shardkeeper_registry_request_duration_seconds_bucket{op=%q,le=\"+Inf\"} %d\n", opNames[op], count)
		fmt.Fprintf(&b, "shardkeeper_registry_request_duration_seconds_sum{op=%q} %s\n", opNames[op], fmtFloat(time.Duration(s.sumNs.Load()).Seconds()))
		fmt.Fprintf(&b, "shardkeeper_registry_request_duration_seconds_count{op=%q} %d\n", opNames[op], count)
	}
	b.WriteString("# HELP shardkeeper_registry_errors_total Registry calls that failed, by operation (not found, exists, version mismatch and locked are answers, not failures).\n# TYPE shardkeeper_registry_errors_total counter\n")
	for op := range m.ops {
		if n := m.ops[op].errors.Load(); n > 0 || m.ops[op].count.Load() > 0 {
			fmt.Fprintf(&b, "shardkeeper_registry_errors_total{op=%q} %d\n", opNames[op], n)
		}
	}
	b.WriteString("# HELP shardkeeper_registry_watch_events_total Watch events received, by watched prefix.\n# TYPE shardkeeper_registry_watch_events_total counter\n")
	writeLabeled(&b, "shardkeeper_registry_watch_events_total", "prefix", &m.watchMu, m.watch)
	b.WriteString("# HELP shardkeeper_http_requests_total HTTP requests, by route.\n# TYPE shardkeeper_http_requests_total counter\n")
	writeLabeled(&b, "shardkeeper_http_requests_total", "route", &m.routeMu, m.routes)
	b.WriteString("# HELP shardkeeper_http_errors_total HTTP error answers, by status.\n# TYPE shardkeeper_http_errors_total counter\n")
	m.errMu.Lock()
	codes := make([]int, 0, len(m.errs))
	for c := range m.errs {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		fmt.Fprintf(&b, "shardkeeper_http_errors_total{status=\"%d\"} %d\n", c, m.errs[c].Load())
	}
	m.errMu.Unlock()
	counter("shardkeeper_http_tls_handshake_errors_total", "TLS handshakes that failed on the HTTPS port (logged at most once a minute).", m.tlsHandshakeErrors.Load())
	gauge("shardkeeper_uptime_seconds", "Seconds since the metrics were created.", time.Since(m.started).Seconds())
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header()["Cache-Control"] = noStore
	_, _ = w.Write(b.Bytes())
}

func writeLabeled(b *bytes.Buffer, name, label string, mu *sync.Mutex, m map[string]*atomic.Int64) {
	mu.Lock()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "%s{%s=%q} %d\n", name, label, k, m[k].Load())
	}
	mu.Unlock()
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
