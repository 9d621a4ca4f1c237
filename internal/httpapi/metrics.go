package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpMetrics are the server's own counters: requests per route, error
// answers per status, failed TLS handshakes.
type httpMetrics struct {
	routes        *prometheus.CounterVec
	errs          *prometheus.CounterVec
	tlsHandshakes prometheus.Counter
}

func newHTTPMetrics() *httpMetrics {
	return &httpMetrics{
		routes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardkeeper_http_requests_total", Help: "HTTP requests, by route.",
		}, []string{"route"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardkeeper_http_errors_total", Help: "HTTP error answers, by status.",
		}, []string{"status"}),
		tlsHandshakes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardkeeper_http_tls_handshake_errors_total",
			Help: "TLS handshakes that failed on the HTTPS port (logged at most once a minute).",
		}),
	}
}

func (m *httpMetrics) httpError(status int) {
	m.errs.WithLabelValues(strconv.Itoa(status)).Inc()
}

// countRoute wraps h to count its requests under pattern; the series
// shows from the start, at 0.
func (m *httpMetrics) countRoute(pattern string, h http.HandlerFunc) http.HandlerFunc {
	c := m.routes.WithLabelValues(pattern)
	return func(w http.ResponseWriter, r *http.Request) {
		c.Inc()
		h(w, r)
	}
}

// metricsHandler serves the Prometheus exposition of the node's counters
// and state, the server's own counters, cfg.RegistryMetrics and
// cfg.Collectors, the build, and the Go runtime's and the process's
// standard metrics, read at each scrape.
func (s *Server) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.metrics.routes, s.metrics.errs, s.metrics.tlsHandshakes, nodeCollector{s})
	if s.cfg.RegistryMetrics != nil {
		reg.MustRegister(s.cfg.RegistryMetrics)
	}
	started := s.cfg.Started
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "shardkeeper_uptime_seconds", Help: "Seconds since the node started.",
	}, func() float64 { return time.Since(started).Seconds() }))
	b := s.cfg.Build
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "shardkeeper_build_info",
		Help:        "Always 1; the labels say which build runs: release, module version, commit, Go version.",
		ConstLabels: prometheus.Labels{"release": b.Release, "module": b.Module, "commit": b.ShortCommit(), "goversion": b.Go},
	})
	buildInfo.Set(1)
	// The Go runtime's (go_*: memory, goroutines, GC) and the process's
	// (process_*: CPU, resident memory, open and maximum descriptors).
	reg.MustRegister(buildInfo, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range s.cfg.Collectors {
		reg.MustRegister(c)
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Cache-Control"] = noStore
		h.ServeHTTP(w, r)
	})
}

// nodeCollector reads the node's counters, membership and metadata at
// each scrape.
type nodeCollector struct{ s *Server }

type nodeMetric struct {
	desc  *prometheus.Desc
	vtype prometheus.ValueType
}

func counterDesc(name, help string) nodeMetric {
	return nodeMetric{prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue}
}

func gaugeDesc(name, help string, labels ...string) nodeMetric {
	return nodeMetric{prometheus.NewDesc(name, help, labels, nil), prometheus.GaugeValue}
}

var (
	mKeys            = counterDesc("shardkeeper_keys_issued_total", "Keys issued by this node.")
	mRefused         = counterDesc("shardkeeper_key_requests_refused_total", "Key requests refused while the node held no worker id with a valid reservation.")
	mRenewals        = counterDesc("shardkeeper_fence_renewals_total", "Time reservations (fence writes) committed.")
	mRenewalFailures = counterDesc("shardkeeper_fence_renewal_failures_total", "Fence renewals whose outcome was unknown (the node kept its last committed limit).")
	mStalls          = counterDesc("shardkeeper_fence_stalls_total", "Key requests that ran out of reserved time.")
	mAcquisitions    = counterDesc("shardkeeper_worker_id_acquisitions_total", "Worker ids acquired (1 plus re-acquisitions).")
	mLosses          = counterDesc("shardkeeper_worker_id_losses_total", "Worker ids lost (session or fence): issuing stopped until re-acquired.")
	mCorrupt         = counterDesc("shardkeeper_registry_corrupt_values_total", "Corrupt membership values skipped.")
	mClockSteps      = counterDesc("shardkeeper_clock_steps_back_total", "Steps back of the wall clock of at least 10 ms seen between two fence renewals (reservations wait for the clock to catch up).")
	mWorkerID        = gaugeDesc("shardkeeper_worker_id", "The worker id this node holds, -1 while none.")
	mReservedUntil   = gaugeDesc("shardkeeper_fence_reserved_until_seconds", "Unix time up to which this node may stamp keys (its last committed reservation).")
	mIssuing         = gaugeDesc("shardkeeper_issuing", "1 while the node holds a worker id with a live session and a valid reservation.")
	mSessionState    = gaugeDesc("shardkeeper_session_state", "The node's registry session state (1 for the current one).", "state")
	mReady           = gaugeDesc("shardkeeper_ready", "1 while /readyz answers 200 (keys can be issued).")
	mComputeNodes    = gaugeDesc("shardkeeper_compute_nodes", "Online compute nodes this node sees.")
	mWorkerIDsInUse  = gaugeDesc("shardkeeper_worker_ids_in_use", "Worker ids held by the online compute nodes this node sees (of 1024), ShardingSphere nodes included.")
	mMetadataSeq     = gaugeDesc("shardkeeper_metadata_sequence", "Sequence number of the metadata snapshot this node serves.")
	mDatabases       = gaugeDesc("shardkeeper_databases", "Logical databases.")
	mClusterState    = gaugeDesc("shardkeeper_cluster_state", "The cluster state (1 for the current one).", "state")
	nodeMetrics      = []nodeMetric{mKeys, mRefused, mRenewals, mRenewalFailures, mStalls, mAcquisitions, mLosses, mCorrupt,
		mClockSteps, mWorkerID, mReservedUntil, mIssuing, mSessionState, mReady, mComputeNodes, mWorkerIDsInUse,
		mMetadataSeq, mDatabases, mClusterState}
)

func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range nodeMetrics {
		ch <- m.desc
	}
}

func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	emit := func(m nodeMetric, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(m.desc, m.vtype, v, labels...)
	}
	st := c.s.cfg.Node.Stats()
	emit(mKeys, float64(st.Keys))
	emit(mRefused, float64(st.Refused))
	emit(mRenewals, float64(st.Renewals))
	emit(mRenewalFailures, float64(st.RenewalFailures))
	emit(mStalls, float64(st.Stalls))
	emit(mAcquisitions, float64(st.Acquisitions))
	emit(mLosses, float64(st.Losses))
	emit(mCorrupt, float64(st.CorruptValues))
	emit(mClockSteps, float64(st.ClockStepsBack))
	emit(mWorkerID, float64(st.WorkerID))
	emit(mReservedUntil, float64(st.ReservedUntilMs)/1000)
	emit(mIssuing, bit(st.Issuing))
	emit(mSessionState, bit(st.Issuing), "holding")
	emit(mSessionState, bit(!st.Issuing), "lost")
	ready, _ := c.s.ready()
	emit(mReady, bit(ready))
	instances := c.s.cfg.Node.Instances()
	withID := 0
	for _, in := range instances {
		if in.WorkerID >= 0 {
			withID++
		}
	}
	emit(mComputeNodes, float64(len(instances)))
	emit(mWorkerIDsInUse, float64(withID))
	snap := c.s.cfg.Store.Current()
	emit(mMetadataSeq, float64(snap.Seq))
	emit(mDatabases, float64(len(snap.Databases)))
	for _, state := range []string{"OK", "READ_ONLY", "UNAVAILABLE"} {
		emit(mClusterState, bit(snap.ClusterState == state), state)
	}
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
