// Package pgfront serves a node's DistSQL console over the PostgreSQL wire
// protocol (version 3.0), so that psql, pgx and every other PostgreSQL
// client can operate the cluster the way ShardingSphere-Proxy operators do.
// pgx's pgproto3 encodes and decodes every message; this package is the
// session loop around it.
//
// A connection goes through:
//
//   - startup, bounded by Config.StartupTimeout: an SSLRequest is answered
//     with TLS when Config.TLS is set (else 'N'), a GSSENCRequest is
//     refused ('N'), a CancelRequest cancels the running statement of the
//     session whose key it carries (and gets no answer, as in PostgreSQL);
//     a request for protocol 3.2 or for protocol options is answered with
//     NegotiateProtocolVersion and served as 3.0;
//   - authentication against Config.Users: SCRAM-SHA-256 (and
//     SCRAM-SHA-256-PLUS with tls-server-end-point channel binding over
//     TLS), or MD5 or clear text for a user whose authority entry names
//     upstream's MD5 or PASSWORD authenticator. Clients from other hosts
//     than loopback must use TLS. With no
//     users configured only loopback clients are accepted, under any user
//     name and without a password; others get FATAL 28000. A wrong password
//     or unknown user gets FATAL 28P01 and is logged without the password;
//   - ParameterStatus (server_version, client_encoding UTF8, DateStyle,
//     integer_datetimes, standard_conforming_strings...), BackendKeyData
//     and ReadyForQuery;
//   - statements: the simple query protocol (several statements separated
//     by ';' run in order, the first failure ends the query) and the
//     extended protocol as drivers use it (Parse, Bind, Describe, Execute,
//     Sync, Close, Flush), without parameters.
//
// Results are sent as text (int8 columns in binary when a Bind asks for
// it): console.Int64 columns are int8, the others text. Warnings become
// NoticeResponse messages, a *sqlerr.Error an ErrorResponse with its SQL
// state (and its position), any other error one with state HY000.
//
// The extended protocol's Describe of a prepared statement needs the
// result's columns before Execute: the statement is run then, and the
// first Execute of a portal bound to it afterwards returns that run's
// result instead of running the statement again, so a driver's
// prepare-then-execute runs a statement once.
//
// Every session is a process in Config.Processes while it is open (its
// user, client host, database, start time and current statement); killing
// the process closes the connection, KILL QUERY cancels its statement as a
// CancelRequest does. The accept loop and connection bookkeeping are
// internal/connserver's.
//
// Bounds: a message body is at most Config.MaxMessageSize bytes (a longer
// one ends the session with FATAL 08P01), at most Config.MaxConnections
// connections are served at once, of which connections still in startup
// hold at most a quarter (a new connection closes the one in startup
// longest when they are all taken, or when every slot is; see
// internal/connserver), so that idle connections never lock logged-in
// users out; a connection that finds every slot held by a logged-in
// session gets FATAL 53300 "sorry, too many clients already" after its
// first packet, unless that packet is a CancelRequest, which is honoured), a session idle for Config.IdleTimeout
// is closed with FATAL 57P05, a session keeps at most maxPrepared prepared
// statements and portals. A malformed message ends its session with an
// error; other sessions go on.
package pgfront

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/connserver"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/process"
)

// Defaults of Config's bounds.
const (
	DefaultMaxConnections = 256
	// DefaultMaxMessageSize is a statement of the one statement limit,
	// distsql.MaxStatementBytes, and 4 KiB for the names and framing of
	// the message that carries it. A longer message is refused from its
	// header, before it is read.
	DefaultMaxMessageSize = distsql.MaxStatementBytes + 4<<10
	DefaultStartupTimeout = 5 * time.Second
	// DefaultIdleTimeout closes a session that sent nothing for this long,
	// the same bound as the MySQL console's (MySQL's wait_timeout).
	DefaultIdleTimeout = 8 * time.Hour
)

// ServerVersion is the server_version a client sees. psql and drivers
// read the leading number; the rest names the server.
const ServerVersion = "14.0 (shardkeeper)"

// Config configures a Server.
type Config struct {
	// Executor runs the statements (required).
	Executor console.Executor
	// Metrics, when set, counts the sessions, failed logins and refused
	// connections (console.Metrics).
	Metrics *console.Metrics
	// Processes, when set, lists every open session as a process.
	Processes *process.Table
	// Users returns the accounts clients log in as; it is called once per
	// connection, so that changes to the authority rule apply to the next
	// connection. A nil func, or nil or empty users, accepts only loopback
	// clients, under any user name, without a password. An error refuses
	// the connection (FATAL 28000 with the error's text).
	Users func() (*authority.Users, error)
	// TLS, when set, answers SSLRequest with TLS.
	TLS *tls.Config
	// Logger receives connection and authentication events; nil means
	// slog.Default().
	Logger *slog.Logger
	// MaxConnections caps the connections served at once; 0 means
	// DefaultMaxConnections.
	MaxConnections int
	// Budget, when set, bounds the bytes of messages all sessions read
	// and run at once, shared with the node's other console: a message
	// that finds no room within 2 s ends its session with FATAL 53200.
	// Nil bounds only each session.
	Budget *connserver.Budget
	// MaxMessageSize caps one message's body in bytes; 0 means
	// DefaultMaxMessageSize.
	MaxMessageSize int
	// StartupTimeout bounds the startup and authentication of a
	// connection; 0 means DefaultStartupTimeout.
	StartupTimeout time.Duration
	// IdleTimeout closes a session that sent nothing for this long between
	// statements, with FATAL 57P05 (PostgreSQL's idle_session_timeout); 0
	// means DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// Server serves the PostgreSQL protocol. Create it with New, run it with
// Serve, end it with Close. It is safe for concurrent use.
type Server struct {
	c     Config
	log   *slog.Logger
	conns *connserver.Server

	mu       sync.Mutex
	sessions map[uint32]*session // by BackendKeyData process id
}

// New checks c and returns a Server; it does no I/O.
func New(c Config) (*Server, error) {
	var errs []error
	if c.Executor == nil {
		errs = append(errs, errors.New("pgfront: Config.Executor is nil"))
	}
	if c.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("pgfront: MaxConnections %d: want 0 (the default, %d) or more", c.MaxConnections, DefaultMaxConnections))
	}
	if c.MaxMessageSize < 0 {
		errs = append(errs, fmt.Errorf("pgfront: MaxMessageSize %d: want 0 (the default, %d) or more", c.MaxMessageSize, DefaultMaxMessageSize))
	}
	if c.StartupTimeout < 0 {
		errs = append(errs, fmt.Errorf("pgfront: StartupTimeout %v: want 0 (the default, %v) or more", c.StartupTimeout, DefaultStartupTimeout))
	}
	if c.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("pgfront: IdleTimeout %v: want 0 (the default, %v) or more", c.IdleTimeout, DefaultIdleTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
	}
	if c.StartupTimeout == 0 {
		c.StartupTimeout = DefaultStartupTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{c: c, log: log, sessions: map[uint32]*session{}}
	s.conns = connserver.New(connserver.Config{
		Name: "pgfront", Max: c.MaxConnections, Logger: log,
		Serve: s.serveConn, Refuse: s.refuse,
	})
	return s, nil
}

// ErrServerClosed is what Serve returns after Close.
var ErrServerClosed = connserver.ErrServerClosed

// Serve accepts connections on ln and serves each on its own goroutine
// until Close, then returns ErrServerClosed; it returns another error when
// ln fails. ln is closed when Serve returns.
func (s *Server) Serve(ln net.Listener) error { return s.conns.Serve(ln) }

// Connections returns the number of connections served within
// Config.MaxConnections.
func (s *Server) Connections() int { return s.conns.Connections() }

// Close stops accepting, cancels every running statement, closes every
// connection and waits, bounded by ctx, until their goroutines returned.
// Idempotent.
func (s *Server) Close(ctx context.Context) error { return s.conns.Close(ctx) }

// register gives sess its session id (console.NewSessionID) and, for
// BackendKeyData, a process id and secret key, and makes it reachable by
// CancelRequest. The process id is the session id's process.Number, which
// is what the console answers for pg_backend_pid() and CONNECTION_ID(),
// so that a driver's PID names the session in SHOW PROCESSLIST and KILL.
func (s *Server) register(sess *session) {
	secret := make([]byte, 4)
	_, _ = rand.Read(secret)
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		id := console.NewSessionID()
		pid := process.Number(id)
		if _, taken := s.sessions[pid]; pid != 0 && !taken {
			sess.console.ID, sess.pid, sess.secret = id, pid, secret
			s.sessions[pid] = sess
			return
		}
	}
}

func (s *Server) unregister(sess *session) {
	s.mu.Lock()
	if s.sessions[sess.pid] == sess {
		delete(s.sessions, sess.pid)
	}
	s.mu.Unlock()
}

// cancelRequest cancels the running statement of the session with process
// id pid when secret is its key; it reports whether it matched.
func (s *Server) cancelRequest(pid uint32, secret []byte) bool {
	s.mu.Lock()
	sess := s.sessions[pid]
	s.mu.Unlock()
	if sess == nil || subtle.ConstantTimeCompare(sess.secret, secret) != 1 {
		return false
	}
	sess.cancelStatement()
	return true
}
