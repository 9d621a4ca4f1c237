package daemon

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// TestOneNodeThreeZooKeeperConnections starts one node on real ZooKeeper
// with every part that writes to the registry running (the HTTP API, the
// MySQL and PostgreSQL consoles, the props acknowledgement, the process
// list responder), makes each of them write (LABEL, SET DIST VARIABLE
// through the console and through the HTTP API, LOCK and UNLOCK CLUSTER
// through the HTTP API, SHOW PROCESSLIST), and asks the server how many
// client connections this process holds (the four-letter word cons): the
// repository's own, the node's session and the session of the
// repository's persistent recursive watches (which all its Watches
// share), no more.
func TestOneNodeThreeZooKeeperConnections(t *testing.T) {
	ctx := testenv.Context(t)
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_daemon_")
	conf, err := config.ParseGlobal("global.yaml", []byte("authority:\n  users:\n    - user: root@%\n      password: pw\n      admin: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	const token = "sessions-token"
	d, err := Start(ctx, Config{
		// layoutVersion 5.5.3: LABEL COMPUTE NODE is refused in the
		// default, 5.5.4.
		Repository: config.Repository{Type: config.RepositoryZooKeeper, ServerLists: zs.Servers, Namespace: ns,
			TimeToLive: 10 * time.Second, ConnectTimeout: 10 * time.Second, Layout: paths.Layout553, LayoutSet: true},
		Conf:       conf,
		Node:       cluster.Config{InstanceID: "daemonsessions", Reservation: time.Second},
		HTTP:       &HTTPConfig{Addr: "127.0.0.1:0", Token: token, OpenReads: true},
		MySQL:      &MySQLConfig{Addr: "127.0.0.1:0"},
		PostgreSQL: &PostgreSQLConfig{Addr: "127.0.0.1:0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })

	my := mysqlDB(t, d.MySQLAddr, "root", "pw", "")
	for _, q := range []string{
		"LABEL COMPUTE NODE daemonsessions WITH blue",
		"SET DIST VARIABLE sql_show = true",
		"SHOW PROCESSLIST",
	} {
		if _, err := my.ExecContext(ctx, q); err != nil {
			t.Fatalf("MySQL console: %s: %v", q, err)
		}
	}
	host, port, _ := net.SplitHostPort(d.PostgreSQLAddr)
	pg, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%s user=root password=pw dbname=sessions sslmode=disable connect_timeout=10", host, port))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.Background())
	r, err := pg.Query(ctx, "SHOW COMPUTE NODES")
	if err != nil {
		t.Fatalf("PostgreSQL console: SHOW COMPUTE NODES: %v", err)
	}
	rows := 0
	for r.Next() {
		rows++
	}
	r.Close()
	if rows != 1 {
		t.Fatalf("PostgreSQL console: SHOW COMPUTE NODES gave %d rows, want 1", rows)
	}
	for _, c := range []struct{ path, body string }{
		{"/api/v1/props/sql_simple", `{"value":"true"}`},
		{"/api/v1/cluster/lock", `{"strategy":"WRITE"}`},
		{"/api/v1/cluster/unlock", `{}`},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+d.HTTPAddr+c.path, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("PUT %s: %d %s", c.path, resp.StatusCode, b)
		}
	}
	labels, _ := paths.Labels("daemonsessions")
	if kv, err := d.Repo.Get(ctx, labels); err != nil || !strings.Contains(string(kv.Value), "blue") {
		t.Fatalf("labels node after LABEL: %q, %v", kv.Value, err)
	}

	conns := zkConnections(t, zs.Servers[0])
	if len(conns) == 0 || len(conns) > 3 {
		t.Fatalf("the node holds %d ZooKeeper client connections (%v), want 1 to 3: the repository's, the node's session and the Watches' recursive watch session", len(conns), conns)
	}
	t.Logf("ZooKeeper connections of this process: %d (%v)", len(conns), conns)
}

// zkConnections asks the ZooKeeper server at addr for its client
// connections (cons) and returns those with a session whose client end is
// a socket of this process, as "port sid".
func zkConnections(t *testing.T, addr string) []string {
	t.Helper()
	mine := ownTCPPorts(t)
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "cons"); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("sid=")) {
		t.Fatalf("cons answered %q: no client connection with a session (is 4lw.commands.whitelist set?)", out)
	}
	var conns []string
	// Each line: /127.0.0.1:40312[1](queued=0,recved=5,sent=5,sid=0x1000...,...)
	for line := range strings.SplitSeq(string(out), "\n") {
		line = strings.TrimSpace(line)
		open := strings.IndexByte(line, '[')
		_, sid, ok := strings.Cut(line, "sid=")
		if open < 0 || !ok {
			continue
		}
		sid, _, _ = strings.Cut(sid, ",")
		_, port, err := net.SplitHostPort(strings.TrimPrefix(line[:open], "/"))
		if err != nil {
			continue
		}
		if p, _ := strconv.Atoi(port); mine[p] {
			conns = append(conns, port+" "+sid)
		}
	}
	return conns
}

// ownTCPPorts returns the local ports of this process's TCP sockets: the
// inodes of its open sockets (/proc/self/fd) looked up in
// /proc/self/net/tcp and tcp6.
func ownTCPPorts(t *testing.T) map[int]bool {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("list this process's sockets: %v", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	ports := map[int]bool{}
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			_, hexPort, ok := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); ok && err == nil {
				ports[int(p)] = true
			}
		}
		f.Close()
	}
	return ports
}
