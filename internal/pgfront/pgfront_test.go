package pgfront_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/connserver"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/console/consoletest"
	"github.com/shardkeeper/shardkeeper/internal/pgfront"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// testExec answers a few statements the way the console engine shapes
// its results, so that these tests look at the protocol alone.
type testExec struct {
	counts   atomic.Int64
	sleeping chan struct{} // receives when SLEEP starts
	stopped  chan error    // receives SLEEP's ctx error when it ends
	unstick  chan struct{} // ends STUCK statements when closed
}

func newTestExec() *testExec {
	return &testExec{sleeping: make(chan struct{}, 8), stopped: make(chan error, 8), unstick: make(chan struct{})}
}

func str(s string) *string { return &s }

func (e *testExec) Execute(ctx context.Context, s *console.Session, q string) (*console.Result, error) {
	if i := strings.Index(q, " /*"); i >= 0 {
		q = q[:i] // padding (TestHostilePostgreSQLStatementLimitAndBudget)
	}
	switch strings.ToUpper(q) {
	case "SHOW THINGS":
		return &console.Result{
			Columns: []console.Column{{Name: "name", Type: console.Text}, {Name: "n", Type: console.Int64}},
			Rows:    [][]*string{{str("a;b"), str("-7")}, {str("c"), nil}},
		}, nil
	case "SHOW SESSION":
		return &console.Result{
			Columns: []console.Column{{Name: "user"}, {Name: "host"}, {Name: "db"}, {Name: "protocol"}, {Name: "id"}},
			Rows:    [][]*string{{str(s.User), str(s.Host), str(s.Database), str(s.Protocol), str(s.ID)}},
		}, nil
	case "COUNT":
		n := e.counts.Add(1)
		return &console.Result{Columns: []console.Column{{Name: "runs", Type: console.Int64}}, Rows: [][]*string{{str(fmt.Sprint(n))}}}, nil
	case "WARN":
		return &console.Result{Affected: 2, Warnings: []string{"node n3 did not answer within 3s"}}, nil
	case "STUCK": // I/O that ignores ctx, as a read of a FIFO
		e.sleeping <- struct{}{}
		<-e.unstick
		return &console.Result{}, nil
	case "SLEEP":
		e.sleeping <- struct{}{}
		<-ctx.Done()
		e.stopped <- ctx.Err()
		return nil, ctx.Err()
	}
	return nil, &sqlerr.Error{Code: 19000, SQLState: "42000", Message: "You have an error in your SQL syntax: " + q, Position: 6}
}

// server runs a Server on a loopback port and returns its address.
func server(t *testing.T, c pgfront.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, c, ln)
}

func serveOn(t *testing.T, c pgfront.Config, ln net.Listener) string {
	t.Helper()
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(&testWriter{t: t}, nil))
	}
	s, err := pgfront.New(c)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
		if err := <-done; !errors.Is(err, pgfront.ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ln.Addr().String()
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

const rootUsers = `
authority:
  users:
    - user: root@%
      password: "r00t pass"
`

func dsn(addr, user, password, extra string) string {
	host, port, _ := net.SplitHostPort(addr)
	s := fmt.Sprintf("host=%s port=%s user=%s dbname=sharding_db sslmode=disable connect_timeout=10", host, port, user)
	if password != "" {
		s += " password='" + password + "'"
	}
	if extra != "" {
		s += " " + extra
	}
	return s
}

func connect(t *testing.T, conn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(testenv.Context(t), conn)
	if err != nil {
		t.Fatalf("connect %q: %v", conn, err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// TestPgx: pgx connects with SCRAM-SHA-256 and runs statements over the
// extended protocol (its default, which prepares and describes first)
// and the simple protocol: int8 and text columns, NULL, notices, command
// tags, and errors with their SQL state and position.
func TestPgx(t *testing.T) {
	e := newTestExec()
	procs := process.NewTable()
	addr := server(t, pgfront.Config{Executor: e, Users: consoletest.Users(t, rootUsers), Processes: procs})
	ctx := testenv.Context(t)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg, err := pgx.ParseConfig(dsn(addr, "root", "r00t pass", ""))
			if err != nil {
				t.Fatal(err)
			}
			cfg.DefaultQueryExecMode = mode
			var notices []string
			cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Severity+" "+n.Message) }
			c, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			for range 2 { // a second time from pgx's statement cache
				rows, err := c.Query(ctx, "SHOW THINGS")
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for rows.Next() {
					var name string
					var n *int64
					if err := rows.Scan(&name, &n); err != nil {
						t.Fatal(err)
					}
					if n == nil {
						got = append(got, name+"=NULL")
					} else {
						got = append(got, fmt.Sprintf("%s=%d", name, *n))
					}
				}
				if rows.Err() != nil {
					t.Fatal(rows.Err())
				}
				if strings.Join(got, ",") != "a;b=-7,c=NULL" {
					t.Fatalf("SHOW THINGS: %v", got)
				}
				if fd := rows.FieldDescriptions(); len(fd) != 2 || fd[0].DataTypeOID != 25 || fd[1].DataTypeOID != 20 {
					t.Fatalf("field descriptions %+v: want text and int8", fd)
				}
			}
			before := e.counts.Load()
			for i := int64(1); i <= 3; i++ {
				var runs int64
				if err := c.QueryRow(ctx, "COUNT").Scan(&runs); err != nil {
					t.Fatal(err)
				}
				if runs != before+i {
					t.Fatalf("COUNT #%d ran the statement %d times: want once per query", i, runs-before-i+1)
				}
			}
			tag, err := c.Exec(ctx, "WARN")
			if err != nil {
				t.Fatal(err)
			}
			if tag.String() != "WARN 2" || tag.RowsAffected() != 2 {
				t.Fatalf("tag %q", tag)
			}
			if len(notices) != 1 || notices[0] != "WARNING node n3 did not answer within 3s" {
				t.Fatalf("notices %q", notices)
			}
			_, err = c.Exec(ctx, "SHOW NOTHING")
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "42000" || pe.Position != 6 || !strings.Contains(pe.Message, "SHOW NOTHING") {
				t.Fatalf("SHOW NOTHING: %#v, want SQL state 42000 at position 6", err)
			}
			var user, host, db, protocol, id string
			if err := c.QueryRow(ctx, "SHOW SESSION").Scan(&user, &host, &db, &protocol, &id); err != nil {
				t.Fatal(err)
			}
			if user != "root" || host != "127.0.0.1" || db != "sharding_db" || protocol != "PostgreSQL" || len(id) != 32 {
				t.Fatalf("session %q %q %q %q %q", user, host, db, protocol, id)
			}
			if pid := fmt.Sprintf("%08x", c.PgConn().PID()); pid != id[:8] {
				t.Fatalf("BackendKeyData process id %s: want the session id's first 8 hex digits (%s)", pid, id)
			}
			var listed bool
			for _, p := range procs.List() {
				if p.ID == id {
					listed = p.Username == "root" && p.Hostname == "127.0.0.1" && p.DatabaseName == "sharding_db" && p.Idle && p.SQL == "SHOW SESSION"
				}
			}
			if !listed {
				t.Fatalf("session %s is not in the process table as root@127.0.0.1 idle after SHOW SESSION: %+v", id, procs.List())
			}
			if v := c.PgConn().ParameterStatus("server_version"); v != pgfront.ServerVersion {
				t.Fatalf("server_version %q", v)
			}
		})
	}
}

// psql runs the real psql client with args and returns its output.
func psql(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql not found: scripts/servers.sh installs Debian postgresql-client")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-X", "-v", "ON_ERROR_STOP=1"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestPsql: the real psql, with -c and -f, over SCRAM: result tables, a
// statement list split at ';' outside quotes, notices, a syntax error with
// its position, and a wrong password.
func TestPsql(t *testing.T) {
	addr := server(t, pgfront.Config{Executor: newTestExec(), Users: consoletest.Users(t, rootUsers)})
	pass := []string{"PGPASSWORD=r00t pass"}
	out, err := psql(t, pass, dsn(addr, "root", "", ""), "-c", "SHOW THINGS")
	if err != nil {
		t.Fatalf("psql -c: %v\n%s", err, out)
	}
	for _, want := range []string{" name | n ", " a;b  | -7", " c    |   ", "(2 rows)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("psql -c SHOW THINGS: no %q in\n%s", want, out)
		}
	}
	file := filepath.Join(t.TempDir(), "statements.sql")
	if err := os.WriteFile(file, []byte("-- two statements; then a warning\nSHOW THINGS; count;\nWARN;\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = psql(t, pass, dsn(addr, "root", "", ""), "-A", "-t", "-f", file)
	if err != nil {
		t.Fatalf("psql -f: %v\n%s", err, out)
	}
	if want := "a;b|-7\nc|\n1\npsql:" + file + ":3: WARNING:  node n3 did not answer within 3s\nWARN 2\n"; out != want {
		t.Fatalf("psql -f: got\n%q\nwant\n%q", out, want)
	}
	out, err = psql(t, pass, dsn(addr, "root", "", ""), "-c", "SHOW  NODES")
	if err == nil || !strings.Contains(out, "ERROR:  You have an error in your SQL syntax: SHOW  NODES") || !strings.Contains(out, "LINE 1: SHOW  NODES\n             ^") {
		t.Fatalf("psql with a syntax error: %v\n%s", err, out)
	}
	// In a query of several statements, the position is in the whole text.
	out, err = psql(t, pass, dsn(addr, "root", "", ""), "-c", "SHOW THINGS;\n  SHOW  NODES")
	if err == nil || !strings.Contains(out, "LINE 2:   SHOW  NODES\n               ^") {
		t.Fatalf("psql with a syntax error in the second statement: %v\n%s", err, out)
	}
	out, err = psql(t, []string{"PGPASSWORD=wrong"}, dsn(addr, "root", "", ""), "-c", "SHOW THINGS")
	if err == nil || !strings.Contains(out, `password authentication failed for user "root"`) {
		t.Fatalf("psql with a wrong password: %v\n%s", err, out)
	}
}

// TestWrongPassword: a wrong password and an unknown user both get FATAL
// 28P01; the log names the user and client, never the password.
func TestWrongPassword(t *testing.T) {
	var log testenv.SyncBuffer
	addr := server(t, pgfront.Config{Executor: newTestExec(), Users: consoletest.Users(t, rootUsers), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	for _, user := range []string{"root", "nobody"} {
		_, err := pgx.Connect(testenv.Context(t), dsn(addr, user, "Wr0ngPassw0rd", ""))
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28P01" || pe.Severity != "FATAL" || pe.Message != fmt.Sprintf("password authentication failed for user %q", user) {
			t.Fatalf("%s with a wrong password: %v, want FATAL 28P01", user, err)
		}
	}
	logs := log.String()
	if strings.Contains(logs, "Wr0ngPassw0rd") || strings.Contains(logs, "r00t pass") {
		t.Fatalf("the log has a password:\n%s", logs)
	}
	if !strings.Contains(logs, "authentication failed") || !strings.Contains(logs, "user=nobody") || !strings.Contains(logs, "reason=\"wrong password\"") {
		t.Fatalf("the log does not tell the failed attempts:\n%s", logs)
	}
}

// TestTLS: psql and pgx with sslmode=verify-full against a test CA, with
// SCRAM-SHA-256-PLUS channel binding required; a client that asks for no
// TLS still connects on loopback.
func TestTLS(t *testing.T) {
	tc, _, caFile := consoletest.TLS(t)
	addr := server(t, pgfront.Config{Executor: newTestExec(), Users: consoletest.Users(t, rootUsers), TLS: tc})
	verify := "sslmode=verify-full sslrootcert=" + caFile + " channel_binding=require"
	conn := strings.Replace(dsn(addr, "root", "", verify), "sslmode=disable ", "", 1)
	out, err := psql(t, []string{"PGPASSWORD=r00t pass"}, conn, "-A", "-t", "-c", "SHOW THINGS")
	if err != nil || out != "a;b|-7\nc|\n" {
		t.Fatalf("psql over TLS: %v\n%s", err, out)
	}
	c := connect(t, strings.Replace(dsn(addr, "root", "r00t pass", verify), "sslmode=disable ", "", 1))
	if _, ok := c.PgConn().Conn().(*tls.Conn); !ok {
		t.Fatal("pgx is not on TLS")
	}
	var n int64
	if err := c.QueryRow(testenv.Context(t), "COUNT").Scan(&n); err != nil {
		t.Fatal(err)
	}
	plain := connect(t, dsn(addr, "root", "r00t pass", ""))
	if _, ok := plain.PgConn().Conn().(*tls.Conn); ok {
		t.Fatal("sslmode=disable gave a TLS connection")
	}
	// A client that does not trust the CA does not get in.
	_, err = pgx.Connect(testenv.Context(t), strings.Replace(dsn(addr, "root", "r00t pass", "sslmode=verify-full"), "sslmode=disable ", "", 1))
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("verify-full without the CA: %v", err)
	}
}

// remoteAs is a listener whose connections report client as their
// remote address, for a client from another host on a machine without
// another interface.
type remoteAs struct {
	net.Listener
	client netip.Addr
}

func (l remoteAs) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return remoteConn{c, net.TCPAddrFromAddrPort(netip.AddrPortFrom(l.client, 5555))}, nil
}

type remoteConn struct {
	net.Conn
	addr net.Addr
}

func (c remoteConn) RemoteAddr() net.Addr { return c.addr }

// otherHost returns an address of this machine that is not loopback and
// a listener on it, or a loopback listener whose clients appear to come
// from 192.0.2.10 when the machine has none.
func otherHost(t *testing.T) (net.Listener, string) {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			if ln, err := net.Listen("tcp", net.JoinHostPort(n.IP.String(), "0")); err == nil {
				return ln, n.IP.String()
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return remoteAs{ln, netip.MustParseAddr("192.0.2.10")}, "192.0.2.10"
}

// TestOtherHosts: with no users, a client from another host is refused
// with FATAL 28000 and loopback clients get in under any name without a
// password; with users, a client from another host needs TLS.
func TestOtherHosts(t *testing.T) {
	ln, host := otherHost(t)
	var log testenv.SyncBuffer
	addr := serveOn(t, pgfront.Config{Executor: newTestExec(), Logger: slog.New(slog.NewTextHandler(&log, nil))}, ln)
	_, err := pgx.Connect(testenv.Context(t), dsn(addr, "root", "", ""))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "28000" || !strings.Contains(pe.Message, "only loopback clients") || !strings.Contains(pe.Message, host) {
		t.Fatalf("a client from %s with no users configured: %v, want FATAL 28000", host, err)
	}
	if !strings.Contains(log.String(), "no users are configured") {
		t.Fatalf("the refusal is not logged:\n%s", log.String())
	}
	loop := server(t, pgfront.Config{Executor: newTestExec()})
	c := connect(t, dsn(loop, "anyone", "", ""))
	var user string
	if err := c.QueryRow(testenv.Context(t), "SHOW SESSION").Scan(&user, new(string), new(string), new(string), new(string)); err != nil || user != "anyone" {
		t.Fatalf("loopback client with no users: %q %v", user, err)
	}

	ln2, _ := otherHost(t)
	tc, _, _ := consoletest.TLS(t)
	addr2 := serveOn(t, pgfront.Config{Executor: newTestExec(), Users: consoletest.Users(t, rootUsers), TLS: tc}, ln2)
	_, err = pgx.Connect(testenv.Context(t), dsn(addr2, "root", "r00t pass", ""))
	if !errors.As(err, &pe) || pe.Code != "28000" || !strings.Contains(pe.Message, "need TLS") {
		t.Fatalf("a client from another host without TLS: %v, want FATAL 28000", err)
	}
	c2 := connect(t, strings.Replace(dsn(addr2, "root", "r00t pass", "sslmode=require"), "sslmode=disable ", "", 1))
	if err := c2.Ping(testenv.Context(t)); err != nil {
		t.Fatal(err)
	}
}

// TestLoopbackOnlyPasswordIgnored: with no users configured, the node
// asks a loopback client for no password, so one the client has (pgx,
// psql's PGPASSWORD) is never sent and the login succeeds, as on the
// MySQL console. A configured user with an empty password and a client
// that sends another is a wrong password: 28P01.
func TestLoopbackOnlyPasswordIgnored(t *testing.T) {
	addr := server(t, pgfront.Config{Executor: newTestExec()})
	c := connect(t, dsn(addr, "anyone", "any-pw", ""))
	var user string
	if err := c.QueryRow(testenv.Context(t), "SHOW SESSION").Scan(&user, new(string), new(string), new(string), new(string)); err != nil || user != "anyone" {
		t.Fatalf("loopback client with a password and no users: %q %v", user, err)
	}
	out, err := psql(t, []string{"PGPASSWORD=secret"}, dsn(addr, "anyone", "", ""), "-c", "SHOW THINGS")
	if err != nil || !strings.Contains(out, "(2 rows)") {
		t.Fatalf("psql with PGPASSWORD and no users: %v\n%s", err, out)
	}
	// Told once, at login, that nothing checks a password.
	if n := strings.Count(out, "WARNING:  "+pgfront.NoUsersNotice); n != 1 {
		t.Fatalf("psql with PGPASSWORD and no users: the no-users notice %d times:\n%s", n, out)
	}

	nopw := server(t, pgfront.Config{Executor: newTestExec(), Users: consoletest.Users(t, "authority:\n  users:\n    - user: nopw@%\n")})
	connect(t, dsn(nopw, "nopw", "", ""))
	_, err = pgx.Connect(testenv.Context(t), dsn(nopw, "nopw", "a-password", ""))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "28P01" {
		t.Fatalf("a user without a password, logging in with one: %v, want FATAL 28P01", err)
	}
}

// TestCancel: pgx cancels a running statement when its context ends
// (CancelRequest on a second connection): the statement's context is
// cancelled, the client gets 57014 and the session goes on. A cancel
// request with the wrong key cancels nothing.
func TestCancel(t *testing.T) {
	e := newTestExec()
	addr := server(t, pgfront.Config{Executor: e})
	c := connect(t, dsn(addr, "root", "", ""))
	ctx, cancel := context.WithCancel(testenv.Context(t))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, "SLEEP")
		errc <- err
	}()
	<-e.sleeping
	// A cancel request with another key: the statement keeps running.
	wrongCancel(t, addr, c.PgConn().PID())
	select {
	case err := <-e.stopped:
		t.Fatalf("a cancel request with a wrong key ended the statement: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	if err := <-e.stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("the statement's context ended with %v", err)
	}
	err := <-errc
	if err == nil {
		t.Fatal("a cancelled statement succeeded")
	}
	// pgx closes a connection whose context ended; a fresh one serves.
	c2 := connect(t, dsn(addr, "root", "", ""))
	go func() {
		<-e.sleeping
		if err := c2.PgConn().CancelRequest(testenv.Context(t)); err != nil {
			t.Error(err)
		}
	}()
	_, err = c2.Exec(testenv.Context(t), "SLEEP")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("a cancelled statement: %v, want 57014", err)
	}
	<-e.stopped
	var n int64
	if err := c2.QueryRow(testenv.Context(t), "COUNT").Scan(&n); err != nil {
		t.Fatalf("the session after a cancel: %v", err)
	}
}

// wrongCancel sends a CancelRequest for pid with a key that is not its.
func wrongCancel(t *testing.T, addr string, pid uint32) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msg := []byte{0, 0, 0, 16, 0x04, 0xd2, 0x16, 0x2e, byte(pid >> 24), byte(pid >> 16), byte(pid >> 8), byte(pid), 1, 2, 3, 4}
	if _, err := nc.Write(msg); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := nc.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("a cancel request got an answer: %d bytes, %v", n, err)
	}
}

// TestKill: killing a session's process closes its connection and ends
// its running statement; the process leaves the table.
func TestKill(t *testing.T) {
	e := newTestExec()
	procs := process.NewTable()
	addr := server(t, pgfront.Config{Executor: e, Processes: procs})
	c := connect(t, dsn(addr, "root", "", ""))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Exec(testenv.Context(t), "SLEEP")
		errc <- err
	}()
	<-e.sleeping
	list := procs.List()
	if len(list) != 1 || list[0].SQL != "SLEEP" || list[0].Idle {
		t.Fatalf("processes while SLEEP runs: %+v", list)
	}
	if !procs.Kill(list[0].ID) {
		t.Fatal("Kill did not find the session")
	}
	<-e.stopped
	if err := <-errc; err == nil {
		t.Fatal("the statement of a killed session succeeded")
	}
	testenv.Eventually(t, "the killed session leaves the process table", func() bool { return len(procs.List()) == 0 })
}

// TestKillQuery: KILL QUERY of the session's process id (its
// BackendKeyData PID, in decimal) cancels the running statement with 57014
// and the session goes on.
func TestKillQuery(t *testing.T) {
	e := newTestExec()
	procs := process.NewTable()
	addr := server(t, pgfront.Config{Executor: e, Processes: procs})
	c := connect(t, dsn(addr, "root", "", ""))
	go func() {
		<-e.sleeping
		if !procs.Cancel(fmt.Sprint(c.PgConn().PID())) {
			t.Error("Cancel did not find the session by its PID")
		}
	}()
	_, err := c.Exec(testenv.Context(t), "SLEEP")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("SLEEP after KILL QUERY: %v, want 57014", err)
	}
	<-e.stopped
	if _, err := c.Exec(testenv.Context(t), "COUNT"); err != nil {
		t.Fatalf("the session after KILL QUERY: %v", err)
	}
}

// TestMaxConns: one connection over MaxConnections gets FATAL 53300, a cancel
// request still gets through; after the first closes, a new one is
// served.
func TestMaxConns(t *testing.T) {
	e := newTestExec()
	addr := server(t, pgfront.Config{Executor: e, MaxConnections: 1})
	c := connect(t, dsn(addr, "root", "", ""))
	_, err := pgx.Connect(testenv.Context(t), dsn(addr, "root", "", ""))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" {
		t.Fatalf("a second connection with MaxConnections 1: %v, want 53300", err)
	}
	// A cancel request gets through a full node.
	go func() {
		<-e.sleeping
		if err := c.PgConn().CancelRequest(testenv.Context(t)); err != nil {
			t.Error(err)
		}
	}()
	_, err = c.Exec(testenv.Context(t), "SLEEP")
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("SLEEP cancelled on a full node: %v, want 57014", err)
	}
	<-e.stopped
	_ = c.Close(testenv.Context(t))
	testenv.Eventually(t, "a connection after the first closed", func() bool {
		c, err := pgx.Connect(testenv.Context(t), dsn(addr, "root", "", ""))
		if err == nil {
			_ = c.Close(context.Background())
		}
		return err == nil
	})
}

// TestIdleTimeout: a session that sends nothing for IdleTimeout is closed
// with FATAL 57P05 and leaves the process table.
func TestIdleTimeout(t *testing.T) {
	procs := process.NewTable()
	addr := server(t, pgfront.Config{Executor: newTestExec(), Processes: procs, IdleTimeout: 300 * time.Millisecond})
	c := connect(t, dsn(addr, "root", "", ""))
	if _, err := c.Exec(testenv.Context(t), "COUNT"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the idle session to close", func() bool { return len(procs.List()) == 0 })
	_, err := c.Exec(testenv.Context(t), "COUNT")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57P05" {
		t.Errorf("a statement after the idle timeout: %v, want FATAL 57P05", err)
	}
}

// TestStartupTimeout: a client that sends nothing is disconnected after
// StartupTimeout.
func TestStartupTimeout(t *testing.T) {
	addr := server(t, pgfront.Config{Executor: newTestExec(), StartupTimeout: 100 * time.Millisecond})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1)
	if _, err := nc.Read(buf); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a silent client: read %v, want the server to close the connection", err)
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" ; ;-- x\n", nil},
		{"SHOW A", []string{"SHOW A"}},
		{"SHOW A; SHOW B;", []string{"SHOW A", "SHOW B"}},
		{"SET DIST VARIABLE x = 'a;b'; SHOW B", []string{"SET DIST VARIABLE x = 'a;b'", "SHOW B"}},
		{`SET x = 'it''s;' ; SET y = 'a\';b'`, []string{`SET x = 'it''s;'`, `SET y = 'a\';b'`}},
		{"SHOW \"a;b\"; SHOW `c;d`", []string{`SHOW "a;b"`, "SHOW `c;d`"}},
		{"SHOW A /* ; */; -- ;\nSHOW B", []string{"SHOW A /* ; */", "-- ;\nSHOW B"}},
		{"SHOW 'unterminated;", []string{"SHOW 'unterminated;"}},
		{"SHOW A /* unterminated ;", []string{"SHOW A /* unterminated ;"}},
	} {
		got := pgfront.Split(tc.in)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(got) != len(tc.want) {
			t.Errorf("Split(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestPasswordMethods: a user whose authenticationMethodName names MD5 or
// PASSWORD (upstream's PostgreSQL authenticator types) logs in with that
// method, with psql and pgx; a wrong password is refused the same way.
func TestPasswordMethods(t *testing.T) {
	addr := server(t, pgfront.Config{Executor: newTestExec(), Users: consoletest.Users(t, `
authority:
  users:
    - user: m@%
      password: md5 pass
      authenticationMethodName: pg_md5
    - user: c@127.0.0.1
      password: clear pass
      authenticationMethodName: password
  authenticators:
    pg_md5:
      type: MD5
`)})
	for _, tc := range []struct{ user, password string }{{"m", "md5 pass"}, {"c", "clear pass"}} {
		c := connect(t, dsn(addr, tc.user, tc.password, ""))
		var n int64
		if err := c.QueryRow(testenv.Context(t), "COUNT").Scan(&n); err != nil {
			t.Fatal(err)
		}
		out, err := psql(t, []string{"PGPASSWORD=" + tc.password}, dsn(addr, tc.user, "", ""), "-A", "-t", "-c", "SHOW THINGS")
		if err != nil || out != "a;b|-7\nc|\n" {
			t.Fatalf("psql as %s: %v\n%s", tc.user, err, out)
		}
		_, err = pgx.Connect(testenv.Context(t), dsn(addr, tc.user, "wrong", ""))
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28P01" {
			t.Fatalf("%s with a wrong password: %v, want 28P01", tc.user, err)
		}
	}
}

// TestUsersError: when the users cannot be read, connections are refused
// with FATAL 28000 naming the problem, loopback ones included.
func TestUsersError(t *testing.T) {
	addr := server(t, pgfront.Config{Executor: newTestExec(), Users: func() (*authority.Users, error) {
		return nil, errors.New("authority: users[0]: user: must be a string name@host")
	}})
	_, err := pgx.Connect(testenv.Context(t), dsn(addr, "root", "", ""))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "28000" || !strings.Contains(pe.Message, "users[0]") {
		t.Fatalf("with unreadable users: %v, want FATAL 28000 naming the problem", err)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func listenLoopback(t testing.TB) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestHostilePostgreSQLIdleConnections: 256 TCP connections that never
// finish startup (they made every login fail with 53300) hold only the
// slots of connections in startup and are closed to make room: the real
// psql logs in while they are open, and logged-in sessions reach
// MaxConnections.
func TestHostilePostgreSQLIdleConnections(t *testing.T) {
	addr := server(t, pgfront.Config{Executor: newTestExec(), Users: consoletest.Users(t, rootUsers), Logger: discard()})
	for range pgfront.DefaultMaxConnections {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	pass := []string{"PGPASSWORD=r00t pass"}
	for i := range 3 {
		if out, err := psql(t, pass, dsn(addr, "root", "", ""), "-c", "SHOW THINGS"); err != nil || !strings.Contains(out, "(2 rows)") {
			t.Fatalf("psql login %d with %d idle connections open: %v\n%s", i+1, pgfront.DefaultMaxConnections, err, out)
		}
	}
	var held []*pgx.Conn
	defer func() {
		for _, c := range held {
			_ = c.Close(context.Background())
		}
	}()
	for i := range pgfront.DefaultMaxConnections {
		c, err := pgx.Connect(testenv.Context(t), dsn(addr, "root", "r00t pass", ""))
		if err != nil {
			t.Fatalf("session %d with idle connections open: %v", i+1, err)
		}
		held = append(held, c)
	}
}

// TestHostilePostgreSQLStatementLimitAndBudget: a message longer than the one statement
// limit (distsql.MaxStatementBytes and 4 KiB of framing) is refused from
// its header with FATAL 08P01, through the real psql; and what all
// sessions buffer at once is bounded by the shared budget: with a 1 MiB
// statement running, a second finds no room and its session ends with
// FATAL 53200, short statements still run, and room comes back when the
// statement ends.
func TestHostilePostgreSQLStatementLimitAndBudget(t *testing.T) {
	e := newTestExec()
	addr := server(t, pgfront.Config{Executor: e, Budget: connserver.NewBudget(3 << 19), Logger: discard()}) // 1.5 MiB
	big := func(stmt string, n int) string { return stmt + " /*" + strings.Repeat("x", n-len(stmt)-5) + "*/" }
	file := filepath.Join(t.TempDir(), "big.sql")
	if err := os.WriteFile(file, []byte(big("COUNT", 2<<20)+";\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := psql(t, nil, dsn(addr, "root", "", ""), "-f", file); err == nil || !strings.Contains(out, "08P01") && !strings.Contains(out, "message too large") && !strings.Contains(out, "invalid message") {
		t.Fatalf("psql with a 2 MiB statement: %v %.300s, want FATAL 08P01", err, out)
	}

	ctx := testenv.Context(t)
	sleeper := connect(t, dsn(addr, "root", "", ""))
	done := make(chan error, 1)
	go func() { _, err := sleeper.Exec(ctx, big("SLEEP", 1<<20-16)); done <- err }()
	<-e.sleeping
	second := connect(t, dsn(addr, "root", "", ""))
	_, err := second.Exec(ctx, big("COUNT", 1<<20-16))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53200" {
		t.Fatalf("a second 1 MiB statement with the budget full: %v, want FATAL 53200", err)
	}
	if _, err := connect(t, dsn(addr, "root", "", "")).Exec(ctx, "COUNT"); err != nil {
		t.Fatalf("a short statement with the budget full: %v", err)
	}
	if err := sleeper.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if _, err := connect(t, dsn(addr, "root", "", "")).Exec(ctx, big("COUNT", 1<<20-16)); err != nil {
		t.Fatalf("a 1 MiB statement once the first ended: %v", err)
	}
}

// TestHostilePostgreSQLKillEndsStuckStatement: killing a session whose statement is stuck
// in I/O that ignores its context (IMPORT from a FIFO held its session
// and slot forever) ends the session and frees its slot, and a cancel
// request answers 57014 at once; the server then closes without waiting
// for the statement.
func TestHostilePostgreSQLKillEndsStuckStatement(t *testing.T) {
	e := newTestExec()
	defer close(e.unstick)
	procs := process.NewTable()
	addr := server(t, pgfront.Config{Executor: e, Processes: procs, MaxConnections: 1})
	c := connect(t, dsn(addr, "root", "", ""))
	errc := make(chan error, 1)
	go func() { _, err := c.Exec(testenv.Context(t), "STUCK"); errc <- err }()
	<-e.sleeping
	if !procs.Kill(procs.List()[0].ID) {
		t.Fatal("Kill did not find the session")
	}
	if err := <-errc; err == nil {
		t.Fatal("the statement of a killed session succeeded")
	}
	// Its slot is freed (the only one) once the killed session has ended,
	// which the client may see a moment before the server has: a session
	// that gets in before then is refused, and the next try gets the slot.
	var c2 *pgx.Conn
	testenv.Eventually(t, "a statement in the killed session's slot", func() bool {
		c, err := pgx.Connect(testenv.Context(t), dsn(addr, "root", "", ""))
		if err != nil {
			return false
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		go func() { _, err := c.Exec(testenv.Context(t), "STUCK"); errc <- err }()
		select {
		case <-e.sleeping:
			c2 = c
			return true
		case <-errc:
			return false
		case <-time.After(testenv.Timeout):
			t.Fatal("a statement in a new session neither ran nor failed")
			return false
		}
	})
	if err := c2.PgConn().CancelRequest(testenv.Context(t)); err != nil {
		t.Fatal(err)
	}
	var pe *pgconn.PgError
	if err := <-errc; !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("a cancelled stuck statement: %v, want 57014", err)
	}
}
