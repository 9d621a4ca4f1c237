// Package daemon wires one shardkeeper node together: the registry, the
// cluster node (worker id, fence, membership) and the metadata store
// (bootstrap and live dispatch). cmd/shardkeeper's serve runs it.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/registry"
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
}

// Daemon is a running node. Close it to leave the cluster.
type Daemon struct {
	Repo     registry.Repository
	Node     *cluster.Node
	Metadata *metadata.Store

	log     *slog.Logger
	cancel  context.CancelFunc
	runDone chan struct{}
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
	repo, err := connect.Open(ctx, c.Repository)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = repo.Close()
		}
	}()
	nc := c.Node
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
	d = &Daemon{Repo: repo, Node: node, Metadata: store, log: log, cancel: cancel, runDone: make(chan struct{})}
	go func() {
		defer close(d.runDone)
		if err := store.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("metadata watch stopped", "err", err)
		}
	}()
	return d, nil
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

// Close leaves the cluster: the node stops issuing, publishes its final
// fence and goes offline; the metadata watch stops; the registry client
// closes. ctx bounds the registry writes.
func (d *Daemon) Close(ctx context.Context) error {
	nodeErr := d.Node.Close(ctx)
	d.cancel()
	select {
	case <-d.runDone:
	case <-time.After(5 * time.Second):
		d.log.Warn("metadata watch did not stop within 5s")
	}
	return errors.Join(nodeErr, d.Repo.Close())
}
