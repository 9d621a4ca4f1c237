package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/mysqlfront"
)

// MySQLConfig configures the DistSQL console over the MySQL protocol (see
// internal/mysqlfront).
type MySQLConfig struct {
	// Addr is the listen address, e.g. 127.0.0.1:3307.
	Addr string
	// FallbackAddr, when set, is tried (with a warning) when Addr is in
	// use; serve sets it for its default address only.
	FallbackAddr string
	// PublishPort makes the bound port the port the node publishes in
	// its online node (cluster.Config.Port), as a ShardingSphere-Proxy
	// publishes its own.
	PublishPort bool
	// TLS, when set, lets clients switch to TLS.
	TLS *tls.Config
	// MaxConnections caps the sessions served at once; 0 means
	// mysqlfront.DefaultMaxConnections.
	MaxConnections int
	// IdleTimeout closes sessions idle this long; 0 means
	// mysqlfront.DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// mysqlFrontend serves the DistSQL console over the MySQL protocol.
type mysqlFrontend struct {
	c    *MySQLConfig
	ln   net.Listener
	log  *slog.Logger
	srv  *mysqlfront.Server
	done chan struct{} // closed when Serve returned; nil before serve
}

// bindMySQL checks c and binds its address, or the fallback when the
// address is in use and a fallback is configured.
func bindMySQL(c *MySQLConfig, log *slog.Logger) (*mysqlFrontend, error) {
	if c.MaxConnections < 0 || c.IdleTimeout < 0 {
		return nil, fmt.Errorf("mysql: MaxConnections %d, IdleTimeout %v: want 0 (the defaults) or more", c.MaxConnections, c.IdleTimeout)
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil && c.FallbackAddr != "" && errors.Is(err, syscall.EADDRINUSE) {
		log.Warn("mysql address in use; using another port", "addr", c.Addr, "fallback", c.FallbackAddr)
		ln, err = net.Listen("tcp", c.FallbackAddr)
	}
	if err != nil {
		return nil, fmt.Errorf("mysql: listen on %s: %w", c.Addr, err)
	}
	return &mysqlFrontend{c: c, ln: ln}, nil
}

// port is the bound port.
func (m *mysqlFrontend) port() int { return m.ln.Addr().(*net.TCPAddr).Port }

func (m *mysqlFrontend) serve(d *Daemon) error {
	srv, err := mysqlfront.New(mysqlfront.Config{
		Executor: d.Console, Users: d.users, Processes: d.Processes, TLS: m.c.TLS,
		MaxConnections: m.c.MaxConnections, IdleTimeout: m.c.IdleTimeout, Logger: d.log,
	})
	if err != nil {
		return err
	}
	done := make(chan struct{})
	m.srv, m.log, m.done = srv, d.log, done
	go func() {
		defer close(done)
		if err := srv.Serve(m.ln); err != nil && !errors.Is(err, mysqlfront.ErrServerClosed) {
			d.log.Error("mysql console stopped", "err", err)
		}
	}()
	addr := m.ln.Addr().String()
	users, err := d.users()
	switch {
	case err != nil:
		d.log.Error("mysql console: the authority rule's users cannot be read: every login is refused until it is fixed", "err", err)
	case users.Empty():
		d.log.Warn("mysql console: no users in the authority rule: only loopback clients are accepted, under any user name, without a password", "addr", addr)
	}
	d.log.Info("mysql console listening", "addr", addr, "tls", m.c.TLS != nil, "version", mysqlfront.ServerVersion)
	return nil
}

// drain ends the console: the port closes and every session ends, its
// running statement cancelled (ctx bounds the wait for them).
func (m *mysqlFrontend) drain(ctx context.Context) {
	m.stop(ctx)
}

func (m *mysqlFrontend) stop(ctx context.Context) {
	if m.srv == nil {
		_ = m.ln.Close()
		return
	}
	if m.done == nil {
		return
	}
	if err := m.srv.Shutdown(ctx); err != nil {
		m.log.Warn("mysql console did not drain", "err", err)
	}
	select {
	case <-m.done:
		m.done = nil
	case <-ctx.Done():
	}
}
