package e2e

import (
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/console/consoletest"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/tools/chaos/chaostest"
)

// mysqlNode is a serve process with its MySQL console.
type mysqlNode struct {
	*proc
	port     int // the MySQL port, also the published port
	workerID int
}

var workerIDLine = regexp.MustCompile(`holds worker id (\d+)`)

// startMySQLNode runs serve --conf conf with its MySQL console on
// listenHost and a free port, which it also publishes, and the extra
// arguments; it waits until serve says it runs.
func startMySQLNode(t *testing.T, conf, id, listenHost string, extra ...string) *mysqlNode {
	t.Helper()
	port := freePort(t)
	p := &proc{id: id}
	args := []string{"serve", "--conf", conf, "--instance-id", id, "--port", strconv.Itoa(port),
		"--mysql", net.JoinHostPort(listenHost, strconv.Itoa(port)), "--http", "off", "--log-format", "json", "--reservation", "1500ms"}
	p.start(t, append(args, extra...), nil, "running", func() bool { return strings.Contains(p.stdout.String(), "shardkeeper: running") })
	m := workerIDLine.FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("%s: no worker id in the serve output:\n%s", id, p.stdout.String())
	}
	w, _ := strconv.Atoi(m[1])
	return &mysqlNode{proc: p, port: port, workerID: w}
}

// mariadb runs the mariadb command-line client in batch mode against
// 127.0.0.1:port and returns its output rows (the first is the header),
// its stderr and its exit error.
func mariadb(t *testing.T, cmd func(name string, args ...string) *exec.Cmd, host string, port int, user, password, statement string, extra ...string) (rows [][]string, stderr string, err error) {
	t.Helper()
	args := append([]string{"--protocol=TCP", "-h", host, "-P", strconv.Itoa(port), "-u", user, "--batch", "--connect-timeout=10"}, extra...)
	if password != "" {
		args = append(args, "-p"+password)
	}
	args = append(args, "-e", statement)
	c := cmd("mariadb", args...)
	var out, errOut strings.Builder
	c.Stdout, c.Stderr = &out, &errOut
	err = c.Run()
	for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if line != "" {
			rows = append(rows, strings.Split(line, "\t"))
		}
	}
	return rows, errOut.String(), err
}

func localCmd(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }

// column returns the values of column name in rows (header first).
func column(t *testing.T, rows [][]string, name string) []string {
	t.Helper()
	if len(rows) == 0 {
		t.Fatalf("no header row")
	}
	i := slices.Index(rows[0], name)
	if i < 0 {
		t.Fatalf("no column %s in %v", name, rows[0])
	}
	var out []string
	for _, r := range rows[1:] {
		out = append(out, r[i])
	}
	return out
}

func requireMariaDB(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("mariadb"); err != nil {
		if os.Getenv(testenv.EnvRequireServers) == "1" {
			t.Fatal("mariadb client missing: bash -c 'source scripts/servers.sh && install_servers'")
		}
		t.Skip("mariadb client missing: bash -c 'source scripts/servers.sh && install_servers'")
	}
}

const mysqlUsers = `authority:
  users:
    - user: root@%
      password: root
      admin: true
    - user: u1
      password: p1
    - user: u2
      password: p2
      authenticationMethodName: caching_sha2_password
    - user: u3
      password: p3
`

// TestMySQLConsole runs three serve processes on real etcd and on real
// ZooKeeper and drives them over the MySQL protocol with the mariadb
// command-line client and go-sql-driver/mysql, as an operator and an
// application would: the cluster's compute nodes from every node, errors
// with their codes, passwords (native and caching_sha2, wrong ones
// refused with 1045), TLS with the node's certificate, SHOW PROCESSLIST
// across the cluster and KILL of a session on another node.
func TestMySQLConsole(t *testing.T) {
	requireMariaDB(t)
	eachRegistry(t, func(t *testing.T, typ string) {
		certs := t.TempDir()
		consoletest.CertFiles(t, certs)
		nodes := startCluster(t, typ, 3, clusterOptions{prefix: "e2e-my", mysql: true, ttl: 30, global: mysqlUsers,
			extra: []string{"--tls-cert", filepath.Join(certs, "cert.pem"), "--tls-key", filepath.Join(certs, "key.pem")}}).mysql
		wantWorkers := map[string]string{}
		for _, n := range nodes {
			wantWorkers[n.id] = strconv.Itoa(n.workerID)
		}

		// SHOW COMPUTE NODES on each node, with the mariadb client.
		for _, n := range nodes {
			rows, stderr, err := mariadb(t, localCmd, "127.0.0.1", n.port, "root", "root", "SHOW COMPUTE NODES")
			if err != nil {
				t.Fatalf("%s: mariadb: %v\n%s", n.id, err, stderr)
			}
			ids, workers, ports := column(t, rows, "instance_id"), column(t, rows, "worker_id"), column(t, rows, "port")
			got := map[string]string{}
			for i := range ids {
				got[ids[i]] = workers[i]
			}
			if fmt.Sprint(got) != fmt.Sprint(wantWorkers) {
				t.Errorf("SHOW COMPUTE NODES on %s: worker ids %v, want %v", n.id, got, wantWorkers)
			}
			for i, id := range ids {
				for _, m := range nodes {
					if m.id == id && ports[i] != strconv.Itoa(m.port) {
						t.Errorf("SHOW COMPUTE NODES on %s: %s port %s, want %d", n.id, id, ports[i], m.port)
					}
				}
			}
		}

		// The interactive client reaches its prompt (it asks for
		// @@version_comment on connect) and answers at it; script(1)
		// gives it a terminal.
		interactive := exec.Command("script", "-qec", fmt.Sprintf("mariadb --protocol=TCP -h 127.0.0.1 -P %d -u root -proot", nodes[2].port), "/dev/null")
		interactive.Stdin = strings.NewReader("SHOW COMPUTE NODE INFO;\nquit\n")
		screen, err := interactive.CombinedOutput()
		if err != nil || !strings.Contains(string(screen), "Server version: 5.7.22-shardkeeper") || !strings.Contains(string(screen), "| "+nodes[2].id) {
			t.Errorf("interactive mariadb: %v\n%s", err, screen)
		}

		// Errors carry their codes, in the client and in the driver.
		_, stderr, err := mariadb(t, localCmd, "127.0.0.1", nodes[0].port, "root", "root", "SHOW COMPUTE BANANAS")
		if err == nil || !strings.Contains(stderr, "ERROR 12000 (42000)") {
			t.Errorf("syntax error: err %v, stderr %q; want ERROR 12000 (42000)", err, stderr)
		}
		_, stderr, err = mariadb(t, localCmd, "127.0.0.1", nodes[0].port, "root", "wrong", "SHOW COMPUTE NODES")
		if err == nil || !strings.Contains(stderr, "ERROR 1045 (28000): Access denied for user 'root'@'127.0.0.1'") {
			t.Errorf("wrong password: err %v, stderr %q; want ERROR 1045 (28000)", err, stderr)
		}
		testenv.Eventually(t, "the refused login in the log", func() bool {
			return strings.Contains(nodes[0].stderr.String(), "access denied")
		})
		if strings.Contains(nodes[0].stderr.String(), "wrong") {
			t.Errorf("the log has the wrong password:\n%s", nodes[0].stderr.LastLines(20))
		}
		db := openMySQL(t, nodes[0].port, "root", "root", "")
		_, err = db.ExecContext(testenv.Context(t), "DISABLE COMPUTE NODE 'e2e-my-1'")
		var me *gomysql.MySQLError
		if !errors.As(err, &me) || me.Number == 0 || !strings.Contains(me.Message, "e2e-my-1") {
			t.Errorf("DISABLE of the node itself: %v, want a MySQL error naming it", err)
		}

		// TLS: with the node's CA the client verifies the certificate;
		// with another CA it refuses, so the session really is TLS.
		rows, stderr, err := mariadb(t, localCmd, "127.0.0.1", nodes[1].port, "u2", "p2", "SHOW COMPUTE NODE INFO",
			"--ssl", "--ssl-ca="+filepath.Join(certs, "ca.pem"), "--ssl-verify-server-cert")
		if err != nil || len(rows) != 2 || column(t, rows, "instance_id")[0] != nodes[1].id {
			t.Errorf("TLS with the CA: rows %v, err %v, stderr %q", rows, err, stderr)
		}
		// Without TLS, caching_sha2_password's password goes RSA-encrypted
		// with the key the client asks the node for.
		rows, stderr, err = mariadb(t, localCmd, "127.0.0.1", nodes[1].port, "u2", "p2", "SHOW COMPUTE NODE INFO", "--skip-ssl")
		if err != nil || len(rows) != 2 {
			t.Errorf("caching_sha2 without TLS: rows %v, err %v, stderr %q", rows, err, stderr)
		}
		other := t.TempDir()
		consoletest.CertFiles(t, other)
		_, stderr, err = mariadb(t, localCmd, "127.0.0.1", nodes[1].port, "u2", "p2", "SHOW COMPUTE NODE INFO",
			"--ssl", "--ssl-ca="+filepath.Join(other, "ca.pem"), "--ssl-verify-server-cert")
		if err == nil || !strings.Contains(stderr, "ERROR 2026") {
			t.Errorf("TLS with another CA: err %v, stderr %q; want ERROR 2026 (TLS/SSL error)", err, stderr)
		}

		// One session per node, one user per node; SHOW PROCESSLIST
		// from any node lists all three.
		ctx := testenv.Context(t)
		var conns []*sql.Conn
		for i, n := range nodes {
			c, err := openMySQL(t, n.port, fmt.Sprintf("u%d", i+1), fmt.Sprintf("p%d", i+1), "").Conn(ctx)
			if err != nil {
				t.Fatalf("u%d on %s: %v", i+1, n.id, err)
			}
			t.Cleanup(func() { _ = c.Close() })
			if err := c.PingContext(ctx); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		var u3ID string
		for _, n := range nodes {
			rows, stderr, err := mariadb(t, localCmd, "127.0.0.1", n.port, "root", "root", "SHOW PROCESSLIST")
			if err != nil {
				t.Fatalf("SHOW PROCESSLIST on %s: %v\n%s", n.id, err, stderr)
			}
			users, ids := column(t, rows, "User"), column(t, rows, "Id")
			for _, u := range []string{"u1", "u2", "u3"} {
				i := slices.Index(users, u)
				if i < 0 {
					t.Errorf("SHOW PROCESSLIST on %s lacks %s's session: %v", n.id, u, rows)
					continue
				}
				if u == "u3" {
					u3ID = ids[i]
				}
			}
		}
		if u3ID == "" {
			t.FailNow()
		}

		// KILL on node 1 of u3's session on node 3.
		if _, stderr, err := mariadb(t, localCmd, "127.0.0.1", nodes[0].port, "root", "root", "KILL '"+u3ID+"'"); err != nil {
			t.Fatalf("KILL %s: %v\n%s", u3ID, err, stderr)
		}
		testenv.Eventually(t, "u3's session to end", func() bool {
			return conns[2].PingContext(ctx) != nil
		})
		rows, _, err = mariadb(t, localCmd, "127.0.0.1", nodes[1].port, "root", "root", "SHOW PROCESSLIST")
		if err != nil || slices.Contains(column(t, rows, "Id"), u3ID) || !slices.Contains(column(t, rows, "User"), "u1") {
			t.Errorf("after KILL, SHOW PROCESSLIST = %v, %v; want u3's session gone, u1's there", rows, err)
		}
		if err := conns[0].PingContext(ctx); err != nil {
			t.Errorf("u1's session ended with u3's: %v", err)
		}
	})
}

func openMySQL(t *testing.T, port int, user, password, params string) *sql.DB {
	t.Helper()
	c := gomysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.Timeout = user, password, "tcp", fmt.Sprintf("127.0.0.1:%d", port), 10*time.Second
	dsn := c.FormatDSN()
	if params != "" {
		dsn += "?" + params
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestMySQLLoopbackOnlyWithoutUsers runs a node whose cluster has no
// authority users on all addresses: a loopback client logs in without a
// password, a client in a network namespace of its own is refused with
// 1130 naming its address, and the node said at start that it accepts
// only loopback clients.
func TestMySQLLoopbackOnlyWithoutUsers(t *testing.T) {
	requireMariaDB(t)
	chaostest.RequireTools(t, "mariadb")
	netw, hosts := chaostest.Network(t, "client")
	conf := writeGlobal(t, config.RepositoryEtcd, registryServers(t, config.RepositoryEtcd), 0, "")
	n := startMySQLNode(t, conf, "e2e-my-nousers", "0.0.0.0")
	testenv.Eventually(t, "the start log to say the console is loopback only", func() bool {
		return strings.Contains(n.stderr.String(), "only loopback clients are accepted")
	})
	rows, stderr, err := mariadb(t, localCmd, "127.0.0.1", n.port, "anyone", "", "SHOW COMPUTE NODE INFO")
	if err != nil || len(rows) != 2 {
		t.Fatalf("loopback client: rows %v, err %v\n%s", rows, err, stderr)
	}
	client := hosts[0]
	inNS := func(name string, args ...string) *exec.Cmd {
		return client.Command(testenv.Context(t), name, args...)
	}
	_, stderr, err = mariadb(t, inNS, netw.Gateway().String(), n.port, "anyone", "", "SHOW COMPUTE NODE INFO")
	// The client, which tries TLS first, reports the refusal as "ERROR 2002
	// (HY000): Received error packet before completion of TLS handshake.
	// ...: 1130 - Host ...".
	want := fmt.Sprintf("1130 - Host '%s' is not allowed to connect to this shardkeeper node: no users are configured", client.Addr)
	if err == nil || !strings.Contains(stderr, want) {
		t.Errorf("client at %s: err %v, stderr %q; want %q", client.Addr, err, stderr, want)
	}
	testenv.Eventually(t, "the refusal in the log", func() bool {
		return strings.Contains(n.stderr.String(), "refusing a non-loopback connection")
	})
}
