// Package embedded runs an etcd server inside the process
// (go.etcd.io/etcd/server/v3/embed) and reaches it through the etcd
// registry backend, so shardkeeper works with nothing installed and keeps
// its registry on disk. It is plain etcd: other etcd clients, etcdctl, and
// other shardkeeper nodes (as the etcd repository type) can use it on its
// client URL.
//
// What is kept on disk, under Config.Dir: the etcd member directory
// ("member/wal" holds the write-ahead log, "member/snap" the snapshots and
// the bbolt database "db"). Everything written through the registry,
// persistent keys and the leases of ephemeral keys, survives a restart on
// the same directory; ephemerals whose lease ran out while the server was
// down are removed after it starts again (etcd restarts lease timers on
// start). History older than an hour is compacted, so a watch that falls
// more than an hour behind ends with registry.ErrWatchLost.
//
// One process at a time may use a directory: Start takes an advisory lock
// on it and reports a clear error when another process holds it.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
)

// Defaults used when Config leaves a field empty; the client and peer URLs
// are etcd's own defaults, so etcdctl works without flags.
const (
	DefaultClientURL = "http://127.0.0.1:2379"
	DefaultPeerURL   = "http://127.0.0.1:2380"
	DefaultName      = "shardkeeper"
)

// Config configures the embedded server and, for Open, the repository on it.
type Config struct {
	// Dir is the data directory. It is created (mode 0700) if missing and
	// reused on the next start. Required.
	Dir string
	// ClientURL is where the server listens for clients, such as
	// "http://127.0.0.1:2379" (the default). Port 0 picks a free port; see
	// Server.Endpoints. Listen on a non-loopback address to let other nodes
	// in.
	ClientURL string
	// PeerURL is where the server listens for etcd peers (default
	// "http://127.0.0.1:2380"). Port 0 picks a free port.
	PeerURL string
	// Name is the etcd member name (default "shardkeeper").
	Name string
	// Namespace is the registry namespace Open uses (see etcd.Config).
	Namespace string
	// Logger receives the server's logs. Nil means errors only, to stderr.
	Logger *zap.Logger
}

// Server is a running embedded etcd server.
type Server struct {
	etcd      *embed.Etcd
	endpoints []string
	unlock    func()
}

// Start starts the server and returns once it serves clients, or with an
// error when ctx ends first, the client or peer port is taken, or the data
// directory is in use by another process. Close the Server to stop it.
func Start(ctx context.Context, c Config) (*Server, error) {
	cfg, err := c.etcdConfig()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded etcd: data dir: %w", err)
	}
	unlock, err := lockDir(c.Dir)
	if err != nil {
		return nil, err
	}

	type started struct {
		e   *embed.Etcd
		err error
	}
	ch := make(chan started, 1)
	go func() {
		e, err := embed.StartEtcd(cfg)
		ch <- started{e, err}
	}()
	var e *embed.Etcd
	select {
	case s := <-ch:
		if s.err != nil {
			unlock()
			return nil, startError(c, s.err)
		}
		e = s.e
	case <-ctx.Done():
		// StartEtcd cannot be interrupted: stop the server once it is up.
		go func() {
			if s := <-ch; s.e != nil {
				s.e.Close()
			}
			unlock()
		}()
		return nil, fmt.Errorf("embedded etcd in %s: not started: %w", c.Dir, ctx.Err())
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		unlock()
		return nil, fmt.Errorf("embedded etcd in %s: %w", c.Dir, err)
	case <-ctx.Done():
		e.Close()
		unlock()
		return nil, fmt.Errorf("embedded etcd in %s: not ready: %w", c.Dir, ctx.Err())
	}
	s := &Server{etcd: e, unlock: unlock}
	for _, l := range e.Clients {
		s.endpoints = append(s.endpoints, "http://"+l.Addr().String())
	}
	return s, nil
}

func (c Config) etcdConfig() (*embed.Config, error) {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("embedded etcd: no data directory (Dir)"))
	}
	parse := func(field, s, def string) url.URL {
		if s == "" {
			s = def
		}
		u, err := url.Parse(s)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("embedded etcd: %s %q: %w", field, s, err))
		case u.Scheme != "http":
			errs = append(errs, fmt.Errorf("embedded etcd: %s %q: want http://host:port (TLS is not supported for the embedded server)", field, s))
		case u.Port() == "":
			errs = append(errs, fmt.Errorf("embedded etcd: %s %q has no port", field, s))
		}
		return *u
	}
	client := parse("ClientURL", c.ClientURL, DefaultClientURL)
	peer := parse("PeerURL", c.PeerURL, DefaultPeerURL)
	if err := (etcd.Config{Endpoints: []string{"-"}, Namespace: c.Namespace}).Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	name := c.Name
	if name == "" {
		name = DefaultName
	}
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = c.Dir
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = name + "=" + peer.String()
	cfg.InitialClusterToken = "shardkeeper-" + name
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "1h"
	if c.Logger != nil {
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(c.Logger)
	} else {
		cfg.LogLevel = "error"
		cfg.LogOutputs = []string{"stderr"}
	}
	return cfg, nil
}

// startError explains why StartEtcd failed.
func startError(c Config, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use") {
		return fmt.Errorf("embedded etcd: a client or peer port is taken (ClientURL %q, PeerURL %q): stop the other server or choose other URLs: %w",
			orDefault(c.ClientURL, DefaultClientURL), orDefault(c.PeerURL, DefaultPeerURL), err)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return fmt.Errorf("embedded etcd: cannot listen (ClientURL %q, PeerURL %q): %w",
			orDefault(c.ClientURL, DefaultClientURL), orDefault(c.PeerURL, DefaultPeerURL), err)
	}
	return fmt.Errorf("embedded etcd in %s: %w", c.Dir, err)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Endpoints returns the client URLs the server listens on, with the real
// port when the configured one was 0.
func (s *Server) Endpoints() []string { return append([]string(nil), s.endpoints...) }

// Etcd returns the underlying embedded server, for tools that need it.
func (s *Server) Etcd() *embed.Etcd { return s.etcd }

// Close stops the server (clients get errors wrapping
// registry.ErrUnavailable) and releases the data directory. Data stays on
// disk. It is safe to call more than once.
func (s *Server) Close() error {
	if s.etcd == nil {
		return nil
	}
	s.etcd.Close()
	s.etcd = nil
	s.unlock()
	return nil
}

// Repo is an etcd repository on an embedded server that it owns.
type Repo struct {
	*etcd.Repo
	server *Server
}

var _ registry.Repository = (*Repo)(nil)

// Open starts the server as Start does and returns a repository on it,
// in c.Namespace. Closing the repository stops the server.
func Open(ctx context.Context, c Config) (*Repo, error) {
	s, err := Start(ctx, c)
	if err != nil {
		return nil, err
	}
	r, err := etcd.Open(ctx, etcd.Config{Endpoints: s.Endpoints(), Namespace: c.Namespace, DialTimeout: 5 * time.Second})
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	return &Repo{Repo: r, server: s}, nil
}

// Server returns the embedded server, for its Endpoints.
func (r *Repo) Server() *Server { return r.server }

// Close implements registry.Repository: it closes the client, then stops
// the server.
func (r *Repo) Close() error {
	err := r.Repo.Close()
	return errors.Join(err, r.server.Close())
}

// lockDir takes an exclusive advisory lock on dir for the process.
func lockDir(dir string) (unlock func(), err error) {
	abs, _ := filepath.Abs(dir)
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: data dir: %w", err)
	}
	if err := flock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("embedded etcd: data dir %s is in use by another process (another shardkeeper or etcd on the same directory): %w", abs, err)
	}
	return func() { _ = f.Close() }, nil
}
