package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardkeeper/shardkeeper/internal/console/consoletest"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/tools/chaos/chaostest"
)

// pgDSN is a libpq connection string to the console at addr.
func pgDSN(addr, user, password, ssl string) string {
	host, port, _ := net.SplitHostPort(addr)
	s := fmt.Sprintf("host=%s port=%s user=%s dbname=sharding_db connect_timeout=10 %s", host, port, user, ssl)
	if password != "" {
		s += " password='" + password + "'"
	}
	return s
}

// upstreamComputeNodeColumns are SHOW COMPUTE NODES' columns as
// ShardingSphere 5.5.4's ShowComputeNodesExecutor names them (5.5.4
// dropped labels): the nodes write the default layout, 5.5.4's.
var upstreamComputeNodeColumns = []string{"instance_id", "instance_type", "host", "port", "status", "mode_type", "worker_id", "version", "database_name"}

// TestPostgreSQLConsole runs three serve processes with --postgresql and
// TLS, with a user in the authority rule, on real etcd and on real
// ZooKeeper, and drives them with pgx and the real psql: SCRAM over
// sslmode=verify-full, SHOW COMPUTE NODES with upstream's columns and
// all three nodes, a syntax error's SQL state and position, a wrong password refused
// (28P01), one node's SHOW PROCESSLIST listing, and its KILL ending, the
// other node's session, and a cancel request cutting a statement short.
func TestPostgreSQLConsole(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql not found: scripts/servers.sh installs Debian postgresql-client")
	}
	for _, reg := range []struct{ name, typ string }{{"etcd", "etcd"}, {"ZooKeeper", "ZooKeeper"}} {
		t.Run(reg.name, func(t *testing.T) {
			var servers string
			if reg.typ == "etcd" {
				servers = strings.Join(testenv.EtcdEndpoints(t), ",")
			} else {
				servers = strings.Join(testenv.ZooKeeperServers(t), ",")
			}
			postgreSQLConsole(t, writeConf(t, reg.typ, servers))
		})
	}
}

func postgreSQLConsole(t *testing.T, conf string) {
	f, err := os.OpenFile(filepath.Join(conf, "global.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("authority:\n  users:\n    - user: root@%\n      password: \"r00t pass\"\n      admin: true\n  privilege:\n    type: ALL_PERMITTED\n"); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	caFile, certFile, keyFile := consoletest.CertFiles(t, t.TempDir())
	var procs []*proc
	var addrs []string
	for i := 1; i <= 3; i++ {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		procs = append(procs, startServe(t, conf, fmt.Sprintf("pg-node-%d", i), 3300+i,
			"--postgresql", addr, "--tls-cert", certFile, "--tls-key", keyFile))
		addrs = append(addrs, addr)
	}
	ctx := testenv.Context(t)
	verify := "sslmode=verify-full sslrootcert=" + caFile
	c, err := pgx.Connect(ctx, pgDSN(addrs[0], "root", "r00t pass", verify+" channel_binding=require"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())

	// SHOW COMPUTE NODES: upstream's columns, all three nodes, worker ids.
	var ids []string
	testenv.Eventually(t, "SHOW COMPUTE NODES lists all three nodes", func() bool {
		rows, err := c.Query(ctx, "SHOW COMPUTE NODES")
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for _, fd := range rows.FieldDescriptions() {
			cols = append(cols, fd.Name)
		}
		if !slices.Equal(cols, upstreamComputeNodeColumns) {
			t.Fatalf("SHOW COMPUTE NODES columns %q, want upstream's %q", cols, upstreamComputeNodeColumns)
		}
		ids = ids[:0]
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			if w, ok := v[6].(int64); !ok || w < 0 {
				t.Fatalf("worker_id %#v: want an int8 of 0 or more", v[6])
			}
			ids = append(ids, fmt.Sprint(v[0]))
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		slices.Sort(ids)
		return slices.Equal(ids, []string{"pg-node-1", "pg-node-2", "pg-node-3"})
	})

	// psql on the other nodes, over TLS, with -c and -f.
	out, err := psqlRun(t, "r00t pass", pgDSN(addrs[2], "root", "", verify), "-A", "-t", "-F", ",", "-c", "SHOW COMPUTE NODES")
	if err != nil || !strings.Contains(out, "pg-node-1,") || !strings.Contains(out, "pg-node-2,") || !strings.Contains(out, "pg-node-3,") {
		t.Fatalf("psql SHOW COMPUTE NODES: %v\n%s", err, out)
	}
	file := filepath.Join(t.TempDir(), "statements.sql")
	if err := os.WriteFile(file, []byte("SHOW COMPUTE NODE INFO;\nSHOW DIST VARIABLES LIKE 'sql_show';\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = psqlRun(t, "r00t pass", pgDSN(addrs[1], "root", "", verify), "-A", "-t", "-F", ",", "-f", file)
	if err != nil || !strings.HasPrefix(out, "pg-node-2,") || !strings.Contains(out, "sql_show,false") {
		t.Fatalf("psql -f: %v\n%s", err, out)
	}

	// The interactive psql reaches its prompt and answers at it; script(1)
	// gives it a terminal.
	interactive := exec.Command("script", "-qec", "psql -X -P pager=off \""+pgDSN(addrs[1], "root", "", verify)+"\"", "/dev/null")
	interactive.Env = append(os.Environ(), "PGPASSWORD=r00t pass")
	interactive.Stdin = strings.NewReader("SHOW COMPUTE NODE INFO;\n\\q\n")
	screen, err := interactive.CombinedOutput()
	if err != nil || !strings.Contains(string(screen), "server 14.0") || !strings.Contains(string(screen), "sharding_db=#") || !strings.Contains(string(screen), " pg-node-2 ") {
		t.Fatalf("interactive psql: %v\n%s", err, screen)
	}

	// A syntax error: upstream's SQL state.
	_, err = c.Exec(ctx, "SHOW COMPUTE NODEZ")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42000" || pe.Position != 14 {
		t.Fatalf("a syntax error: %#v, want SQL state 42000 at position 14", err)
	}
	out, err = psqlRun(t, "r00t pass", pgDSN(addrs[1], "root", "", verify), "-c", "SHOW COMPUTE NODEZ")
	if err == nil || !strings.Contains(out, "ERROR:  You have an error in your SQL syntax") || !strings.Contains(out, "LINE 1: SHOW COMPUTE NODEZ\n                     ^") {
		t.Fatalf("psql with a syntax error: %v\n%s", err, out)
	}

	// A wrong password.
	_, err = pgx.Connect(ctx, pgDSN(addrs[1], "root", "wrong", verify))
	if !errors.As(err, &pe) || pe.Code != "28P01" {
		t.Fatalf("a wrong password: %v, want 28P01", err)
	}
	out, err = psqlRun(t, "wrong", pgDSN(addrs[0], "root", "", verify), "-c", "SHOW COMPUTE NODES")
	if err == nil || !strings.Contains(out, `password authentication failed for user "root"`) {
		t.Fatalf("psql with a wrong password: %v\n%s", err, out)
	}

	// The other node lists this session and kills it.
	var connID int64
	if err := c.QueryRow(ctx, "SELECT CONNECTION_ID()").Scan(&connID); err != nil {
		t.Fatal(err)
	}
	if uint32(connID) != c.PgConn().PID() {
		t.Fatalf("CONNECTION_ID() %d, BackendKeyData process id %d: want the same", connID, c.PgConn().PID())
	}
	c2, err := pgx.Connect(ctx, pgDSN(addrs[1], "root", "r00t pass", verify))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(context.Background())
	rows, err := c2.Query(ctx, "SHOW PROCESSLIST")
	if err != nil {
		t.Fatal(err)
	}
	var id string
	var listed []string
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, fmt.Sprint(v))
		if pid := fmt.Sprint(v[0]); len(pid) == 32 && pid[:8] == fmt.Sprintf("%08x", connID) && v[1] == "root" && v[2] == "127.0.0.1" && v[3] == "sharding_db" {
			id = pid
		}
	}
	if rows.Err() != nil || id == "" {
		t.Fatalf("SHOW PROCESSLIST on pg-node-2 does not list pg-node-1's session %08x... as root@127.0.0.1 on sharding_db (%v):\n%s", connID, rows.Err(), strings.Join(listed, "\n"))
	}
	if _, err := c2.Exec(ctx, "KILL '"+id+"'"); err != nil {
		t.Fatalf("KILL %s: %v", id, err)
	}
	testenv.Eventually(t, "the killed session is closed", func() bool {
		_, err := c.Exec(ctx, "SHOW COMPUTE NODE INFO")
		return err != nil
	})

	// Cancel: with pg-node-2 paused (still online), SET DIST VARIABLE on
	// pg-node-1 waits for it up to its timeout (3 s); pgx's cancel request
	// when its context ends cuts the wait short.
	c3, err := pgx.Connect(ctx, pgDSN(addrs[0], "root", "r00t pass", verify))
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close(context.Background())
	// Both nodes acknowledge props versions (a node starts doing so
	// shortly after it starts): a SET answers without warnings.
	testenv.Eventually(t, "SET DIST VARIABLE without warnings", func() bool {
		out, err := psqlRun(t, "r00t pass", pgDSN(addrs[0], "root", "", verify), "-c", "SET DIST VARIABLE sql_show = false")
		if err != nil {
			t.Fatalf("SET DIST VARIABLE: %v\n%s", err, out)
		}
		return !strings.Contains(out, "WARNING")
	})
	procs[1].pause(t)
	defer procs[1].resume(t)
	done := make(chan struct{})
	go func() {
		// Cancel requests until the statement ends: one that arrives
		// before it runs cancels nothing.
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				_ = c3.PgConn().CancelRequest(ctx)
			}
		}
	}()
	start := time.Now()
	_, err = c3.Exec(ctx, "SET DIST VARIABLE sql_show = true")
	close(done)
	if !errors.As(err, &pe) || pe.Code != "57014" || time.Since(start) > 2500*time.Millisecond {
		t.Fatalf("SET DIST VARIABLE with a paused node, cancelled: %v after %v, want 57014 well before its 3 s wait ends", err, time.Since(start))
	}
	t.Logf("cancelled SET DIST VARIABLE returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

// psqlRun runs psql -X -v ON_ERROR_STOP=1 with args and the password.
func psqlRun(t *testing.T, password string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "psql", append([]string{"-X", "-v", "ON_ERROR_STOP=1"}, args...)...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestPostgreSQLLoopbackOnlyWithoutUsers runs a node with no authority
// users and its PostgreSQL console on every address: psql on loopback
// gets in under any name without a password, psql from another network
// namespace gets FATAL 28000 saying why, and the node logs the refusal.
func TestPostgreSQLLoopbackOnlyWithoutUsers(t *testing.T) {
	chaostest.RequireTools(t, "psql")
	netw, hosts := chaostest.Network(t, "client")
	conf := writeConf(t, "etcd", strings.Join(testenv.EtcdEndpoints(t), ","))
	port := freePort(t)
	p := startServe(t, conf, "pg-nousers", 3301, "--postgresql", fmt.Sprintf("0.0.0.0:%d", port))
	testenv.Eventually(t, "the start log to say the console is loopback only", func() bool {
		return strings.Contains(p.stderr.String(), "postgresql console: no users in the authority rule: only loopback clients are accepted")
	})
	out, err := psqlRun(t, "", pgDSN(fmt.Sprintf("127.0.0.1:%d", port), "anyone", "", "sslmode=disable"), "-A", "-t", "-c", "SHOW COMPUTE NODE INFO")
	if err != nil || !strings.Contains("\n"+out, "\npg-nousers|") || !strings.Contains(out, "WARNING:  no users are configured on this node") {
		t.Fatalf("psql on loopback: %v\n%s", err, out)
	}
	client := hosts[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := client.Command(ctx, "psql", "-X", pgDSN(fmt.Sprintf("%s:%d", netw.Gateway(), port), "anyone", "", "sslmode=prefer"), "-c", "SHOW COMPUTE NODE INFO")
	b, err := cmd.CombinedOutput()
	want := fmt.Sprintf("FATAL:  no users are configured on this node (global.yaml's authority rule), so it accepts only loopback clients, not %s", client.Addr)
	if err == nil || !strings.Contains(string(b), want) {
		t.Fatalf("psql from %s: %v\n%s\nwant %q", client.Addr, err, b, want)
	}
	testenv.Eventually(t, "the refusal in the log", func() bool {
		return strings.Contains(p.stderr.String(), "connection refused: no users are configured") && strings.Contains(p.stderr.String(), client.Addr.String())
	})
}
