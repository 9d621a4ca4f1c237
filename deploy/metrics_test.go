package deploy

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/daemon"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestMain removes the binary testenv.ShardkeeperBinary builds.
func TestMain(m *testing.M) { testenv.Main(m) }

// TestMetricNamesExistInLiveNode starts a node (the daemon, on real etcd)
// with the HTTP API, both consoles and both key ports, has it serve each
// (keys over HTTP, RESP and UDP, an HTTP error, console statements, one
// of them failing), and checks that every metric name the alerting and
// recording rules, their unit tests and the Grafana dashboard use is a
// series in its /metrics, and that `promtool check metrics` finds no
// problem in the whole exposition.
func TestMetricNamesExistInLiveNode(t *testing.T) {
	ctx := testenv.Context(t)
	repo := config.Repository{Type: config.RepositoryEtcd, ServerLists: testenv.EtcdEndpoints(t),
		Namespace: testenv.Namespace("sk_deploy_"), TimeToLive: 10 * time.Second, ConnectTimeout: 10 * time.Second}
	d, err := daemon.Start(ctx, daemon.Config{
		Repository: repo,
		Node:       cluster.Config{InstanceID: "deploy-metrics", Reservation: time.Second},
		HTTP:       &daemon.HTTPConfig{Addr: "127.0.0.1:0", OpenReads: true},
		RESP:       &daemon.RESPConfig{Addr: "127.0.0.1:0"},
		UDP:        &daemon.UDPConfig{Addr: "127.0.0.1:0"},
		MySQL:      &daemon.MySQLConfig{Addr: "127.0.0.1:0"},
		PostgreSQL: &daemon.PostgreSQLConfig{Addr: "127.0.0.1:0"},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	serveEveryPort(ctx, t, d)
	base := "http://" + d.HTTPAddr
	if code, _ := httpGet(t, base+"/api/v1/keys?count=3"); code != http.StatusOK {
		t.Fatalf("GET /api/v1/keys = %d", code)
	}
	if code, _ := httpGet(t, base+"/no-such-route"); code != http.StatusNotFound {
		t.Fatalf("GET /no-such-route = %d, want 404 (so that shardkeeper_http_errors_total has a series)", code)
	}
	_, body := httpGet(t, base+"/metrics")
	exported := exposedSeries(body)
	used := referencedMetrics(t)
	if len(used) < 20 {
		t.Fatalf("only %d metric names found in the rules and the dashboard: the name extraction is broken", len(used))
	}
	names := make([]string, 0, len(used))
	for name := range used {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !exported[name] {
			t.Errorf("%s is not in a live node's /metrics; used by:\n  %s", name, strings.Join(used[name], "\n  "))
		}
	}
	for _, name := range []string{"shardkeeper_keyport_requests_total", "shardkeeper_console_statements_total", "go_goroutines", "process_open_fds"} {
		if !exported[name] {
			t.Errorf("%s is not in a live node's /metrics", name)
		}
	}
	promtool := tool(t, "promtool", "prometheus")
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = bytes.NewReader(body)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

// serveEveryPort sends d's key ports and consoles some traffic: keys over
// RESP and UDP, a statement on each console, a statement that fails.
func serveEveryPort(ctx context.Context, t *testing.T, d *daemon.Daemon) {
	t.Helper()
	c, err := net.DialTimeout("tcp", d.RESPAddr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "INCR k\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || !strings.HasPrefix(line, ":") {
		t.Fatalf("RESP INCR: %q, %v", line, err)
	}
	u, err := net.Dial("udp", d.UDPAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	_ = u.SetDeadline(time.Now().Add(30 * time.Second))
	req := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64([]byte("SKK1"), 1), 1) // one key
	if _, err := u.Write(req); err != nil {
		t.Fatal(err)
	}
	if n, err := u.Read(make([]byte, 64)); err != nil || n != 24 {
		t.Fatalf("UDP request: %d bytes, %v", n, err)
	}
	mc := gomysql.NewConfig()
	mc.User, mc.Net, mc.Addr, mc.Timeout = "root", "tcp", d.MySQLAddr, 10*time.Second
	db, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "SHOW COMPUTE NODES"); err != nil {
		t.Fatalf("MySQL console: %v", err)
	}
	if _, err := db.ExecContext(ctx, "SHOW COMPUTE NODEZ"); err == nil {
		t.Fatal("MySQL console: a syntax error succeeded")
	}
	pg, err := pgx.Connect(ctx, "postgres://root@"+d.PostgreSQLAddr+"/sharding_db?sslmode=disable&connect_timeout=10")
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.Background())
	if _, err := pg.Exec(ctx, "SHOW DIST VARIABLES"); err != nil {
		t.Fatalf("PostgreSQL console: %v", err)
	}
}

func httpGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return r.StatusCode, b
}

// exposedSeries returns the names of the samples in a Prometheus text
// exposition (histogram samples by their _bucket, _sum and _count names).
func exposedSeries(body []byte) map[string]bool {
	names := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}
