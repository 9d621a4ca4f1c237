// Package daemon wires one shardkeeper node together: the registry, the
// cluster node (worker id, fence, membership), the metadata store
// (bootstrap and live dispatch), the answers to ShardingSphere's SHOW
// PROCESSLIST and KILL triggers, and the front ends that serve them (the
// HTTP API, the Redis-protocol and UDP key services), which it starts and
// stops. cmd/shardkeeper's serve runs it.
package daemon

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/connserver"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/httpapi"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/zapslog"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/embedded"
	"github.com/shardkeeper/shardkeeper/registry/metered"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// Config is what Start needs.
type Config struct {
	// Repository says which registry to use (config.Mode's repository).
	Repository config.Repository
	// ConfDir is the conf dir Conf was loaded from; CONVERT YAML
	// CONFIGURATION reads its files. "" refuses that statement.
	ConfDir string
	// Conf is the loaded conf dir (databases, props, global rules); nil
	// means none: the node then loads whatever the registry has. Start
	// fails with a *metadata.AuthorityError when Conf's authority rule
	// differs from the registry's, unless ApplyAuthority.
	Conf *config.Config
	// ApplyAuthority writes Conf's authority rule to the registry when it
	// differs from the registry's (metadata.Options.ApplyAuthority).
	ApplyAuthority bool
	// Node configures the cluster node; its InstanceID defaults, on the
	// embedded registry, to the one kept in the data dir (InstanceIDFile,
	// made on the first start), elsewhere to a new random one; its SessionTTL to the repository's timeToLiveSeconds, its
	// Snowflake (when zero) to Conf.Snowflake(), the first SNOWFLAKE key
	// generator of Conf's sharding rules.
	Node cluster.Config
	// MaxBorrow, when above 0, sets the key generator's MaxBorrow (see
	// snowflake.Config.MaxBorrow): how far ahead of the clock a burst of
	// keys may be stamped, never past the node's committed reservation.
	MaxBorrow time.Duration
	// Logger receives the daemon's logs, the embedded etcd's included;
	// nil means slog.Default(). Start adds the attribute instance=<id> to
	// every record, once, for every part of the node.
	Logger *slog.Logger
	// ModeType is "Cluster" or "Standalone", shown as mode_type; empty
	// means Cluster.
	ModeType string
	// HTTP, when set, serves the HTTP API, status page and metrics.
	HTTP *HTTPConfig
	// RESP, when set, serves keys over the Redis protocol.
	RESP *RESPConfig
	// UDP, when set, serves keys over UDP datagrams.
	UDP *UDPConfig
	// MySQL, when set, serves the DistSQL console over the MySQL
	// protocol.
	MySQL *MySQLConfig
	// PostgreSQL, when set, serves the DistSQL console over the
	// PostgreSQL protocol.
	PostgreSQL *PostgreSQLConfig
	// DistSQLFileDir is the one directory whose files the consoles' TO
	// FILE and FROM FILE may name (dbconfig.FileDir); "" refuses every
	// file path. It must exist and be neither the embedded registry's data
	// dir, nor inside it, nor hold it: Start fails otherwise.
	DistSQLFileDir string
	// AllowSQLiteUnits lets console statements (REGISTER, ALTER STORAGE
	// UNIT, IMPORT) create SQLite storage units, whose URLs name files
	// the node opens and creates with its own rights; false refuses them.
	AllowSQLiteUnits bool
	// AllowLayoutMismatch starts a node whose layoutVersion differs from
	// the layout a registered ShardingSphere node loads; without it Start
	// refuses (a *metadata.LayoutMismatchError). Rule changes that node
	// could not load are refused either way.
	AllowLayoutMismatch bool
}

// Daemon is a running node. Close it to leave the cluster.
type Daemon struct {
	// Repo is the registry the node and every part of the daemon use,
	// instrumented: each call is counted in /metrics (see metered).
	Repo     registry.Repository
	Node     *cluster.Node
	Metadata *metadata.Store
	// Registry says in one line which registry the node uses, for the
	// operator (connect.Describe).
	Registry string
	// Processes are the node's admin sessions, which it reports to
	// ShardingSphere's SHOW PROCESSLIST and kills on its KILL; a front end
	// registers each session there while it runs.
	Processes *process.Table
	// HTTP is the HTTP server (nil without Config.HTTP); HTTPAddr its
	// bound address (host:port).
	HTTP     *httpapi.Server
	HTTPAddr string
	// RESPAddr and UDPAddr are the bound addresses of the key services
	// (empty without Config.RESP, Config.UDP).
	RESPAddr string
	UDPAddr  string
	// Layout is the registry layout the node writes, and why
	// (config.Repository.Layout, or the one it picked without
	// layoutVersion).
	Layout metadata.LayoutChoice
	// TreeLayouts are the layouts the registry's tree was written in at
	// start (metadata.TreeLayouts).
	TreeLayouts []paths.Layout
	// LayoutNow is the layout the node writes now: Layout's, or, without
	// layoutVersion, the one the last migration of the tree recorded
	// (paths.RegistryLayout), followed while the node runs.
	LayoutNow *paths.LayoutVar
	// Console runs the DistSQL statements of the MySQL and PostgreSQL
	// consoles' sessions.
	Console *console.Engine
	// MySQLAddr is the bound address of the MySQL console (empty without
	// Config.MySQL).
	MySQLAddr string
	// PostgreSQLAddr is the bound address of the PostgreSQL console (empty
	// without Config.PostgreSQL).
	PostgreSQLAddr string

	cfg        Config
	nodeConfig cluster.Config   // Config.Node with the defaults Start filled in
	metrics    *metered.Metrics // the registry calls made through Repo
	frontends  []frontend       // in the order Close drains them
	http       *httpFrontend    // nil without Config.HTTP; the same for the others
	resp, udp  *keyFrontend
	mysql      *consoleFrontend
	postgreSQL *consoleFrontend
	mysqlPort  int                // the MySQL console's bound port
	responder  *process.Responder // answers the process triggers
	acker      *distvar.Acker     // acknowledges applied /props versions
	stmts      *connserver.Budget // the consoles' statements, both protocols together
	log        *slog.Logger
	started    time.Time // when Start began, for the uptime
	slow       *zapslog.Slow
	// consoleMetrics counts the consoles' sessions, statements, errors,
	// failed logins and refused connections, served in /metrics.
	consoleMetrics *console.Metrics
	cancel         context.CancelFunc
	runDone        chan struct{}
}

// Start connects to the registry, opens the cluster node (it holds a
// worker id and can issue keys once Start returns), bootstraps the
// metadata (from the registry when it has databases, otherwise from
// c.Conf, introspecting the real data sources), follows the registry and
// answers the SHOW PROCESSLIST and KILL triggers addressed to the node
// (those written while it started included), and publishes the /props
// version it applied (distvar.Acker, for SET DIST VARIABLE). ctx bounds
// the start.
//
// Start binds the ports of c.HTTP, c.RESP, c.UDP and c.MySQL before it
// contacts the registry: a busy port fails the start before any registry
// write. On any failure every port it bound is closed again. The front
// ends answer once Start returns; the MySQL console's sessions run their
// statements on d.Console.
func Start(ctx context.Context, c Config) (_ *Daemon, err error) {
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	if c.Repository.Type == config.RepositoryEmbedded {
		// Before the ports and the instance id: a second node on a data dir
		// in use is refused for that alone.
		if err := embedded.CheckDir(c.Repository.DataDir); err != nil {
			return nil, err
		}
	}
	nc := c.Node
	if nc.InstanceID == "" {
		if nc.InstanceID, nc.RandomInstanceID, err = defaultInstanceID(c.Repository); err != nil {
			return nil, err
		}
	}
	log = log.With("instance", nc.InstanceID)
	d := &Daemon{cfg: c, log: log, stmts: connserver.NewBudget(connserver.DefaultBudget), started: time.Now(),
		consoleMetrics: console.NewMetrics()}
	var confDir *dbconfig.FileDir
	if c.ConfDir != "" {
		if confDir, err = dbconfig.OpenConfDir(c.ConfDir); err != nil {
			return nil, err
		}
	}
	var fileDir *dbconfig.FileDir
	if c.DistSQLFileDir != "" {
		// The data dir: the embedded registry's data, or the credentials an
		// etcd client reads there.
		if fileDir, err = dbconfig.OpenFileDir(c.DistSQLFileDir, c.Repository.DataDir); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			for _, f := range d.frontends {
				f.stop(context.WithoutCancel(ctx))
			}
		}
	}()
	if err := d.bind(); err != nil {
		return nil, err
	}
	d.slow = &zapslog.Slow{}
	rawRepo, err := connect.OpenCounting(ctx, c.Repository, log, d.slow)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = rawRepo.Close()
		}
	}()
	metrics := metered.New()
	repo := metrics.Instrument(rawRepo)
	if c, d.Layout, d.TreeLayouts, err = pickLayout(ctx, repo, c, log); err != nil {
		return nil, err
	}
	d.cfg = c
	d.LayoutNow = paths.NewLayoutVar(c.Repository.Layout)
	if nc.Snowflake == (snowflake.Config{}) {
		nc.Snowflake = snowflakeConfig(c.Conf.Snowflake())
	}
	if c.MaxBorrow > 0 {
		nc.Snowflake.MaxBorrow = c.MaxBorrow
	}
	if c.MySQL != nil && c.MySQL.PublishPort {
		nc.Port = d.mysqlPort
	}
	if nc.SessionTTL == 0 {
		nc.SessionTTL = c.Repository.TimeToLive
	}
	if nc.Logger == nil {
		nc.Logger = log
	}
	node, err := cluster.Open(ctx, repo, nc)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = node.Close(context.WithoutCancel(ctx))
		}
	}()
	store, err := bootstrap(ctx, repo, node, c, log)
	if err != nil {
		return nil, err
	}
	// After a lost session the node registers online again only once its
	// metadata holds the registry's rules (or after the node's bound):
	// changes acknowledged while it was offline did not wait for it.
	node.SetCatchUp(store.CaughtUp)
	d.Processes = process.NewTable()
	responder, err := process.Open(ctx, repo, process.Config{InstanceID: node.InstanceID(), Table: d.Processes, Logger: log})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			responder.Close()
		}
	}()
	d.responder = responder
	acker, err := distvar.StartAcker(ctx, repo, distvar.AckerConfig{InstanceID: node.InstanceID(), Node: node, Store: store, Logger: log})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			acker.Close()
		}
	}()
	d.acker = acker
	d.Console = console.New(console.Deps{
		Repo: repo, Node: node, Metadata: store, Processes: d.Processes,
		Mode: config.Mode{Type: c.ModeType, Repository: c.Repository}, ModeType: c.ModeType,
		Layout: c.Repository.Layout, LayoutNow: d.LayoutNow, Logger: log, FileDir: fileDir, ConfDir: confDir, AllowSQLite: c.AllowSQLiteUnits,
	})
	runCtx, cancel := context.WithCancel(context.Background())
	d.Repo, d.Node, d.nodeConfig, d.Metadata, d.metrics = repo, node, nc, store, metrics
	d.Registry = connect.Describe(c.Repository, rawRepo)
	d.log, d.cancel, d.runDone = log, cancel, make(chan struct{})
	stopWarning := dbconfig.WarnBeyondBounds(store, log)
	go func() {
		defer close(d.runDone)
		defer stopWarning()
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() { reportSlow(runCtx, d.slow, log, SlowWindow) })
		if !c.Repository.LayoutSet {
			wg.Go(func() { followMigrations(runCtx, repo, d.LayoutNow, log) })
		}
		if err := store.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("metadata watch stopped", "err", err)
		}
	}()
	if err = d.serve(); err != nil {
		cancel()
		<-d.runDone
		return nil, err
	}
	return d, nil
}

// serve starts every bound front end, each with what it serves: HTTP the
// node, its metadata, registry and metrics; the key services the node as
// their key source; the consoles the console engine, the users and the
// process table.
func (d *Daemon) serve() error {
	if d.http != nil {
		c := d.http.c
		srv, err := d.http.serve(httpapi.Config{
			Node: d.Node, Store: d.Metadata, Repo: d.Repo,
			Layout: d.cfg.Repository.Layout, LayoutNow: d.LayoutNow, LayoutReason: d.Layout.Reason, TreeLayouts: d.TreeLayouts, ModeType: d.cfg.ModeType, Token: c.Token, OpenReads: c.OpenReads, TLS: c.TLS, MaxConnections: c.MaxConnections,
			AllowedHosts: allowedHosts(c), RegistryMetrics: d.metrics, Logger: d.log, Epoch: d.nodeConfig.Snowflake.Epoch,
			Ports: d.ports(), Started: d.started, Collectors: []prometheus.Collector{slowCollector(d.slow), d.consoleMetrics, keyPortCollector{d.resp, d.udp}},
		})
		if err != nil {
			return err
		}
		d.HTTP = srv
	}
	for _, k := range []*keyFrontend{d.resp, d.udp} {
		if k != nil {
			k.serve(d.Node, d.log)
		}
	}
	deps := consoleDeps{executor: d.consoleMetrics.Instrument(d.Console), users: d.users, processes: d.Processes, budget: d.stmts,
		metrics: d.consoleMetrics, log: d.log}
	for _, c := range []*consoleFrontend{d.mysql, d.postgreSQL} {
		if c == nil {
			continue
		}
		if err := c.serve(deps); err != nil {
			return err
		}
	}
	return nil
}

// ports are the bound addresses by service, for the status document.
func (d *Daemon) ports() map[string]string {
	ports := map[string]string{}
	for name, addr := range map[string]string{"http": d.HTTPAddr, "resp": d.RESPAddr, "udp": d.UDPAddr, "mysql": d.MySQLAddr, "postgresql": d.PostgreSQLAddr} {
		if addr != "" {
			ports[name] = addr
		}
	}
	return ports
}

// bind binds the configured front ends: HTTP, RESP, UDP, MySQL, PostgreSQL.
func (d *Daemon) bind() error {
	if c := d.cfg.HTTP; c != nil {
		h, err := bindHTTP(c, d.log)
		if err != nil {
			return err
		}
		d.frontends, d.http, d.HTTPAddr = append(d.frontends, h), h, h.ln.Addr().String()
	}
	if c := d.cfg.RESP; c != nil {
		k, err := bindRESP(c)
		if err != nil {
			return err
		}
		d.frontends, d.resp, d.RESPAddr = append(d.frontends, k), k, k.addr
	}
	if c := d.cfg.UDP; c != nil {
		k, err := bindUDP(c)
		if err != nil {
			return err
		}
		d.frontends, d.udp, d.UDPAddr = append(d.frontends, k), k, k.addr
	}
	if c := d.cfg.MySQL; c != nil {
		m, err := bindMySQL(c, d.log)
		if err != nil {
			return err
		}
		d.frontends, d.mysql, d.MySQLAddr, d.mysqlPort = append(d.frontends, m), m, m.ln.Addr().String(), m.port()
	}
	if c := d.cfg.PostgreSQL; c != nil {
		p, err := bindPostgreSQL(c, d.log)
		if err != nil {
			return err
		}
		d.frontends, d.postgreSQL, d.PostgreSQLAddr = append(d.frontends, p), p, p.ln.Addr().String()
	}
	return nil
}

// users are the users of the authority rule in the node's current
// metadata (the registry's global rules, which bootstrap seeds from the
// conf dir), read at each call so that a changed rule applies to the next
// login. No rule means no users.
func (d *Daemon) users() (*authority.Users, error) {
	rule, ok := d.Metadata.Current().GlobalRules[authority.RuleType]
	if !ok {
		return nil, nil
	}
	return authority.FromRules(rule)
}

// bootstrap runs the metadata bootstrap under its registry lock, held
// through the node's session.
func bootstrap(ctx context.Context, repo registry.Repository, node *cluster.Node, c Config, log *slog.Logger) (*metadata.Store, error) {
	sess := node.Session()
	if sess == nil {
		return nil, errors.New("metadata bootstrap: the node lost its registry session while starting")
	}
	return metadata.Bootstrap(ctx, repo, sess, c.Conf, metadata.Options{Introspect: datasource.Introspect, Logger: log, ApplyAuthority: c.ApplyAuthority})
}

// CloseTimeout is what serve gives Close on SIGTERM: the bound of its
// registry writes (final fence, offline) and of the requests in flight.
const CloseTimeout = 15 * time.Second

// watchStopWait bounds Close's wait for the metadata watch to stop.
const watchStopWait = 5 * time.Second

// DrainTimeout bounds, within Close's ctx, the front ends' draining
// (consoles ending their sessions, key services their requests) and,
// again, their stopping (requests in flight): a session stuck in I/O
// must not eat the time to leave the registry.
const DrainTimeout = 3 * time.Second

// LeaveTimeout is the deadline of leaving the registry (final fence,
// offline, session close), started after draining and independent of
// Close's ctx, so that the node goes offline however long draining took.
const LeaveTimeout = 10 * time.Second

// MaxCloseTime is the longest Close takes (21 s): draining, leaving the
// registry, stopping the front ends and the metadata watch. A
// supervisor's grace period (Kubernetes' terminationGracePeriodSeconds,
// systemd's TimeoutStopSec) must be longer, or the node is killed before
// its session is closed and its worker id stays reserved until the
// session expires.
const MaxCloseTime = DrainTimeout + LeaveTimeout + DrainTimeout + watchStopWait

// Close leaves the cluster, in this order:
//
//  1. Every front end stops taking key requests: the key services (RESP,
//     UDP) stop answering and close their ports, the MySQL and
//     PostgreSQL consoles close their ports and end their sessions; HTTP
//     keeps its port, and /readyz and key requests answer 503 "the node
//     is shutting down", so that probes see the shutdown rather than a
//     refused connection.
//  2. The node stops issuing, publishes its final fence, goes offline and
//     closes its registry session: every ephemeral node the daemon's parts
//     wrote in it (the props acknowledgement, the labels nodes LABEL
//     created) goes with it.
//  3. The node stops answering process triggers (askers no longer list it
//     once it is offline) and stops acknowledging props.
//  4. The HTTP server closes its port; requests in flight finish (at most
//     5 seconds), event streams are cut.
//  5. The metadata watch stops and the registry client closes.
//
// ctx bounds draining and stopping the front ends, each at most
// DrainTimeout; leaving the registry (step 2) has a deadline of its own,
// LeaveTimeout, whatever ctx has left, so that a stuck session or a slow
// drain never costs the final fence, the offline node or the session.
func (d *Daemon) Close(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, DrainTimeout)
	for _, f := range d.frontends {
		f.drain(dctx)
	}
	cancel()
	lctx, cancelLeave := context.WithTimeout(context.WithoutCancel(ctx), LeaveTimeout)
	nodeErr := d.Node.Close(lctx)
	_ = d.Console.Close(lctx) // the labels nodes its LABEL statements created go with the node
	cancelLeave()
	d.responder.Close()
	d.acker.Close()
	sctx, cancel := context.WithTimeout(ctx, DrainTimeout)
	defer cancel()
	for i := len(d.frontends) - 1; i >= 0; i-- {
		d.frontends[i].stop(sctx)
	}
	d.cancel()
	select {
	case <-d.runDone:
	case <-time.After(watchStopWait):
		d.log.Warn("metadata watch did not stop in time", "waited", watchStopWait)
	}
	return errors.Join(nodeErr, d.Repo.Close())
}

// snowflakeConfig is the key generator's configuration from a SNOWFLAKE
// key generator's props.
func snowflakeConfig(p config.SnowflakeProps) snowflake.Config {
	c := snowflake.DefaultConfig()
	c.WorkerID = p.WorkerID
	c.MaxVibrationOffset = p.MaxVibrationOffset
	c.MaxTolerateTimeDifference = p.MaxTolerateTimeDifference
	return c
}
