// Package mysqlfront is the MySQL-protocol front end of a shardkeeper node:
// a MySQL or MariaDB client (the mysql and mariadb command-line clients,
// go-sql-driver/mysql, JDBC, GUIs) logs in with a user of the authority
// rule and types DistSQL, which the front end hands to a console.Executor.
// The wire protocol is github.com/go-mysql-org/go-mysql's server package;
// this package adds the users, TLS, the bounds a network client must not
// exceed (connections, packet size, handshake and idle time), sessions as
// processes for SHOW PROCESSLIST and KILL, and the translation of console
// results and errors into result sets, OK and ERR packets. The handshake
// announces the session id's process.Number as the connection id, so that
// the KILL QUERY a client sends on Ctrl-C names the session; the cancelled
// statement fails with 1317. The accept loop and connection bookkeeping
// are internal/connserver's.
package mysqlfront

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/connserver"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/process"
)

// Defaults of Config's bounds.
const (
	// DefaultMaxConnections is the number of sessions served at once.
	DefaultMaxConnections = 100
	// DefaultMaxPacketSize is the largest command accepted, in bytes
	// (MySQL's max_allowed_packet): the command byte and a statement of
	// the one statement limit, distsql.MaxStatementBytes. A longer packet
	// is refused from its header, before it is read.
	DefaultMaxPacketSize = 1 + distsql.MaxStatementBytes
	// DefaultIdleTimeout closes a session that sent nothing for this long
	// (MySQL's wait_timeout).
	DefaultIdleTimeout = 8 * time.Hour
	// DefaultHandshakeTimeout bounds the login: TLS, handshake and
	// password exchange. Connections logging in hold at most a quarter
	// of MaxConnections (see internal/connserver), each for at most this
	// long.
	DefaultHandshakeTimeout = 5 * time.Second
)

// ServerVersion is the version the front end announces in its handshake,
// the one SELECT @@version shows: a MySQL version clients accept, then the
// product, as ShardingSphere-Proxy announces "5.7.22-ShardingSphere-Proxy
// 5.5.3". It names shardkeeper, not ShardingSphere-Proxy.
const ServerVersion = console.MySQLServerVersion

// handshakeBudget bounds what a client may send before it is
// authenticated (TLS handshake, handshake response, password exchange).
const handshakeBudget = 64 << 10

// Config configures a Server.
type Config struct {
	// Executor runs every statement. Required.
	Executor console.Executor
	// Metrics, when set, counts the sessions, failed logins and refused
	// connections (console.Metrics).
	Metrics *console.Metrics
	// Users returns the users a client may log in as; it is called for
	// every connection, so a change of the authority rule applies to the
	// next login. Nil, or Empty users, accept only loopback clients, under
	// any user name and without a password: one the client sends is
	// ignored. An error refuses the connection (and is logged).
	Users func() (*authority.Users, error)
	// Processes, when set, lists every authenticated session while it
	// runs, so SHOW PROCESSLIST shows it and KILL ends it.
	Processes *process.Table
	// TLS, when set, lets clients switch to TLS (mysql --ssl). Clients
	// without TLS are still served.
	TLS *tls.Config
	// Budget, when set, bounds the bytes of statements all sessions read
	// and run at once, shared with the node's other console: a packet
	// that finds no room within 2 s is refused with error 1041 and its
	// session closed. Nil bounds only each session.
	Budget *connserver.Budget
	// Bounds; zero means the Default* above.
	MaxConnections   int
	MaxPacketSize    int
	IdleTimeout      time.Duration
	HandshakeTimeout time.Duration
	// Logger receives the front end's logs; nil means slog.Default().
	Logger *slog.Logger
}

// Server serves the MySQL protocol on listeners. Create it with New. It
// is safe for concurrent use.
type Server struct {
	cfg Config
	log *slog.Logger
	// rsaKey is caching_sha2_password's key for the password exchange
	// without TLS: the TLS certificate's RSA key, else one made on first
	// use.
	rsaKey func() (*rsa.PrivateKey, error)
	conns  *connserver.Server
	// shared is the encoding of the last shared result (resultOf).
	shared atomic.Pointer[sharedResultset]
}

// New checks cfg and returns a Server. It does no I/O.
func New(cfg Config) (*Server, error) {
	if cfg.Executor == nil {
		return nil, errors.New("mysqlfront: Config.Executor is required")
	}
	if cfg.MaxConnections < 0 || cfg.MaxPacketSize < 0 || cfg.IdleTimeout < 0 || cfg.HandshakeTimeout < 0 {
		return nil, fmt.Errorf("mysqlfront: negative bound in %+v", cfg)
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxPacketSize == 0 {
		cfg.MaxPacketSize = DefaultMaxPacketSize
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	s.conns = connserver.New(connserver.Config{
		Name: "mysqlfront", Max: cfg.MaxConnections, Logger: cfg.Logger,
		Serve: func(ctx context.Context, nc net.Conn) { newSession(ctx, s, nc).serve() },
		Refuse: func(ctx context.Context, nc net.Conn) {
			cfg.Metrics.Refused("mysql")
			newSession(ctx, s, nc).refuse(errTooManyConnections)
		},
	})
	var key *rsa.PrivateKey
	if cfg.TLS != nil && len(cfg.TLS.Certificates) > 0 {
		key, _ = cfg.TLS.Certificates[0].PrivateKey.(*rsa.PrivateKey)
	}
	s.rsaKey = sync.OnceValues(func() (*rsa.PrivateKey, error) {
		if key != nil {
			return key, nil
		}
		return rsa.GenerateKey(rand.Reader, 2048)
	})
	return s, nil
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = connserver.ErrServerClosed

// Serve accepts connections on ln and serves each on a goroutine of its
// own until Close, which closes ln; it then returns ErrServerClosed.
// Any other accept error is returned (and ln is closed). Connections that
// have not logged in hold at most a quarter of Config.MaxConnections: a
// new connection closes the one logging in longest when they are all
// taken, or when every slot is. A connection that finds all
// Config.MaxConnections slots held by logged-in sessions gets error 1040
// instead of a handshake.
func (s *Server) Serve(ln net.Listener) error { return s.conns.Serve(ln) }

// Connections returns the number of connections served, authenticated
// or not, within Config.MaxConnections.
func (s *Server) Connections() int { return s.conns.Connections() }

// Close closes every listener, cancels the statement of every session
// and closes its connection, then waits for the session goroutines,
// bounded by ctx. Idempotent.
func (s *Server) Close(ctx context.Context) error { return s.conns.Close(ctx) }
