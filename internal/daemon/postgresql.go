package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/shardkeeper/shardkeeper/internal/pgfront"
)

// PostgreSQLConfig configures the DistSQL console over the PostgreSQL
// protocol (see internal/pgfront).
type PostgreSQLConfig struct {
	// Addr is the listen address, e.g. 127.0.0.1:5433.
	Addr string
	// TLS, when set, answers clients' SSLRequest with TLS.
	TLS *tls.Config
	// MaxConns caps the connections served at once; 0 means
	// pgfront.DefaultMaxConns.
	MaxConns int
}

// pgFrontend serves the DistSQL console over the PostgreSQL protocol.
type pgFrontend struct {
	c    *PostgreSQLConfig
	ln   net.Listener
	srv  *pgfront.Server
	done chan struct{} // closed when Serve returned; nil before serve
}

// bindPostgreSQL checks c and binds its address.
func bindPostgreSQL(c *PostgreSQLConfig) (*pgFrontend, error) {
	if c.MaxConns < 0 {
		return nil, fmt.Errorf("postgresql: MaxConns %d: want 0 (the default, %d) or more", c.MaxConns, pgfront.DefaultMaxConns)
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return nil, fmt.Errorf("postgresql: listen on %s: %w", c.Addr, err)
	}
	return &pgFrontend{c: c, ln: ln}, nil
}

func (p *pgFrontend) serve(d *Daemon) error {
	srv, err := pgfront.New(pgfront.Config{
		Executor: d.Console, Processes: d.Processes, Users: d.users,
		TLS: p.c.TLS, Logger: d.log, MaxConns: p.c.MaxConns,
	})
	if err != nil {
		return err
	}
	done := make(chan struct{})
	p.srv, p.done = srv, done
	go func() {
		defer close(done)
		if err := srv.Serve(p.ln); err != nil && !errors.Is(err, pgfront.ErrServerClosed) {
			d.log.Error("postgresql console stopped", "err", err)
		}
	}()
	users, err := d.users()
	switch {
	case err != nil:
		d.log.Error("postgresql console: the authority rule's users cannot be read: every login is refused until it is fixed", "err", err)
	case users.Empty():
		d.log.Warn("postgresql console: no users in the authority rule: only loopback clients are accepted, under any user name, without a password", "addr", p.ln.Addr().String())
	}
	d.log.Info("postgresql console listening", "addr", p.ln.Addr().String(), "tls", p.c.TLS != nil)
	return nil
}

// drain ends the console: the port closes and every session ends, its
// running statement cancelled (ctx bounds the wait for them).
func (p *pgFrontend) drain(ctx context.Context) {
	p.stop(ctx)
}

func (p *pgFrontend) stop(ctx context.Context) {
	if p.srv == nil {
		_ = p.ln.Close()
		return
	}
	_ = p.srv.Close(ctx)
	if p.done != nil {
		<-p.done
		p.done = nil
	}
}
