package console_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/mysqlfront"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// benchConsole is a node on real etcd with its engine behind the MySQL
// front end on a loopback port, and a go-sql-driver pool to it.
type benchConsole struct {
	node   *cluster.Node
	engine *console.Engine
	db     *sql.DB
}

// startBenchConsole opens the node and, when peers > 0, registers that
// many more compute nodes (online, status and worker id, as a node
// writes them) in one extra registry session, then waits until the
// node's membership view has them all.
func startBenchConsole(b *testing.B, peers, conns int) *benchConsole {
	b.Helper()
	s := etcdtest.New(b)
	repo := s.Open(b, s.Namespace(b, "distsqlbench"))
	ctx := testenv.Context(b)
	node, err := cluster.Open(ctx, repo, cluster.Config{InstanceID: "bench-self", Port: 3307, Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = node.Close(context.Background()) })
	if peers > 0 {
		sess, err := repo.NewSession(ctx, registry.SessionOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = sess.Close(context.Background()) })
		for i := range peers {
			id := fmt.Sprintf("bench-peer-%03d", i)
			online, _ := paths.Online(paths.Proxy, id)
			status, _ := paths.Status(id)
			worker, _ := paths.WorkerID(id)
			for k, v := range map[string]string{
				online: fmt.Sprintf("attribute: 10.0.%d.%d@3307\ndatabaseName: \"\"\nversion: %s\n", i/250, i%250+1, cluster.Version),
				status: "OK", worker: strconv.Itoa(200 + i),
			} {
				if err := sess.PutEphemeral(ctx, k, []byte(v)); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	testenv.Eventually(b, "the node to see every peer", func() bool { return len(node.Instances()) == peers+1 })
	store, err := metadata.Bootstrap(ctx, repo, nil, nil, metadata.Options{Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = store.Run(runCtx) }()
	b.Cleanup(func() { stop(); <-done })
	engine := console.New(console.Deps{Repo: repo, Node: node, Metadata: store, Logger: quiet()})
	b.Cleanup(func() { _ = engine.Close(context.Background()) })
	front, err := mysqlfront.New(mysqlfront.Config{Executor: engine, Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = front.Serve(ln) }()
	b.Cleanup(func() { _ = front.Shutdown(context.Background()) })
	db, err := sql.Open("mysql", "root@tcp("+ln.Addr().String()+")/")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	b.Cleanup(func() { _ = db.Close() })
	if err := db.PingContext(ctx); err != nil {
		b.Fatal(err)
	}
	return &benchConsole{node: node, engine: engine, db: db}
}

// drain runs query and reads every row.
func drain(ctx context.Context, db *sql.DB, query string) (rows int, err error) {
	r, err := db.QueryContext(ctx, query)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	cols, _ := r.Columns()
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for r.Next() {
		if err := r.Scan(ptrs...); err != nil {
			return rows, err
		}
		rows++
	}
	return rows, r.Err()
}

// openLoop sends n statements at rate per second, each at its scheduled
// time whatever the others do (up to conns in flight), and returns their
// latencies measured from the scheduled time, so that a slow statement
// delays the ones behind it in the measurement too (no coordinated
// omission).
func openLoop(b *testing.B, db *sql.DB, query string, wantRows, n, rate, conns int) []time.Duration {
	b.Helper()
	ctx := testenv.Context(b)
	type job struct{ at time.Time }
	jobs := make(chan job, n)
	lat := make([]time.Duration, 0, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failure error
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				rows, err := drain(ctx, db, query)
				d := time.Since(j.at)
				mu.Lock()
				if err == nil && rows != wantRows {
					err = fmt.Errorf("%s: %d rows, want %d", query, rows, wantRows)
				}
				if err != nil && failure == nil {
					failure = err
				}
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	interval := time.Second / time.Duration(rate)
	start := time.Now().Add(10 * time.Millisecond)
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(at))
		jobs <- job{at}
	}
	close(jobs)
	wg.Wait()
	if failure != nil {
		b.Fatal(failure)
	}
	slices.Sort(lat)
	return lat
}

func pct(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkDistSQLShowComputeNodes: SHOW COMPUTE NODES with 100 registered
// compute nodes over the MySQL protocol (go-sql-driver/mysql, loopback),
// 5,000 statements sent at 1,000 per second, next to SELECT 1 through the
// same front end and driver at the same rate (the protocol's own cost) in
// the same run. Target: p99 <= 1 ms.
func BenchmarkDistSQLShowComputeNodes(b *testing.B) {
	const peers, n, rate, conns = 99, 5000, 1000, 4
	c := startBenchConsole(b, peers, conns)
	ctx := testenv.Context(b)
	for range 200 { // warm the pool and the code paths
		if _, err := drain(ctx, c.db, "SHOW COMPUTE NODES"); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		nodes := openLoop(b, c.db, "SHOW COMPUTE NODES", peers+1, n, rate, conns)
		base := openLoop(b, c.db, "SELECT 1", 1, n, rate, conns)
		b.ReportMetric(ms(pct(nodes, 0.5)), "p50-ms")
		b.ReportMetric(ms(pct(nodes, 0.99)), "p99-ms")
		b.ReportMetric(ms(pct(base, 0.5)), "select1-p50-ms")
		b.ReportMetric(ms(pct(base, 0.99)), "select1-p99-ms")
		b.Logf("%d statements at %d/s, %d nodes: SHOW COMPUTE NODES p50 %.3f ms p99 %.3f ms max %.3f ms; SELECT 1 p50 %.3f ms p99 %.3f ms max %.3f ms",
			n, rate, peers+1, ms(pct(nodes, 0.5)), ms(pct(nodes, 0.99)), ms(nodes[len(nodes)-1]),
			ms(pct(base, 0.5)), ms(pct(base, 0.99)), ms(base[len(base)-1]))
	}
}

var pgTPS = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// pgbench runs script for d with clients connections against the test
// PostgreSQL and returns its transactions per second.
func pgbench(b *testing.B, script string, clients int, d time.Duration) float64 {
	b.Helper()
	cfg, err := pgx.ParseConfig(testenv.PostgresURL())
	if err != nil {
		b.Fatal(err)
	}
	args := []string{"-n", "-M", "prepared", "-f", script, "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 2)),
		"-T", strconv.Itoa(int(d.Seconds())), "-h", cfg.Host, "-p", strconv.Itoa(int(cfg.Port)), "-U", cfg.User, cfg.Database}
	out, err := exec.Command("pgbench", args...).CombinedOutput()
	if err != nil {
		b.Fatalf("pgbench %v: %v\n%s", args, err, out)
	}
	m := pgTPS.FindSubmatch(out)
	if m == nil {
		b.Fatalf("pgbench: no tps in\n%s", out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// closedLoop runs query on conns connections for d and returns the
// statements per second.
func closedLoop(b *testing.B, db *sql.DB, query string, wantRows, conns int, d time.Duration) float64 {
	b.Helper()
	ctx := testenv.Context(b)
	var total int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failure error
	start := time.Now()
	deadline := start.Add(d)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var count int64
			for time.Now().Before(deadline) {
				rows, err := drain(ctx, db, query)
				if err == nil && rows != wantRows {
					err = fmt.Errorf("%s: %d rows, want %d", query, rows, wantRows)
				}
				if err != nil {
					mu.Lock()
					failure = err
					mu.Unlock()
					return
				}
				count++
			}
			mu.Lock()
			total += count
			mu.Unlock()
		}()
	}
	wg.Wait()
	if failure != nil {
		b.Fatal(failure)
	}
	return float64(total) / time.Since(start).Seconds()
}

// BenchmarkDistSQLNextKeys: keys per second from SHOW NEXT KEYS COUNT 1000
// and SHOW NEXT KEYS (one key) over the MySQL protocol, next to PostgreSQL
// nextval through pgbench (-M prepared) on the same machine in the same
// run: a statement of 1000 nextval (generate_series) and one nextval per
// statement, with the same number of connections (4) for 5 s each.
func BenchmarkDistSQLNextKeys(b *testing.B) {
	const conns = 4
	const d = 5 * time.Second
	if _, err := exec.LookPath("pgbench"); err != nil {
		b.Skip("pgbench not installed (Debian postgresql-client)")
	}
	ctx := testenv.Context(b)
	pg, err := pgx.Connect(ctx, testenv.PostgresURL())
	if err != nil {
		testenv.DatabaseUnreachable(b, "PostgreSQL", err)
	}
	if _, err := pg.Exec(ctx, "CREATE SEQUENCE IF NOT EXISTS distsql_bench_seq"); err != nil {
		b.Fatal(err)
	}
	_ = pg.Close(ctx)
	dir := b.TempDir()
	batch, single := filepath.Join(dir, "batch.sql"), filepath.Join(dir, "single.sql")
	if err := os.WriteFile(batch, []byte("SELECT nextval('distsql_bench_seq') FROM generate_series(1, 1000);\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(single, []byte("SELECT nextval('distsql_bench_seq');\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	c := startBenchConsole(b, 0, conns)
	b.ResetTimer()
	for range b.N {
		sk1000 := closedLoop(b, c.db, "SHOW NEXT KEYS COUNT 1000", 1000, conns, d) * 1000
		pg1000 := pgbench(b, batch, conns, d) * 1000
		sk1 := closedLoop(b, c.db, "SHOW NEXT KEYS", 1, conns, d)
		pg1 := pgbench(b, single, conns, d)
		b.ReportMetric(sk1000, "keys/s")
		b.ReportMetric(pg1000, "pg-nextval1000-keys/s")
		b.ReportMetric(sk1, "single-keys/s")
		b.ReportMetric(pg1, "pg-nextval-keys/s")
		b.Logf("%d connections, %v each: SHOW NEXT KEYS COUNT 1000 %.0f keys/s, PostgreSQL 1000 x nextval %.0f keys/s (ratio %.2f); SHOW NEXT KEYS %.0f keys/s, PostgreSQL nextval %.0f keys/s (ratio %.2f)",
			conns, d, sk1000, pg1000, sk1000/pg1000, sk1, pg1, sk1/pg1)
	}
}

// BenchmarkDistSQLShowComputeNodesCPU: the CPU cost of one SHOW COMPUTE
// NODES with 100 nodes over the MySQL protocol, closed loop on one
// connection, next to SELECT 1 (ns/op is the statement's round trip).
func BenchmarkDistSQLShowComputeNodesCPU(b *testing.B) {
	c := startBenchConsole(b, 99, 1)
	ctx := testenv.Context(b)
	b.Run("engine only", func(b *testing.B) {
		s := &console.Session{ID: console.NewSessionID(), User: "root", Protocol: "MySQL"}
		for range b.N {
			if _, err := c.engine.Execute(ctx, s, "SHOW COMPUTE NODES"); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, q := range []struct {
		query string
		rows  int
	}{{"SHOW COMPUTE NODES", 100}, {"SELECT 1", 1}} {
		b.Run(q.query, func(b *testing.B) {
			for range b.N {
				if _, err := drain(ctx, c.db, q.query); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
