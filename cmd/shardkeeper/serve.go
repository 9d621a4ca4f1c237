package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/computenode"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/daemon"
	"github.com/shardkeeper/shardkeeper/internal/httpapi"
	"github.com/shardkeeper/shardkeeper/internal/keyserver"
	"github.com/shardkeeper/shardkeeper/internal/mysqlfront"
	"github.com/shardkeeper/shardkeeper/internal/pgfront"
	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/internal/sdnotify"
)

// defaultHTTPAddr is where serve's HTTP API listens unless --http says
// otherwise; when it is busy (and --http was not given) serve takes a free
// port and says which.
const defaultHTTPAddr = "127.0.0.1:8080"

// defaultMySQLAddr is where serve's MySQL console listens unless --mysql
// says otherwise: ShardingSphere-Proxy's port. When it is busy (and
// --mysql was not given) serve takes a free port and says which.
const defaultMySQLAddr = "127.0.0.1:3307"

// serveOptions are serve's flags.
type serveOptions struct {
	reg                 registryFlags
	node                cluster.Config
	logFormat           string
	logLevel            string
	stopAfter           time.Duration
	maxBorrow           time.Duration
	respAddr            string
	respMax             int
	udpAddr             string
	mysqlAddr           string
	mysqlMax            int
	pgAddr              string
	pgMax               int
	hf                  httpFlags
	fileDir             string
	sqlite              bool
	allowLayoutMismatch bool
	applyAuthority      bool
}

func newServeCommand() *cobra.Command {
	o := &serveOptions{}
	f := &o.reg
	node, hf := &o.node, &o.hf
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a node (default: on the embedded registry in ./" + config.DefaultEmbeddedDataDir + ")",
		Long: `Run a compute node until Ctrl-C or SIGTERM, then leave gracefully.

With --conf DIR the node reads DIR/global.yaml (or server.yaml) for the mode
(etcd, ZooKeeper or Embedded, with ShardingSphere's props such as
timeToLiveSeconds) and DIR/database-*.yaml for the logical databases. With
no arguments it runs on the embedded registry, kept in ./` + config.DefaultEmbeddedDataDir + `.
The embedded etcd requires etcd authentication: its root password is
generated into DATADIR/credentials.json (mode 0600), which the registry
commands read with --data-dir DATADIR. It opens no etcd peer port unless the
peerUrl prop asks for one.

The HTTP API, status page (/), metrics (/metrics) and probes (/livez,
/readyz) listen on --http (default ` + defaultHTTPAddr + `; --http off disables them).
Changes (PUT) need the bearer token from --token-file or $` + httpapi.EnvToken + `.

Under systemd (Type=notify) serve sends READY=1 on $NOTIFY_SOCKET once every
port answers, and STOPPING=1 when it begins to leave.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&node.InstanceID, "instance-id", "", "stable instance id (default: on the embedded registry a UUID made on the first start and kept in DATADIR/instance-id, so stable per data dir; on etcd and ZooKeeper a new UUID per start); a restarted node with the same id gets its worker id back; a start while another live node holds the id is refused")
	fl.StringVar(&node.Host, "host", "127.0.0.1", "host published in the online node (attribute ip@port)")
	fl.IntVar(&node.Port, "port", 3307, "port published in the online node; without --port, the port --mysql bound (this default with --mysql off)")
	fl.DurationVar(&node.Reservation, "reservation", cluster.DefaultReservation, "how far ahead key time is reserved in the registry (renewed every third of it; at most 1m)")
	fl.DurationVar(&o.maxBorrow, "max-borrow", 0, "how far ahead of the clock a burst of keys may be stamped instead of waiting for the next millisecond (each ms is 4096 keys; whole ms; 0 never borrows; at most --reservation: never past the committed reservation)")
	fl.StringVar(&o.logFormat, "log-format", "text", "text or json")
	fl.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error: the least level logged (debug adds the embedded etcd's own lines, slow-request dumps included)")
	fl.DurationVar(&o.stopAfter, "stop-after", 0, "leave after this long (for tests and demos)")
	fl.StringVar(&o.respAddr, "resp", "", "also serve keys over the Redis protocol on host:port (INCR, NEXTID [n]; no authentication: loopback or a trusted network)")
	fl.IntVar(&o.respMax, "resp-max-clients", keyserver.DefaultMaxClients, "how many --resp connections are served at once (Redis's maxclients); one more is answered \"-ERR max number of clients reached\" and closed. Each may buffer about 3.6 MB (the default, 115 MiB at most, fits the 512 MiB sizing of docs/operations.md): raise it with the host's memory")
	fl.StringVar(&o.udpAddr, "udp", "", "also serve keys over UDP datagrams on host:port (one request and one reply per datagram, see internal/keyserver; no authentication: loopback or a trusted network)")
	fl.StringVar(&o.mysqlAddr, "mysql", defaultMySQLAddr, "DistSQL console over the MySQL protocol on host:port (mariadb, mysql, go-sql-driver; users from the authority rule, none: loopback clients only; TLS with --tls-cert); \"off\" disables")
	fl.IntVar(&o.mysqlMax, "mysql-max-connections", mysqlfront.DefaultMaxConnections, "how many --mysql sessions are served at once; one more is refused with MySQL's error 1040 (Too many connections)")
	fl.StringVar(&o.pgAddr, "postgresql", "off", "DistSQL console over the PostgreSQL protocol on host:port (psql, pgx; users from the authority rule, none: loopback clients only; TLS with --tls-cert); \"off\" disables")
	fl.IntVar(&o.pgMax, "postgresql-max-connections", pgfront.DefaultMaxConnections, "how many --postgresql sessions are served at once; one more is refused with FATAL 53300 (sorry, too many clients already)")
	fl.StringVar(&o.fileDir, "distsql-file-dir", "", "the one directory whose files the consoles' EXPORT ... TO FILE and IMPORT ... FROM FILE may name (admin users only; new files only, mode 0600, never overwritten, no symbolic links); never the data dir; empty: server-side files are off")
	fl.BoolVar(&o.applyAuthority, "apply-authority", false, "write the authority rule (users, privilege) of --conf's global.yaml to the registry, for every node, when it differs from the registry's (logged); without it such a node refuses to start, naming the users that differ")
	fl.BoolVar(&o.allowLayoutMismatch, "allow-layout-mismatch", false, "start even when a registered ShardingSphere node loads another registry layout than layoutVersion (rule changes it could not load are refused either way)")
	fl.BoolVar(&o.sqlite, "allow-sqlite-units", false, "let console statements (REGISTER/ALTER STORAGE UNIT, IMPORT) create SQLite storage units, whose jdbc:sqlite: path is a file the node creates with its own rights")
	fl.StringVar(&hf.addr, "http", defaultHTTPAddr, "HTTP API, status page and metrics address (host:port; \"off\" disables)")
	fl.StringVar(&hf.tokenFile, "token-file", "", "file holding the API bearer token (default: $"+httpapi.EnvToken+"); without one, API changes are refused")
	fl.BoolVar(&hf.openReads, "open-reads", true, "let GET requests through without the token")
	fl.IntVar(&hf.maxConns, "http-max-connections", httpapi.DefaultMaxConnections, "how many --http connections are held at once; when all are taken, a new one closes the connection that has waited for its client longest (idle, or sending headers or a body), or is closed itself when every one is serving a request")
	fl.StringSliceVar(&hf.allowedHosts, "allowed-hosts", nil, "host names the HTTP API answers to besides localhost, IP addresses and the --http host (others get 421, against DNS rebinding); *.example.com for a domain, * for any")
	fl.StringVar(&hf.tlsCert, "tls-cert", "", "serve HTTPS, and TLS on the DistSQL console, with this certificate (PEM; needs --tls-key)")
	fl.StringVar(&hf.tlsKey, "tls-key", "", "private key of --tls-cert (PEM)")
	return cmd
}

// run starts the node, tells the operator and the service manager where
// it answers, waits for Ctrl-C, SIGTERM or --stop-after, and leaves.
func (o *serveOptions) run(cmd *cobra.Command) error {
	if err := o.check(); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	level, err := parseLogLevel(o.logLevel)
	if err != nil {
		return err
	}
	log := newLogger(cmd.ErrOrStderr(), o.logFormat, level)
	switch control, err := config.UnsafeControl(); {
	case err != nil:
		return err
	case control != "":
		log.Error("UNSAFE: a chaos negative control is on; this node breaks the guarantees of rule changes on purpose; never run it in production",
			"env", config.EnvUnsafeControl, "control", control)
	}
	dc, err := o.daemonConfig(cmd, log)
	if err != nil {
		return err
	}
	d, err := daemon.Start(cmd.Context(), dc)
	if err != nil {
		return err
	}
	announce(out, d, dc)
	// systemd's Type=notify: ready once every port answers.
	notifySocket := os.Getenv(sdnotify.EnvSocket)
	if err := sdnotify.Notify(notifySocket, fmt.Sprintf("%s\nSTATUS=serving keys on worker id %d", sdnotify.Ready, d.Node.WorkerID())); err != nil {
		log.Warn("could not tell the service manager the node is ready", "err", err)
	}
	o.wait(cmd.Context())
	fmt.Fprintln(out, "shardkeeper: stopping: no more keys, final fence, offline")
	if err := sdnotify.Notify(notifySocket, sdnotify.Stopping+"\nSTATUS=leaving: no more keys, final fence, offline"); err != nil {
		log.Warn("could not tell the service manager the node is stopping", "err", err)
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), daemon.CloseTimeout)
	defer cancel()
	if err := d.Close(closeCtx); err != nil {
		return err
	}
	fmt.Fprintln(out, "shardkeeper: stopped")
	return nil
}

// check refuses flag values the node cannot run with.
func (o *serveOptions) check() error {
	if o.node.Reservation <= 0 || o.node.Reservation > cluster.MaxReservation {
		return usagef("--reservation %v: must be above 0 and at most %v (a node that finds a worker id's fence missing waits this long, plus %v of clock skew, before issuing on it)",
			o.node.Reservation, cluster.MaxReservation, cluster.MaxClockSkew)
	}
	if o.maxBorrow < 0 || o.maxBorrow > o.node.Reservation {
		return usagef("--max-borrow %v: must be 0 (never borrow) or more and at most --reservation %v (keys are never stamped past the committed reservation, so a longer borrow buys nothing)",
			o.maxBorrow, o.node.Reservation)
	}
	return nil
}

// daemonConfig resolves the flags and the conf dir into what daemon.Start
// needs; it reads the conf dir, the token, certificate and key files.
func (o *serveOptions) daemonConfig(cmd *cobra.Command, log *slog.Logger) (daemon.Config, error) {
	ctx, flags := cmd.Context(), cmd.Flags()
	httpConf, err := o.hf.config(ctx, flags.Changed("http"))
	if err != nil {
		return daemon.Config{}, err
	}
	var conf *config.Config
	mode := config.DefaultMode()
	node := o.node
	if o.reg.confDir != "" {
		if conf, err = config.Load(ctx, o.reg.confDir); err != nil {
			return daemon.Config{}, err
		}
		mode = conf.Mode
		if node.Labels == nil {
			node.Labels = conf.Labels
		}
	}
	repo, err := o.reg.apply(mode.Repository)
	if err != nil {
		return daemon.Config{}, err
	}
	if repo.Type == config.RepositoryEmbedded {
		if _, err := os.Stat(filepath.Join(repo.DataDir, "member")); err == nil {
			fmt.Fprintf(cmd.OutOrStdout(), "reusing registry data in %s\n", repo.DataDir)
		}
	}
	respConf, err := respConfig(o.respAddr, o.respMax)
	if err != nil {
		return daemon.Config{}, err
	}
	mysqlConf, err := o.hf.mysqlConfig(ctx, o.mysqlAddr, flags.Changed("mysql"), !flags.Changed("port"), o.mysqlMax)
	if err != nil {
		return daemon.Config{}, err
	}
	pgConf, err := o.hf.postgreSQLConfig(ctx, o.pgAddr, o.pgMax)
	if err != nil {
		return daemon.Config{}, err
	}
	return daemon.Config{Repository: repo, Conf: conf, ConfDir: o.reg.confDir, Node: node, Logger: log, ModeType: mode.Type, MaxBorrow: o.maxBorrow,
		HTTP: httpConf, RESP: respConf, UDP: udpConfig(o.udpAddr), MySQL: mysqlConf, PostgreSQL: pgConf,
		DistSQLFileDir: o.fileDir, AllowSQLiteUnits: o.sqlite, ApplyAuthority: o.applyAuthority,
		AllowLayoutMismatch: o.allowLayoutMismatch}, nil
}

// announce tells the operator where the started node answers.
func announce(out io.Writer, d *daemon.Daemon, c daemon.Config) {
	fmt.Fprintf(out, "shardkeeper: registry ready: %s\n", d.Registry)
	fmt.Fprintf(out, "shardkeeper: node %s holds worker id %d; %d logical database(s)\n",
		d.Node.InstanceID(), d.Node.WorkerID(), len(d.Metadata.Current().Databases))
	announceLayout(out, d)
	if d.HTTP != nil {
		scheme := "http"
		if c.HTTP.TLS != nil {
			scheme = "https"
		}
		fmt.Fprintf(out, "shardkeeper: HTTP API and status page on %s://%s/\n", scheme, d.HTTPAddr)
		if c.HTTP.Token == "" {
			fmt.Fprintf(out, "shardkeeper: no API token (--token-file or %s): changes through the API are refused\n", httpapi.EnvToken)
		}
	}
	if d.RESPAddr != "" {
		fmt.Fprintf(out, "shardkeeper: Redis-protocol key service on %s (INCR any, NEXTID [n], NEXTIDB n; no authentication)\n", d.RESPAddr)
	}
	if d.UDPAddr != "" {
		fmt.Fprintf(out, "shardkeeper: datagram key service on udp %s (one request, one reply per datagram; no authentication)\n", d.UDPAddr)
	}
	if d.MySQLAddr != "" {
		host, port, _ := net.SplitHostPort(d.MySQLAddr)
		fmt.Fprintf(out, "shardkeeper: DistSQL console over the MySQL protocol on %s (mariadb -h %s -P %s -u USER -p; TLS %v)\n", d.MySQLAddr, host, port, c.MySQL.TLS != nil)
	}
	if d.PostgreSQLAddr != "" {
		host, port, _ := net.SplitHostPort(d.PostgreSQLAddr)
		fmt.Fprintf(out, "shardkeeper: DistSQL console over the PostgreSQL protocol on %s (psql -h %s -p %s -U USER; TLS %v)\n", d.PostgreSQLAddr, host, port, c.PostgreSQL.TLS != nil)
	}
	fmt.Fprintln(out, "shardkeeper: running; Ctrl-C or SIGTERM stops")
}

// wait returns when ctx ends (Ctrl-C, SIGTERM) or after --stop-after.
func (o *serveOptions) wait(ctx context.Context) {
	if o.stopAfter > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.stopAfter)
		defer cancel()
	}
	<-ctx.Done()
}

// httpFlags are serve's HTTP options.
type httpFlags struct {
	addr, tokenFile, tlsCert, tlsKey string
	openReads                        bool
	allowedHosts                     []string
	maxConns                         int
}

// config resolves the flags; nil means no HTTP server. explicit says
// whether --http was given (only the default address falls back to a free
// port when busy). ctx bounds reading the token, certificate and key files.
func (h httpFlags) config(ctx context.Context, explicit bool) (*daemon.HTTPConfig, error) {
	if h.addr == "" || strings.EqualFold(h.addr, "off") {
		return nil, nil
	}
	if err := httpapi.CheckAllowedHosts(h.allowedHosts); err != nil {
		return nil, fmt.Errorf("--allowed-hosts: %w", err)
	}
	if h.maxConns < 1 {
		return nil, fmt.Errorf("--http-max-connections %d: want 1 or more (default %d)", h.maxConns, httpapi.DefaultMaxConnections)
	}
	c := &daemon.HTTPConfig{Addr: h.addr, OpenReads: h.openReads, AllowedHosts: h.allowedHosts, MaxConnections: h.maxConns}
	if !explicit {
		c.FallbackAddr = "127.0.0.1:0"
	}
	if h.tokenFile != "" {
		token, err := readTokenFile(ctx, "--token-file", h.tokenFile)
		if err != nil {
			return nil, err
		}
		c.Token = token
	} else {
		c.Token = strings.TrimSpace(os.Getenv(httpapi.EnvToken))
	}
	tc, err := h.tlsConfig(ctx)
	if err != nil {
		return nil, err
	}
	c.TLS = tc
	return c, nil
}

// tlsConfig is the TLS of --tls-cert and --tls-key; nil without them.
// ctx bounds reading the files.
func (h httpFlags) tlsConfig(ctx context.Context) (*tls.Config, error) {
	if (h.tlsCert == "") != (h.tlsKey == "") {
		return nil, fmt.Errorf("--tls-cert and --tls-key go together")
	}
	if h.tlsCert == "" {
		return nil, nil
	}
	certPEM, err := config.ReadFile(ctx, h.tlsCert, config.MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert: %w", err)
	}
	keyPEM, err := config.ReadFile(ctx, h.tlsKey, config.MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("--tls-key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// mysqlConfig is the console of serve --mysql addr, with the TLS of
// --tls-cert/--tls-key; nil when addr is "" or "off". explicit says
// whether --mysql was given (only the default address falls back to a
// free port when busy); publish whether the bound port is the node's
// published port (--port not given).
func (h httpFlags) mysqlConfig(ctx context.Context, addr string, explicit, publish bool, maxConns int) (*daemon.MySQLConfig, error) {
	if addr == "" || strings.EqualFold(addr, "off") {
		return nil, nil
	}
	if maxConns < 0 {
		return nil, usagef("--mysql-max-connections %d: want 0 (the default, %d) or more", maxConns, mysqlfront.DefaultMaxConnections)
	}
	tc, err := h.tlsConfig(ctx)
	if err != nil {
		return nil, err
	}
	c := &daemon.MySQLConfig{Addr: addr, TLS: tc, PublishPort: publish, MaxConnections: maxConns}
	if !explicit {
		c.FallbackAddr = "127.0.0.1:0"
	}
	return c, nil
}

// postgreSQLConfig is the console of serve --postgresql addr, with the
// TLS of --tls-cert/--tls-key and at most maxConns sessions; nil when
// addr is "" or "off".
func (h httpFlags) postgreSQLConfig(ctx context.Context, addr string, maxConns int) (*daemon.PostgreSQLConfig, error) {
	if addr == "" || strings.EqualFold(addr, "off") {
		return nil, nil
	}
	if maxConns < 0 {
		return nil, usagef("--postgresql-max-connections %d: want 0 (the default, %d) or more", maxConns, pgfront.DefaultMaxConnections)
	}
	tc, err := h.tlsConfig(ctx)
	if err != nil {
		return nil, err
	}
	return &daemon.PostgreSQLConfig{Addr: addr, TLS: tc, MaxConnections: maxConns}, nil
}

// newLogger returns the node's logger: text or JSON lines on w with their
// secrets masked (redact.Handler), at level and above (nil: info).
// daemon.Start adds the instance id.
func newLogger(w io.Writer, format string, level ...slog.Leveler) *slog.Logger {
	opts := &slog.HandlerOptions{}
	if len(level) > 0 {
		opts.Level = level[0]
	}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(redact.Handler(h))
}

// parseLogLevel reads --log-level.
func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, usagef("--log-level %q: want debug, info, warn or error", s)
}

// layoutReasons say why a node writes its layout, by
// metadata.LayoutChoice's Reason.
var layoutReasons = map[string]string{
	"layoutVersion": "layoutVersion",
	"tree":          "the layout the registry's tree has",
	"readers":       "the layout the registered ShardingSphere nodes load",
	"default":       "the newest release's, the default: the tree has no layout of its own",
}

// announceLayout tells the operator which registry layout the node
// writes, why, and which registered ShardingSphere nodes load it.
func announceLayout(out io.Writer, d *daemon.Daemon) {
	fmt.Fprintf(out, "shardkeeper: writes the registry layout of ShardingSphere %s (%s; tree at start: %s)\n",
		d.Layout.Layout, layoutReasons[d.Layout.Reason], daemon.LayoutsText(d.TreeLayouts))
	readers := computenode.Readers(d.Node.Instances())
	if len(readers) == 0 {
		fmt.Fprintln(out, "shardkeeper: no ShardingSphere node is registered")
	}
	for _, r := range readers {
		switch {
		case !r.Known:
			fmt.Fprintf(out, "shardkeeper: registered %s: not a 5.5.x release, its layout is unknown and not checked\n", r)
		case r.Layout == d.Layout.Layout:
			fmt.Fprintf(out, "shardkeeper: registered %s loads this layout\n", r)
		default:
			fmt.Fprintf(out, "shardkeeper: registered %s loads the %s layout: rule changes it could not load are refused (shardkeeper registry migrate --to %s, or set layoutVersion)\n", r, r.Layout, r.Layout)
		}
	}
}
