package mysqlfront

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/connserver"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/redact"
)

// Errors the front end answers before or instead of a login.
var (
	errTooManyConnections = mysql.NewError(mysql.ER_CON_COUNT_ERROR, "Too many connections")
	errInterrupted        = mysql.NewError(mysql.ER_QUERY_INTERRUPTED, "Query execution was interrupted")
	errUsersUnreadable    = mysql.NewError(mysql.ER_ACCESS_DENIED_ERROR, "Access denied: the node cannot read its authority rule (see its log)")
)

// errHostNotAllowed is MySQL's answer to a host without an account,
// with what to change.
func errHostNotAllowed(addr netip.Addr) *mysql.MyError {
	return mysql.NewError(mysql.ER_HOST_NOT_PRIVILEGED, fmt.Sprintf(
		"Host '%s' is not allowed to connect to this shardkeeper node: no users are configured, so only loopback clients are accepted; add users to the authority rule (global.yaml: authority.users)", addr))
}

// session is one client connection, from accept to close. Its methods
// implement go-mysql's server.Handler and server.AuthenticationHandler;
// they run on the connection's goroutine only.
type session struct {
	srv *Server
	raw net.Conn
	// watched is raw as the session reads it, watched while a statement
	// runs so that a client that closes its connection cancels it.
	watched *connserver.WatchedConn
	addr    netip.Addr // client address, no port
	log     *slog.Logger
	ctx     context.Context
	cancel  context.CancelFunc
	once    sync.Once

	stmtMu     sync.Mutex
	stmtCancel context.CancelFunc // of the running statement; nil between statements
	cancelled  bool               // KILL QUERY cancelled the running statement

	users  *authority.Users
	noPass bool // the credential GetCredential returned is the empty password
	// unchecked holds the warning that no users are configured, for a
	// client that sent a password in loopback-only mode, until its first
	// statement carries it.
	unchecked string
	authed    bool
	pendingDB string // database named in the handshake, used once authenticated
	cs        console.Session
	conn      *server.Conn
	warnings  []warning  // of the last statement, for SHOW WARNINGS
	out       *limitConn // gathers the answers once logged in; flushed after each command
}

type warning struct {
	level   string // Warning or Error
	code    uint16
	message string
}

func newSession(ctx context.Context, s *Server, raw net.Conn) *session {
	ctx, cancel := context.WithCancel(ctx)
	addr := remoteAddr(raw)
	id := console.NewSessionID()
	for process.Number(id) == 0 { // the handshake's connection id; clients take 0 for none
		id = console.NewSessionID()
	}
	return &session{
		srv: s, raw: raw, addr: addr, ctx: ctx, cancel: cancel,
		log: s.log.With("client", addr.String()),
		cs:  console.Session{ID: id, Host: addr.String(), Protocol: "MySQL"},
	}
}

// remoteAddr is the client's IP address (unmapped, without zone); the
// zero Addr when the connection has none.
func remoteAddr(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	return netip.Addr{}
}

// kill cancels the statement in flight and closes the connection; the
// session's goroutine then ends. Safe for concurrent use.
func (ss *session) kill() {
	ss.once.Do(func() {
		ss.cancel()
		_ = ss.raw.Close()
	})
}

// cancelStatement cancels the running statement, if any, and leaves the
// session open (KILL QUERY): the client gets error 1317. Safe for
// concurrent use.
func (ss *session) cancelStatement() {
	ss.stmtMu.Lock()
	defer ss.stmtMu.Unlock()
	if ss.stmtCancel != nil {
		ss.cancelled = true
		ss.stmtCancel()
	}
}

// refuse answers the connection with e instead of a handshake and closes
// it.
func (ss *session) refuse(e *mysql.MyError) {
	defer ss.kill()
	_ = ss.raw.SetWriteDeadline(time.Now().Add(time.Second))
	_ = writeErrPacket(ss.raw, 0, e)
}

// serve logs the client in and answers its commands until it quits, is
// killed, idles out, or sends something malformed.
func (ss *session) serve() {
	defer ss.kill()
	cfg := &ss.srv.cfg
	users, err := ss.readUsers()
	if err != nil {
		ss.log.Error("mysql: refusing a connection: the authority rule cannot be read", "err", err)
		ss.refuse(errUsersUnreadable)
		return
	}
	if users.Empty() && !ss.addr.IsLoopback() {
		ss.log.Warn("mysql: refusing a non-loopback connection: no users are configured")
		ss.refuse(errHostNotAllowed(ss.addr))
		return
	}
	ss.users = users
	var rsaKey *rsa.PrivateKey
	if needsRSA(users) {
		if rsaKey, err = ss.srv.rsaKey(); err != nil {
			ss.log.Error("mysql: no RSA key for caching_sha2_password", "err", err)
		}
	}
	ss.watched = &connserver.WatchedConn{Conn: ss.raw}
	lc := &limitConn{Conn: ss.watched, host: hostAddr(ss.addr.String()), max: cfg.MaxPacketSize, framing: true,
		sslRequest: cfg.TLS != nil, budget: handshakeBudget, connID: process.Number(ss.cs.ID)}
	_ = ss.raw.SetDeadline(time.Now().Add(cfg.HandshakeTimeout))
	protocol := server.NewServerWithAuth(ServerVersion, mysql.DEFAULT_COLLATION_ID, mysql.AUTH_NATIVE_PASSWORD,
		rsaKey, cfg.TLS, authProvider{&server.DefaultAuthenticationProvider{}, ss})
	conn, err := ss.login(protocol, lc)
	if err != nil {
		return // OnAuthFailure logged it
	}
	ss.conn = conn
	_ = ss.raw.SetDeadline(time.Time{})
	lc.budget = -1
	if t, ok := conn.Conn.Conn.(*tls.Conn); ok {
		// Bound the packets above TLS; lc only sees records.
		conn.Conn.Conn = &limitConn{Conn: t, host: lc.host, max: cfg.MaxPacketSize, framing: true, budget: -1}
	}
	if c, ok := conn.Conn.Conn.(*limitConn); ok {
		c.buffer, ss.out = true, c
		c.stmts, c.ctx = cfg.Budget, ss.ctx
		defer func() { _ = c.flush(); c.release() }() // before kill closes the connection
	}
	conn.SetStatus(mysql.SERVER_STATUS_AUTOCOMMIT)
	if t := cfg.Processes; t != nil {
		remove := t.Add(process.Process{
			ID: ss.cs.ID, Username: ss.cs.User, Hostname: ss.cs.Host, DatabaseName: ss.cs.Database,
			StartMillis: time.Now().UnixMilli(), Idle: true,
		}, ss.kill, ss.cancelStatement)
		defer remove()
	}
	defer cfg.Metrics.SessionStarted("mysql")()
	ss.log.Debug("mysql: session started", "user", ss.cs.User, "id", ss.cs.ID)
	for {
		_ = ss.raw.SetReadDeadline(time.Now().Add(cfg.IdleTimeout))
		_ = ss.raw.SetWriteDeadline(time.Now().Add(cfg.IdleTimeout + writeTimeout))
		if err := ss.command(); err != nil {
			switch {
			case ss.ctx.Err() != nil || errors.Is(err, errQuit):
			case clientGone(err):
				// A client that closes its connection without COM_QUIT (most
				// drivers' pools, a killed mysql) ends its session normally.
				ss.log.Debug("mysql: session ended: the client disconnected", "user", ss.cs.User, "id", ss.cs.ID)
			default:
				ss.log.Info("mysql: session closed", "user", ss.cs.User, "id", ss.cs.ID, "err", err)
			}
			return
		}
	}
}

// clientGone says whether err is the client closing its connection
// between commands: the header of the next packet could not be read for
// end of stream or a reset.
func clientGone(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	// go-mysql formats the read error into its ErrBadConn.
	msg := err.Error()
	return strings.Contains(msg, "io.ReadFull(header) failed. err EOF") ||
		strings.Contains(msg, "io.ReadFull(header) failed") && strings.Contains(msg, "connection reset by peer")
}

func (ss *session) readUsers() (*authority.Users, error) {
	if ss.srv.cfg.Users == nil {
		return &authority.Users{}, nil
	}
	return ss.srv.cfg.Users()
}

// login runs go-mysql's handshake; a panic on a malformed packet is an
// error.
func (ss *session) login(protocol *server.Server, lc *limitConn) (c *server.Conn, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed handshake: %v", r)
			ss.log.Info("mysql: login failed", "err", err)
		}
	}()
	return protocol.NewCustomizedConn(lc, ss, ss)
}

var errQuit = errors.New("client quit")

// writeTimeout bounds writing a statement's answer to a client that does
// not read it (MySQL's net_write_timeout).
const writeTimeout = 60 * time.Second

// command answers one command. A malformed packet that makes the
// protocol code panic ends the session with an ERR packet.
func (ss *session) command() (err error) {
	conn := ss.conn
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed packet: %v", r)
			if conn.Conn != nil {
				_ = conn.WriteValue(mysql.NewError(mysql.ER_MALFORMED_PACKET, "Malformed communication packet"))
			}
		}
	}()
	err = conn.HandleCommand()
	if ss.out != nil {
		// The answer goes out now, under the write deadline set for it.
		if ferr := ss.out.flush(); err == nil {
			err = ferr
		}
	}
	if err != nil {
		return err
	}
	if conn.Closed() {
		return errQuit
	}
	return nil
}

// GetCredential implements server.AuthenticationHandler: the password of
// the user the client logs in as, from its address. An unknown user gets
// a random password, so that it is refused with 1045 as a wrong password
// is, without telling the client which users exist.
func (ss *session) GetCredential(username string) (server.Credential, bool, error) {
	ss.cs.User = username
	if ss.users.Empty() {
		ss.noPass = true
		return server.Credential{Passwords: []string{""}, AuthPluginName: mysql.AUTH_NATIVE_PASSWORD}, true, nil
	}
	u, ok := ss.users.Lookup(username, ss.addr)
	if !ok {
		var b [32]byte
		_, _ = rand.Read(b[:])
		return server.Credential{Passwords: []string{hex.EncodeToString(b[:])}, AuthPluginName: mysql.AUTH_NATIVE_PASSWORD}, true, nil
	}
	ss.noPass = u.Password == ""
	return server.Credential{Passwords: []string{u.Password}, AuthPluginName: authPlugin(u.AuthenticationMethod)}, true, nil
}

// authProvider is go-mysql's password checks, with three changes:
//   - With no users configured (loopback clients only), every login is
//     accepted whatever password the client sends, as the PostgreSQL
//     console, which asks for none, accepts it.
//   - A password sent for a user whose password is empty is refused as a
//     wrong password (1045). go-mysql would decode the empty stored hash
//     of mysql_native_password and panic (index out of range).
//   - A caching_sha2 password that cannot be decrypted is refused as a
//     wrong password (1045) rather than as an internal error. Without TLS
//     the client must encrypt it with the node's RSA key; the mariadb
//     client (10.11) sends it in clear text instead unless it is told
//     --skip-ssl (or uses TLS).
type authProvider struct {
	*server.DefaultAuthenticationProvider
	ss *session
}

func (p authProvider) Authenticate(c *server.Conn, plugin string, data []byte) error {
	sent := !(len(data) == 0 || len(data) == 1 && data[0] == 0) // go-mysql's isEmptyPassword
	if p.ss.users.Empty() {
		if sent {
			p.ss.unchecked = NoUsersWarning
		}
		return nil
	}
	if p.ss.noPass && sent {
		return server.ErrAccessDenied
	}
	err := p.DefaultAuthenticationProvider.Authenticate(c, plugin, data)
	if errors.Is(err, rsa.ErrDecryption) {
		p.ss.log.Warn("mysql: the client's caching_sha2_password password is not encrypted with the node's RSA key; connect with TLS (mariadb --ssl), or mariadb --skip-ssl without TLS", "user", c.GetUser())
		return server.ErrAccessDenied
	}
	return err
}

// needsRSA reports whether a user logs in with caching_sha2_password,
// whose password exchange without TLS needs an RSA key.
func needsRSA(users *authority.Users) bool {
	for _, u := range users.List() {
		if authPlugin(u.AuthenticationMethod) == mysql.AUTH_CACHING_SHA2_PASSWORD {
			return true
		}
	}
	return false
}

// authPlugin is the MySQL password method of an authority method name:
// caching_sha2_password when it names it, else mysql_native_password
// (ShardingSphere-Proxy's MySQL default, which also stands for methods of
// other protocols such as md5 or scram-sha-256).
func authPlugin(method string) string {
	switch strings.ToLower(method) {
	case "caching_sha2_password", "caching_sha2":
		return mysql.AUTH_CACHING_SHA2_PASSWORD
	}
	return mysql.AUTH_NATIVE_PASSWORD
}

// OnAuthSuccess implements server.AuthenticationHandler: it selects the
// database the handshake named; an unknown one refuses the login.
func (ss *session) OnAuthSuccess(c *server.Conn) error {
	// Logged in before the client hears so: a client that then opens its
	// next connection must not find this one still counted as pending.
	if !ss.srv.conns.LoggedIn(ss.raw) {
		return errors.New("mysql: evicted while logging in")
	}
	ss.authed = true
	ss.cs.User = c.GetUser()
	if db := ss.pendingDB; db != "" {
		ss.pendingDB = ""
		return ss.UseDB(db)
	}
	return nil
}

// OnAuthFailure implements server.AuthenticationHandler: it logs the
// refused login, never the password.
func (ss *session) OnAuthFailure(c *server.Conn, err error) {
	ss.srv.cfg.Metrics.LoginFailed("mysql")
	var me *mysql.MyError
	if errors.Is(err, server.ErrAccessDenied) || errors.As(err, &me) && me.Code == mysql.ER_ACCESS_DENIED_ERROR {
		ss.log.Warn("mysql: access denied", "user", c.GetUser(), "reason", err.Error())
		return
	}
	ss.log.Info("mysql: login failed", "user", c.GetUser(), "err", err)
}

// UseDB implements server.Handler for COM_INIT_DB (and the handshake's
// database): USE db through the executor.
func (ss *session) UseDB(db string) error {
	if !ss.authed {
		ss.pendingDB = db
		return nil
	}
	_, err := ss.execute("USE " + quoteIdent(db))
	return err
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// NoUsersWarning is what a client that sent a password in loopback-only
// mode is told once, with its first statement: nothing checked it.
const NoUsersWarning = "no users are configured on this node (the authority rule has none), so the password you sent was not checked: " +
	"every loopback client gets in under any name and is an admin; add users to the authority rule (README: Operating it with DistSQL)"

// HandleQuery implements server.Handler for COM_QUERY. The session's first
// statement carries the unchecked-password warning, if any, in MySQL's
// way: its warning count and SHOW WARNINGS.
func (ss *session) HandleQuery(query string) (*mysql.Result, error) {
	if isShowWarnings(query) {
		ss.conn.SetWarnings(0)
		return mysql.NewResult(warningsResultset(ss.warnings)), nil
	}
	res, err := ss.execute(query)
	if w := ss.unchecked; w != "" {
		ss.unchecked = ""
		ss.warnings = append(ss.warnings, warning{level: "Warning", code: warningCode, message: w})
		if err == nil {
			ss.setWarnings(len(ss.warnings))
			if res != nil {
				res.Warnings = uint16(min(len(ss.warnings), 0xffff))
			}
		}
	}
	return res, err
}

// execute runs one statement through the executor, with the session in
// the process table while it runs.
func (ss *session) execute(query string) (*mysql.Result, error) {
	query = strings.Clone(query)
	ss.setRunning(query)
	ctx, cancel := context.WithCancel(ss.ctx)
	ss.stmtMu.Lock()
	ss.stmtCancel, ss.cancelled = cancel, false
	ss.stmtMu.Unlock()
	stopWatch := func() {}
	if ss.watched != nil {
		user, id := ss.cs.User, ss.cs.ID // the statement may change the session meanwhile
		stopWatch = ss.watched.Watch(func() {
			ss.log.Info("mysql: the client closed its connection during a statement; the statement is cancelled", "user", user, "id", id)
			cancel()
		})
	}
	res, err := console.ExecuteCancellable(ctx, ss.log, ss.srv.cfg.Executor, &ss.cs, query)
	stopWatch()
	ss.stmtMu.Lock()
	ss.stmtCancel = nil
	interrupted := ss.cancelled && ss.ctx.Err() == nil
	ss.stmtMu.Unlock()
	cancel()
	ss.setRunning("")
	_ = ss.raw.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err != nil {
		e := toMyError(err)
		if interrupted {
			e = errInterrupted
		}
		ss.warnings = []warning{{level: "Error", code: e.Code, message: e.Message}}
		ss.setWarnings(0)
		return nil, e
	}
	if res == nil {
		res = &console.Result{}
	}
	ss.warnings = ss.warnings[:0]
	for _, w := range res.Warnings {
		ss.warnings = append(ss.warnings, warning{level: "Warning", code: warningCode, message: w})
	}
	ss.setWarnings(len(res.Warnings))
	r, err := ss.srv.resultOf(res)
	if err != nil {
		return nil, err
	}
	r.Warnings = uint16(min(len(res.Warnings), 0xffff))
	return r, nil
}

func (ss *session) setWarnings(n int) {
	if ss.conn != nil {
		ss.conn.SetWarnings(uint16(min(n, 0xffff)))
	}
}

// setRunning records the statement the session runs ("" when idle) in
// the process table, its secrets masked (redact.Statement): the table is
// what SHOW PROCESSLIST shows and what the node writes to the registry
// for other nodes.
func (ss *session) setRunning(query string) {
	t := ss.srv.cfg.Processes
	if t == nil || !ss.authed {
		return
	}
	query = redact.Statement(query)
	t.Update(ss.cs.ID, func(p *process.Process) {
		p.SQL, p.Idle, p.DatabaseName = query, query == "", ss.cs.Database
	})
}

// HandleFieldList implements server.Handler for COM_FIELD_LIST (the
// mysql client's table-name completion): no fields.
func (ss *session) HandleFieldList(string, string) ([]*mysql.Field, error) { return nil, nil }

var errPrepared = mysql.NewError(mysql.ER_UNSUPPORTED_PS,
	"Prepared statements are not supported: send statements as text (go-sql-driver/mysql: interpolateParams=true)")

// HandleStmtPrepare implements server.Handler: prepared statements are
// refused.
func (ss *session) HandleStmtPrepare(string) (int, int, any, error) { return 0, 0, nil, errPrepared }

// HandleStmtExecute implements server.Handler (never reached: no
// statement is prepared).
func (ss *session) HandleStmtExecute(any, string, []any) (*mysql.Result, error) {
	return nil, errPrepared
}

// HandleStmtClose implements server.Handler.
func (ss *session) HandleStmtClose(any) error { return nil }

// COM_RESET_CONNECTION, which go-mysql's server does not name.
const comResetConnection = 0x1f

// HandleOtherCommand implements server.Handler: COM_SET_OPTION and
// COM_RESET_CONNECTION are acknowledged, anything else is an unknown
// command.
func (ss *session) HandleOtherCommand(cmd byte, _ []byte) error {
	switch cmd {
	case mysql.COM_SET_OPTION, comResetConnection:
		return nil
	}
	return mysql.NewError(mysql.ER_UNKNOWN_COM_ERROR, fmt.Sprintf("Unknown command %d", cmd))
}

// isShowWarnings reports whether query is SHOW WARNINGS, which the front
// end answers from the last statement's warnings.
func isShowWarnings(query string) bool {
	f := strings.Fields(strings.TrimRight(query, "; \t\r\n"))
	return len(f) == 2 && strings.EqualFold(f[0], "SHOW") && strings.EqualFold(f[1], "WARNINGS")
}
