// Package httpapi is a node's HTTP interface: the JSON API under /api/v1
// (keys, compute nodes, props, databases, cluster state), the status page
// at /, Prometheus metrics at /metrics and the health probes /livez and
// /readyz. The API is described by the OpenAPI file it serves at
// /api/v1/openapi.yaml.
//
// Semantics follow ShardingSphere's DistSQL where one exists: SHOW COMPUTE
// NODES, ENABLE/DISABLE COMPUTE NODE, SHOW/SET DIST VARIABLE, LOCK/UNLOCK
// CLUSTER, with the same checks, messages and vendor codes. Errors are JSON
// {"error": message, "code": vendor code or 0} with an HTTP status.
//
// Every mutating call needs the bearer token (compared in constant time);
// with no token configured, mutations are refused. Reads are open unless
// Config.OpenReads is false.
package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/version"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// Config is what a Server needs.
type Config struct {
	// Node issues the keys and shows the membership.
	Node *cluster.Node
	// Store is the node's metadata view.
	Store *metadata.Store
	// Repo is the registry the writers use (ENABLE/DISABLE, props, lock).
	Repo registry.Repository
	// Layout is the ShardingSphere release layout the node writes
	// (config.Repository.Layout): it picks the key of the cluster lock
	// LOCK and UNLOCK hold (paths.Layout.ClusterLock) and the database
	// listener coordinator's node of CREATE and DROP DATABASE.
	Layout paths.Layout
	// LayoutNow, when set, is the layout the node writes now, which a
	// migration of the tree may move (it then overrides Layout).
	LayoutNow *paths.LayoutVar
	// LayoutReason says why the node writes Layout (metadata.LayoutChoice's
	// Reason); TreeLayouts are the layouts the registry's tree was written
	// in at start. The status document shows both.
	LayoutReason string
	TreeLayouts  []paths.Layout
	// ModeType is "Cluster" or "Standalone" (the mode_type column).
	ModeType string
	// Token is the bearer token mutations need. Empty refuses every
	// mutation with 401.
	Token string
	// OpenReads lets GET requests through without a token.
	OpenReads bool
	// AllowedHosts are the host names the server answers to in the Host
	// header besides localhost, names under .localhost and IP addresses,
	// which it always answers: "api.example.com", "*.example.com" for the
	// names under example.com, "*" for any name. Other names get 421
	// Misdirected Request, so that a web page cannot read or change the
	// API through DNS rebinding.
	AllowedHosts []string
	// TLS, when set, makes Serve speak HTTPS.
	TLS *tls.Config
	// MaxConnections caps the connections Serve holds at once; 0 means
	// DefaultMaxConnections. When every slot is taken, a new connection
	// closes the one that has waited for its client longest (idle, or
	// sending its headers or body), or is closed itself when every slot
	// serves a request.
	MaxConnections int
	// BodyTimeout bounds reading a request's body, from the end of its
	// headers; 0 means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// RegistryMetrics, when set, is served in /metrics besides the node's
	// and the server's own (the daemon passes the metered.Metrics of the
	// repository the node uses).
	RegistryMetrics prometheus.Collector
	// Collectors are served in /metrics too (the daemon passes the
	// consoles' and the key services' metrics). Their metric names must
	// not clash with the server's own.
	Collectors []prometheus.Collector
	// Logger receives the server's logs; nil means slog.Default().
	Logger *slog.Logger
	// Epoch is the snowflake epoch the node's keys use; the zero Time
	// means snowflake.DefaultEpochMillis.
	Epoch time.Time
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Build is the running binary's build, shown in /api/v1/status, on
	// the status page and as shardkeeper_build_info; the zero Info means
	// version.Read().
	Build version.Info
	// Ports are the node's bound addresses by service ("http", "mysql",
	// "postgresql", "resp", "udp"), shown in /api/v1/status and on the
	// status page.
	Ports map[string]string
	// Started is when the node started, for the uptime in /api/v1/status;
	// the zero Time means when New was called.
	Started time.Time
}

// Server serves one node's HTTP interface. Its methods are safe for
// concurrent use.
type Server struct {
	cfg         Config
	log         *slog.Logger
	metrics     *httpMetrics
	metricsPage http.Handler
	auth        auth
	hosts       hostPolicy
	errLog      *serverLog
	mux         *http.ServeMux
	epochMs     int64

	disabled    atomic.Bool // this node's status is CIRCUIT_BREAK
	unavailable atomic.Bool // cluster state UNAVAILABLE
	draining    atomic.Bool // Shutdown started

	history *holders
	workers workerCache
	// statsReads bounds the statistics reads at once, each up to
	// statistics.MaxBytes.
	statsReads chan struct{}
	dbVers     sync.Map // database name -> uint64 snapshot seq of its last change

	changedMu sync.Mutex
	changed   chan struct{} // closed and replaced when the page's data changes

	srvMu     sync.Mutex
	httpSrv   *http.Server
	limit     *connLimit      // Serve's listener; nil before Serve
	ctx       context.Context // ends at Shutdown or Close
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// New returns a server for cfg and starts following the node's membership
// and metadata (no I/O beyond what the node and store already do). Close
// (or Shutdown) stops it. A malformed Config.AllowedHosts entry is an
// error.
func New(cfg Config) (*Server, error) {
	if cfg.Node == nil || cfg.Store == nil || cfg.Repo == nil {
		return nil, errors.New("httpapi: Config needs Node, Store and Repo")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ModeType == "" {
		cfg.ModeType = "Cluster"
	}
	if cfg.Build == (version.Info{}) {
		cfg.Build = version.Read()
	}
	if cfg.Started.IsZero() {
		cfg.Started = cfg.Now()
	}
	if cfg.MaxConnections < 0 {
		return nil, fmt.Errorf("httpapi: MaxConnections %d: want 0 (the default, %d) or more", cfg.MaxConnections, DefaultMaxConnections)
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	hosts, err := newHostPolicy(cfg.AllowedHosts)
	if err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	metrics := newHTTPMetrics()
	s := &Server{
		cfg: cfg, log: cfg.Logger, metrics: metrics,
		auth:       newAuth(cfg.Token, cfg.OpenReads),
		hosts:      hosts,
		errLog:     &serverLog{log: cfg.Logger, metrics: metrics, now: cfg.Now},
		epochMs:    snowflake.DefaultEpochMillis,
		history:    newHolders(),
		statsReads: make(chan struct{}, maxStatsReads),
		changed:    make(chan struct{}),
		done:       make(chan struct{}),
	}
	if !cfg.Epoch.IsZero() {
		s.epochMs = cfg.Epoch.UnixMilli()
	}
	s.metricsPage = s.metricsHandler()
	s.routes()
	ctx, cancel := context.WithCancel(context.Background())
	s.ctx, s.cancel = ctx, cancel
	s.follow(ctx)
	return s, nil
}

// Handler returns the server's routes behind the Host check (see
// Config.AllowedHosts) and the body bound (boundBody), a panic in any of
// them that request's internal error (recoverPanics).
func (s *Server) Handler() http.Handler { return s.recoverPanics(s.boundBody(s.checkHost(s.mux))) }

// recoverPanics answers a panic in next as that request's internal error:
// 500 with code 30000 and the panic's value, logged with its stack
// (sqlerr.Recover). The connection and the node go on.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.serveRecovered(next, w, r); err != nil {
			s.writeError(w, err)
		}
	})
}

// serveRecovered runs next, a panic its error.
func (s *Server) serveRecovered(next http.Handler, w http.ResponseWriter, r *http.Request) (err error) {
	defer sqlerr.Recover(s.log, "HTTP handler of "+r.Method+" "+r.URL.Path, &err)
	next.ServeHTTP(w, r)
	return nil
}

// Serve accepts connections on ln until Shutdown (HTTPS when Config.TLS is
// set). It returns nil after Shutdown. It holds at most
// Config.MaxConnections connections at once (see connLimit); a request's
// headers must arrive within HeaderTimeout, its body within
// Config.BodyTimeout, and an idle connection is closed after two minutes.
func (s *Server) Serve(ln net.Listener) error {
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	limit := newConnLimit(ln, s.cfg.MaxConnections, s.log)
	s.srvMu.Lock()
	s.limit = limit
	s.httpSrv = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: HeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(s.errLog, "", 0),
		ConnState:         limit.connState,
		ConnContext:       connContext,
	}
	srv := s.httpSrv
	s.srvMu.Unlock()
	err := srv.Serve(limit)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// connLimit is Serve's listener, nil before Serve.
func (s *Server) connLimit() *connLimit {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	return s.limit
}

// Drain marks the node not ready: from its return /readyz answers 503 and
// key requests are refused with 503 ("the node is shutting down"), while
// every other route keeps answering until Shutdown. Idempotent.
func (s *Server) Drain() {
	if !s.draining.Swap(true) {
		s.notify()
	}
}

// Shutdown marks the node not ready, stops accepting connections, waits
// for requests in flight (bounded by ctx; event streams are cut), then
// Closes.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.srvMu.Lock()
	srv := s.httpSrv
	s.srvMu.Unlock()
	var err error
	if srv != nil {
		s.cancel() // ends event streams
		err = srv.Shutdown(ctx)
		if err != nil {
			_ = srv.Close()
		}
	}
	s.Close()
	return err
}

// Close stops following the membership and metadata. It does not stop
// Serve (see Shutdown). Idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.draining.Store(true)
		s.cancel()
		<-s.done
		s.errLog.flush()
	})
}

// session returns the node's registry session (cluster.Node.Session),
// which the server's conditional writes and the cluster lock use.
func (s *Server) session(context.Context) (registry.Session, error) {
	if s.draining.Load() {
		return nil, errors.New("the node is shutting down")
	}
	sess := s.cfg.Node.Session()
	if sess == nil {
		return nil, errors.New("the node holds no registry session now (it is re-acquiring its worker id; see its logs)")
	}
	return sess, nil
}

// follow keeps the flags, the worker-id history and the database versions
// in step with the membership and the metadata until ctx ends.
func (s *Server) follow(ctx context.Context) {
	cancelSub := s.cfg.Store.Subscribe(func(snap *metadata.Snapshot, changes []metadata.Change) {
		s.unavailable.Store(snap.ClusterState == "UNAVAILABLE")
		for _, c := range changes {
			if c.Database != "" && c.Kind != metadata.KindDataSourceState { // a state is not the database's metadata
				s.dbVers.Store(c.Database, snap.Seq)
			}
		}
		s.notify()
	})
	snap := s.cfg.Store.Current()
	s.unavailable.Store(snap.ClusterState == "UNAVAILABLE")
	for name := range snap.Databases {
		s.dbVers.Store(name, snap.Seq)
	}
	go func() {
		defer close(s.done)
		defer cancelSub()
		self := s.cfg.Node.InstanceID()
		for {
			list, ch := s.cfg.Node.InstancesChanged()
			disabled := false
			for _, inst := range list {
				if inst.ID == self && inst.Status == "CIRCUIT_BREAK" {
					disabled = true
				}
			}
			s.disabled.Store(disabled)
			s.history.observe(list, s.cfg.Now().UnixMilli())
			s.notify()
			select {
			case <-ctx.Done():
				return
			case <-ch:
			}
		}
	}()
}

// notify wakes the event streams.
func (s *Server) notify() {
	s.changedMu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.changedMu.Unlock()
}

func (s *Server) changes() <-chan struct{} {
	s.changedMu.Lock()
	defer s.changedMu.Unlock()
	return s.changed
}

// admits reports whether the node takes key requests, and why not: not
// while it shuts down, is disabled or the cluster is UNAVAILABLE. A node
// without a worker id takes them and refuses each (ErrNotIssuing), so
// that shardkeeper_key_requests_refused_total counts them.
func (s *Server) admits() (bool, string) {
	switch {
	case s.draining.Load():
		return false, "the node is shutting down"
	case s.disabled.Load():
		return false, "this compute node is disabled (CIRCUIT_BREAK): enable it with PUT /api/v1/nodes/" + s.cfg.Node.InstanceID() + "/state"
	case s.unavailable.Load():
		return false, "the cluster state is UNAVAILABLE (locked with READ_WRITE): unlock it with PUT /api/v1/cluster/unlock"
	}
	return true, ""
}

// ready reports whether a key request succeeds now, and why not (what
// /readyz and the shardkeeper_ready gauge report): the node takes key
// requests and its generator can stamp a key without waiting for its clock
// or for a reservation.
func (s *Server) ready() (bool, string) {
	if ok, why := s.admits(); !ok {
		return false, why
	}
	if s.cfg.Node.WorkerID() < 0 {
		return false, "the node holds no worker id with a valid time reservation (see its logs)"
	}
	if !s.cfg.Node.Ready() {
		return false, "the node cannot issue a key now: its clock is not yet past its worker id's floor, or its time reservation has run out (see its logs)"
	}
	return true, ""
}

// layout is the registry layout the node writes now (Config.LayoutNow,
// else Config.Layout).
func (s *Server) layout() paths.Layout {
	if s.cfg.LayoutNow != nil {
		return s.cfg.LayoutNow.Load()
	}
	return s.cfg.Layout
}
