// Package daemon wires one shardkeeper node together: the registry, the
// cluster node (worker id, fence, membership) and the metadata store
// (bootstrap and live dispatch). cmd/shardkeeper's serve runs it.
package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/httpapi"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// Config is what Start needs.
type Config struct {
	// Repository says which registry to use (config.Mode's repository).
	Repository config.Repository
	// Conf is the loaded conf dir (databases, props, global rules); nil
	// means none: the node then loads whatever the registry has.
	Conf *config.Config
	// Node configures the cluster node; its SessionTTL defaults to the
	// repository's timeToLiveSeconds.
	Node cluster.Config
	// Logger receives the daemon's logs; nil means slog.Default().
	Logger *slog.Logger
	// ModeType is "Cluster" or "Standalone", shown as mode_type; empty
	// means Cluster.
	ModeType string
	// HTTP, when set, serves the HTTP API, status page and metrics.
	HTTP *HTTPConfig
}

// HTTPConfig configures the daemon's HTTP server (see internal/httpapi).
type HTTPConfig struct {
	// Addr is the listen address, e.g. 127.0.0.1:8080.
	Addr string
	// FallbackAddr, when set, is tried (with a warning) when Addr is in
	// use; serve sets it for its default address only.
	FallbackAddr string
	// Token is the bearer token mutations need; empty refuses them.
	Token string
	// OpenReads lets GETs through without the token.
	OpenReads bool
	// AllowedHosts are the host names the API answers to besides
	// localhost and IP addresses (see httpapi.Config.AllowedHosts); the
	// host of Addr, when it is a name, is added.
	AllowedHosts []string
	// TLS, when set, serves HTTPS.
	TLS *tls.Config
}

// Daemon is a running node. Close it to leave the cluster.
type Daemon struct {
	Repo     registry.Repository
	Node     *cluster.Node
	Metadata *metadata.Store
	// Metrics times every registry call the node makes.
	Metrics *httpapi.Metrics
	// HTTP is the HTTP server (nil without Config.HTTP); HTTPAddr its
	// bound address (host:port).
	HTTP     *httpapi.Server
	HTTPAddr string

	log      *slog.Logger
	httpDone chan struct{}
	cancel   context.CancelFunc
	runDone  chan struct{}
}

// Start connects to the registry, opens the cluster node (it holds a
// worker id and can issue keys once Start returns), bootstraps the
// metadata (from the registry when it has databases, otherwise from
// c.Conf, introspecting the real data sources) and follows the registry.
// ctx bounds the start.
func Start(ctx context.Context, c Config) (d *Daemon, err error) {
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	// Bind first: a busy port fails the start before any registry write.
	var ln net.Listener
	if c.HTTP != nil {
		if err := httpapi.CheckAllowedHosts(c.HTTP.AllowedHosts); err != nil {
			return nil, err
		}
		if ln, err = listen(c.HTTP, log); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				_ = ln.Close()
			}
		}()
	}
	rawRepo, err := connect.Open(ctx, c.Repository)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = rawRepo.Close()
		}
	}()
	// The node and the store use the instrumented repository; d.Repo stays
	// the backend itself (connect.Describe looks at its type).
	metrics := httpapi.NewMetrics()
	repo := metrics.Instrument(rawRepo)
	nc := c.Node
	if nc.Snowflake == (snowflake.Config{}) {
		if nc.Snowflake, err = snowflakeConfig(c.Conf); err != nil {
			return nil, err
		}
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
	log = log.With("instance", node.InstanceID())
	store, err := bootstrap(ctx, repo, c, log)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	d = &Daemon{Repo: rawRepo, Node: node, Metadata: store, Metrics: metrics, log: log, cancel: cancel, runDone: make(chan struct{})}
	go func() {
		defer close(d.runDone)
		if err := store.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("metadata watch stopped", "err", err)
		}
	}()
	if ln != nil {
		srv, err := httpapi.New(httpapi.Config{
			Node: node, NodeConfig: nc, Store: store, Repo: repo, SessionTTL: c.Repository.TimeToLive,
			ModeType: c.ModeType, Token: c.HTTP.Token, OpenReads: c.HTTP.OpenReads, TLS: c.HTTP.TLS,
			AllowedHosts: allowedHosts(c.HTTP),
			Metrics:      metrics, Logger: log, Epoch: nc.Snowflake.Epoch,
		})
		if err != nil {
			cancel()
			<-d.runDone
			return nil, err
		}
		d.HTTP, d.HTTPAddr, d.httpDone = srv, ln.Addr().String(), make(chan struct{})
		go func() {
			defer close(d.httpDone)
			if err := srv.Serve(ln); err != nil {
				log.Error("http server stopped", "err", err)
			}
		}()
		log.Info("http api listening", "addr", d.HTTPAddr, "tls", c.HTTP.TLS != nil, "open_reads", c.HTTP.OpenReads, "token", c.HTTP.Token != "")
	}
	return d, nil
}

// allowedHosts is c.AllowedHosts plus the host of c.Addr when it is a
// name (such as node1.example.com:8080).
func allowedHosts(c *HTTPConfig) []string {
	hosts := slices.Clone(c.AllowedHosts)
	if host, _, err := net.SplitHostPort(c.Addr); err == nil && host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			hosts = append(hosts, host)
		}
	}
	return hosts
}

// listen binds the HTTP address, or the fallback when the address is in
// use and a fallback is configured.
func listen(c *HTTPConfig, log *slog.Logger) (net.Listener, error) {
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil && c.FallbackAddr != "" && errors.Is(err, syscall.EADDRINUSE) {
		log.Warn("http address in use; using another port", "addr", c.Addr, "fallback", c.FallbackAddr)
		ln, err = net.Listen("tcp", c.FallbackAddr)
	}
	if err != nil {
		return nil, fmt.Errorf("http: listen on %s: %w", c.Addr, err)
	}
	return ln, nil
}

// bootstrap runs the metadata bootstrap under its registry lock, held
// through a short-lived session of its own.
func bootstrap(ctx context.Context, repo registry.Repository, c Config, log *slog.Logger) (*metadata.Store, error) {
	sess, err := repo.NewSession(ctx, registry.SessionOptions{TTL: c.Repository.TimeToLive})
	if err != nil {
		return nil, fmt.Errorf("metadata bootstrap: open session: %w", err)
	}
	defer sess.Close(context.WithoutCancel(ctx))
	return metadata.Bootstrap(ctx, repo, sess, c.Conf, metadata.Options{Introspect: datasource.Introspect, Logger: log})
}

// Close leaves the cluster: the HTTP server stops (not ready at once,
// requests in flight finish); the node stops issuing, publishes its final
// fence and goes offline; the metadata watch stops; the registry client
// closes. ctx bounds the registry writes.
func (d *Daemon) Close(ctx context.Context) error {
	if d.HTTP != nil {
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := d.HTTP.Shutdown(hctx); err != nil {
			d.log.Warn("http server did not drain", "err", err)
		}
		cancel()
		<-d.httpDone
	}
	nodeErr := d.Node.Close(ctx)
	d.cancel()
	select {
	case <-d.runDone:
	case <-time.After(5 * time.Second):
		d.log.Warn("metadata watch did not stop within 5s")
	}
	return errors.Join(nodeErr, d.Repo.Close())
}
