package daemon

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/pgfront"
)

// PostgreSQLConfig configures the DistSQL console over the PostgreSQL
// protocol (see internal/pgfront).
type PostgreSQLConfig struct {
	// Addr is the listen address, e.g. 127.0.0.1:5433.
	Addr string
	// TLS, when set, answers clients' SSLRequest with TLS.
	TLS *tls.Config
	// MaxConnections caps the connections served at once; 0 means
	// pgfront.DefaultMaxConnections.
	MaxConnections int
	// IdleTimeout closes sessions idle this long; 0 means
	// pgfront.DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// bindPostgreSQL checks c and binds its address.
func bindPostgreSQL(c *PostgreSQLConfig, log *slog.Logger) (*consoleFrontend, error) {
	if c.MaxConnections < 0 || c.IdleTimeout < 0 {
		return nil, fmt.Errorf("postgresql: MaxConnections %d, IdleTimeout %v: want 0 (the defaults) or more", c.MaxConnections, c.IdleTimeout)
	}
	ln, err := bindConsole("postgresql", c.Addr, "", log)
	if err != nil {
		return nil, err
	}
	return &consoleFrontend{name: "postgresql", version: pgfront.ServerVersion, tls: c.TLS != nil, ln: ln,
		open: func(d consoleDeps) (consoleServer, error) {
			return pgfront.New(pgfront.Config{
				Executor: d.executor, Processes: d.processes, Users: d.users,
				TLS: c.TLS, Logger: d.log, MaxConnections: c.MaxConnections, IdleTimeout: c.IdleTimeout, Budget: d.budget, Metrics: d.metrics,
			})
		}}, nil
}
