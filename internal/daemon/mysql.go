package daemon

import (
	"crypto/tls"
	"fmt"
	"log/slog"
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

// bindMySQL checks c and binds its address, or the fallback when the
// address is in use and a fallback is configured.
func bindMySQL(c *MySQLConfig, log *slog.Logger) (*consoleFrontend, error) {
	if c.MaxConnections < 0 || c.IdleTimeout < 0 {
		return nil, fmt.Errorf("mysql: MaxConnections %d, IdleTimeout %v: want 0 (the defaults) or more", c.MaxConnections, c.IdleTimeout)
	}
	ln, err := bindConsole("mysql", c.Addr, c.FallbackAddr, log)
	if err != nil {
		return nil, err
	}
	return &consoleFrontend{name: "mysql", version: mysqlfront.ServerVersion, tls: c.TLS != nil, ln: ln,
		open: func(d consoleDeps) (consoleServer, error) {
			return mysqlfront.New(mysqlfront.Config{
				Executor: d.executor, Users: d.users, Processes: d.processes, TLS: c.TLS,
				MaxConnections: c.MaxConnections, IdleTimeout: c.IdleTimeout, Logger: d.log, Budget: d.budget, Metrics: d.metrics,
			})
		}}, nil
}
