package daemon

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/mysqlfront"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

func mysqlDB(t *testing.T, addr, user, password, db string) *sql.DB {
	t.Helper()
	c := gomysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName, c.Timeout = user, password, "tcp", addr, db, 10*time.Second
	sqlDB, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	return sqlDB
}

func mysqlErrNumber(err error) uint16 {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// TestMySQLConsoleOverTheEngine starts a daemon on real etcd with its MySQL
// console and users in the conf, and talks to the console engine through
// it with go-sql-driver: what a driver reads on connect, the node's own
// row with the published (bound) port, an unknown database refused at
// login, the session in the process table, a password changed in the
// registry applying at the next login, and Close ending the sessions.
func TestMySQLConsoleOverTheEngine(t *testing.T) {
	ctx := testenv.Context(t)
	conf, err := config.ParseGlobal("global.yaml", []byte("authority:\n  users:\n    - user: root@%\n      password: first\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(ctx, Config{
		Repository: etcdRepository(t), Conf: conf,
		Node:  cluster.Config{InstanceID: "daemon-mysql", Reservation: time.Second, Port: 3307},
		MySQL: &MySQLConfig{Addr: "127.0.0.1:0", PublishPort: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = d.Close(context.Background())
		}
	})
	c, err := mysqlDB(t, d.MySQLAddr, "root", "first", "").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var version, comment string
	if err := c.QueryRowContext(ctx, "SELECT @@version, @@version_comment").Scan(&version, &comment); err != nil {
		t.Fatal(err)
	}
	if version != mysqlfront.ServerVersion || comment != console.VersionComment {
		t.Errorf("@@version, @@version_comment = %q, %q; want %q, %q", version, comment, mysqlfront.ServerVersion, console.VersionComment)
	}
	// The columns by name: the layout decides whether labels is one of them.
	info := rowByName(ctx, t, c, "SHOW COMPUTE NODE INFO")
	id, host, port, worker := info["instance_id"], info["host"], info["port"], info["worker_id"]
	_, bound, _ := net.SplitHostPort(d.MySQLAddr)
	if id != "daemon-mysql" || port != bound || worker != strconv.Itoa(d.Node.WorkerID()) {
		t.Errorf("SHOW COMPUTE NODE INFO = %s %s port %s worker %s; want daemon-mysql port %s worker %d", id, host, port, worker, bound, d.Node.WorkerID())
	}
	if ps := d.Processes.List(); len(ps) != 1 || ps[0].Username != "root" || ps[0].Hostname != "127.0.0.1" {
		t.Errorf("processes = %+v, want the root session", ps)
	}
	if err := mysqlDB(t, d.MySQLAddr, "root", "first", "nope").PingContext(ctx); mysqlErrNumber(err) != 1049 {
		t.Errorf("login into an unknown database: %v, want 1049", err)
	}

	// A password changed in the registry applies at the next login.
	if err := metadatatest.AlterGlobalRule(ctx, d.Repo, config.Rule{Type: "authority", Content: map[string]any{
		"users": []any{map[string]any{"user": "root@%", "password": "second"}},
	}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the new password to apply", func() bool {
		return mysqlDB(t, d.MySQLAddr, "root", "second", "").PingContext(ctx) == nil
	})
	if err := mysqlDB(t, d.MySQLAddr, "root", "first", "").PingContext(ctx); mysqlErrNumber(err) != 1045 {
		t.Errorf("the old password: %v, want 1045", err)
	}

	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed = true
	testenv.TCPRefused(t, d.MySQLAddr)
	if err := c.PingContext(ctx); err == nil {
		t.Error("a session survived Close")
	}
}

// TestMySQLFallbackPublishesTheBoundPort: when the default console address
// is taken, the daemon binds the fallback and publishes that port.
func TestMySQLFallbackPublishesTheBoundPort(t *testing.T) {
	ctx := testenv.Context(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	d, err := Start(ctx, Config{
		Repository: etcdRepository(t),
		Node:       cluster.Config{InstanceID: "daemon-mysql-fallback", Reservation: time.Second},
		MySQL:      &MySQLConfig{Addr: busy.Addr().String(), FallbackAddr: "127.0.0.1:0", PublishPort: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	if d.MySQLAddr == busy.Addr().String() {
		t.Fatalf("bound the busy address %s", d.MySQLAddr)
	}
	_, bound, _ := net.SplitHostPort(d.MySQLAddr)
	if got := strconv.Itoa(d.nodeConfig.Port); got != bound {
		t.Errorf("published port %s, want the bound %s", got, bound)
	}
	if err := mysqlDB(t, d.MySQLAddr, "anyone", "", "").PingContext(ctx); err != nil {
		t.Errorf("the fallback console: %v", err)
	}
}

// TestHostileCloseWithAStuckSession: a console session stuck in I/O (a
// REGISTER STORAGE UNIT whose server accepts the connection and never
// answers) and a Close whose ctx has almost nothing left still end with the
// final fence, the offline node gone and the session closed: draining has
// its own bound and leaving the registry its own deadline (SIGTERM with one
// stuck session took 15.1 s and left the online node until its TTL).
func TestHostileCloseWithAStuckSession(t *testing.T) {
	ctx := testenv.Context(t)
	repo := etcdRepository(t)
	d, err := Start(ctx, Config{
		Repository: repo,
		Node:       cluster.Config{InstanceID: "daemon-stuck", Reservation: time.Second},
		MySQL:      &MySQLConfig{Addr: "127.0.0.1:0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := metadatatest.CreateDatabase(ctx, d.Repo, paths.Layout553, config.Database{Name: "stuck_db"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "stuck_db in the node's metadata", func() bool {
		_, ok := d.Metadata.Current().Databases["stuck_db"]
		return ok
	})
	// A database server that accepts and never sends its greeting.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	_, port, _ := net.SplitHostPort(silent.Addr().String())
	c, err := mysqlDB(t, d.MySQLAddr, "root", "", "stuck_db").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		_, _ = c.ExecContext(ctx, "REGISTER STORAGE UNIT ds_silent (URL='jdbc:mysql://127.0.0.1:"+port+"/test', USER='root', PASSWORD='')")
	}()
	testenv.Eventually(t, "the import to run", func() bool {
		for _, p := range d.Processes.List() {
			if !p.Idle {
				return true
			}
		}
		return false
	})
	closeCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := d.Close(closeCtx); err != nil {
		t.Fatalf("Close with a stuck session: %v", err)
	}
	if took := time.Since(start); took > MaxCloseTime {
		t.Errorf("Close took %v, more than MaxCloseTime %v", took, MaxCloseTime)
	}
	r, err := connect.Open(ctx, repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	online, _ := paths.Online(paths.Proxy, "daemon-stuck")
	if kv, err := r.Get(ctx, online); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("online node after Close: %q, %v; want it gone", kv.Value, err)
	}
}

// rowByName runs query on c and returns its one row's values by column
// name.
func rowByName(ctx context.Context, t *testing.T, c *sql.Conn, query string) map[string]string {
	t.Helper()
	rows, err := c.QueryContext(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatalf("%s: no row (%v)", query, rows.Err())
	}
	values := make([]sql.NullString, len(cols))
	dest := make([]any, len(cols))
	for i := range values {
		dest[i] = &values[i]
	}
	if err := rows.Scan(dest...); err != nil {
		t.Fatal(err)
	}
	row := map[string]string{}
	for i, col := range cols {
		row[col] = values[i].String
	}
	return row
}
