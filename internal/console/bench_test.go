package console_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
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

	"github.com/go-mysql-org/go-mysql/client"
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
	addr   string // the MySQL front end's host:port
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
	mc := startMySQLConsole(b, repo, "bench-self", console.Deps{})
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
	testenv.Eventually(b, "the node to see every peer", func() bool { return len(mc.node.Instances()) == peers+1 })
	db, err := sql.Open("mysql", "root@tcp("+mc.addr+")/")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	b.Cleanup(func() { _ = db.Close() })
	if err := db.PingContext(ctx); err != nil {
		b.Fatal(err)
	}
	return &benchConsole{node: mc.node, engine: mc.engine, db: db, addr: mc.addr}
}

// mysqlConsole is a node with its metadata store and engine behind the
// MySQL front end on a loopback port.
type mysqlConsole struct {
	node   *cluster.Node
	store  *metadata.Store
	engine *console.Engine
	addr   string // the MySQL front end's host:port
}

// startMySQLConsole opens node id on repo, its metadata store and an
// engine with deps (Repo, Node, Metadata and Logger filled in) behind a
// MySQL front end that lists its sessions in deps.Processes; cleanup
// closes them.
func startMySQLConsole(tb testing.TB, repo registry.Repository, id string, deps console.Deps) *mysqlConsole {
	tb.Helper()
	ctx := testenv.Context(tb)
	node, err := cluster.Open(ctx, repo, cluster.Config{InstanceID: id, Port: 3307, Logger: quiet()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = node.Close(context.Background()) })
	store, err := metadata.Bootstrap(ctx, repo, nil, nil, metadata.Options{Logger: quiet()})
	if err != nil {
		tb.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = store.Run(runCtx) }()
	tb.Cleanup(func() { stop(); <-done })
	deps.Repo, deps.Node, deps.Metadata, deps.Logger = repo, node, store, quiet()
	engine := console.New(deps)
	tb.Cleanup(func() { _ = engine.Close(context.Background()) })
	front, err := mysqlfront.New(mysqlfront.Config{Executor: engine, Processes: deps.Processes, Logger: quiet()})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go func() { _ = front.Serve(ln) }()
	tb.Cleanup(func() { _ = front.Close(context.Background()) })
	return &mysqlConsole{node: node, store: store, engine: engine, addr: ln.Addr().String()}
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
// time whatever the others do (up to len(run) in flight, each function of
// run sending one statement on a connection of its own and returning the
// rows it read), and returns their
// latencies measured from the scheduled time, so that a slow statement
// delays the ones behind it in the measurement too (no coordinated
// omission), how late each was sent (the generator's own share and any
// wait for a free connection), and each one's time from its actual send
// to its last row (service).
func openLoop(b testing.TB, run []func() (int, error), query string, wantRows, n, rate int) (lat, late, service []time.Duration) {
	b.Helper()
	type job struct{ at time.Time }
	jobs := make(chan job, n)
	lat = make([]time.Duration, 0, n)
	late = make([]time.Duration, 0, n)
	service = make([]time.Duration, 0, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failure error
	for _, do := range run {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				sent := time.Since(j.at)
				rows, err := do()
				d := time.Since(j.at)
				mu.Lock()
				late = append(late, sent)
				service = append(service, d-sent)
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
		sleepUntil(at)
		jobs <- job{at}
	}
	close(jobs)
	wg.Wait()
	if failure != nil {
		b.Fatal(failure)
	}
	slices.Sort(lat)
	slices.Sort(late)
	slices.Sort(service)
	return lat, late, service
}

func pct(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkDistSQLShowComputeNodes: SHOW COMPUTE NODES with 100 registered
// compute nodes over the MySQL protocol (loopback), 5,000 statements sent
// at 1,000 per second, next to SELECT 1 through the same front end at the
// same rate (the protocol's own cost) in the same run, each sent by two
// clients in turn: go-sql-driver/mysql (database/sql, every value scanned)
// and rawClient, which frames the result's packets without decoding them
// (the server's own latency). Target: p99 <= 1 ms.
func BenchmarkDistSQLShowComputeNodes(b *testing.B) {
	const peers, n, rate, conns = 99, 5000, 1000, 4
	c := startBenchConsole(b, peers, conns)
	b.ResetTimer()
	for range b.N {
		nodes := loadgen(b, c.addr, "driver", "SHOW COMPUTE NODES", peers+1, n, rate, conns)
		base := loadgen(b, c.addr, "driver", "SELECT 1", 1, n, rate, conns)
		rawNodes := loadgen(b, c.addr, "raw", "SHOW COMPUTE NODES", peers+1, n, rate, conns)
		rawBase := loadgen(b, c.addr, "raw", "SELECT 1", 1, n, rate, conns)
		b.ReportMetric(nodes.P50, "p50-ms")
		b.ReportMetric(nodes.P99, "p99-ms")
		b.ReportMetric(base.P50, "select1-p50-ms")
		b.ReportMetric(base.P99, "select1-p99-ms")
		b.ReportMetric(nodes.ServiceP99, "service-p99-ms")
		b.ReportMetric(rawNodes.P99, "raw-p99-ms")
		b.ReportMetric(rawNodes.ServiceP99, "raw-service-p99-ms")
		b.Logf("%d statements at %d/s, %d nodes, %d connections, generator in its own process:", n, rate, peers+1, conns)
		b.Logf("go-sql-driver: SHOW COMPUTE NODES %s", nodes)
		b.Logf("go-sql-driver: SELECT 1           %s", base)
		b.Logf("raw client:    SHOW COMPUTE NODES %s", rawNodes)
		b.Logf("raw client:    SELECT 1           %s", rawBase)
	}
}

// loadStats are an open-loop run's figures in milliseconds.
type loadStats struct {
	P50, P99, Max, LateP99, ServiceP50, ServiceP99 float64
}

func (s loadStats) String() string {
	return fmt.Sprintf("p50 %.3f ms p99 %.3f ms max %.3f ms (sent late p99 %.3f ms; from the send p50 %.3f ms p99 %.3f ms)",
		s.P50, s.P99, s.Max, s.LateP99, s.ServiceP50, s.ServiceP99)
}

// loadgen runs openLoop in a child process (this test binary running
// TestDistSQLLoadGenerator), so that the client's allocations and garbage
// collection do not land in the server's process, and returns its figures.
// client is "driver" (go-sql-driver/mysql) or "raw" (rawClient).
func loadgen(b *testing.B, addr, client, query string, rows, n, rate, conns int) loadStats {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDistSQLLoadGenerator$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "DISTSQL_LOADGEN="+addr, "DISTSQL_LOADGEN_QUERY="+query, "DISTSQL_LOADGEN_CLIENT="+client,
		fmt.Sprintf("DISTSQL_LOADGEN_SHAPE=%d,%d,%d,%d", rows, n, rate, conns))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("load generator: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`LOADGEN (\{.*\})`).FindSubmatch(out)
	if m == nil {
		b.Fatalf("load generator printed no figures:\n%s", out)
	}
	var st loadStats
	if err := json.Unmarshal(m[1], &st); err != nil {
		b.Fatal(err)
	}
	return st
}

// TestDistSQLLoadGenerator is BenchmarkDistSQLShowComputeNodes' client,
// run in its own process by loadgen; it does nothing otherwise.
func TestDistSQLLoadGenerator(t *testing.T) {
	addr := os.Getenv("DISTSQL_LOADGEN")
	if addr == "" {
		t.Skip("run by BenchmarkDistSQLShowComputeNodes")
	}
	var rows, n, rate, conns int
	if _, err := fmt.Sscanf(os.Getenv("DISTSQL_LOADGEN_SHAPE"), "%d,%d,%d,%d", &rows, &n, &rate, &conns); err != nil {
		t.Fatal(err)
	}
	query := os.Getenv("DISTSQL_LOADGEN_QUERY")
	ctx := testenv.Context(t)
	run := make([]func() (int, error), conns)
	switch client := os.Getenv("DISTSQL_LOADGEN_CLIENT"); client {
	case "driver":
		db, err := sql.Open("mysql", "root@tcp("+addr+")/")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(conns)
		db.SetMaxIdleConns(conns)
		for i := range run {
			run[i] = func() (int, error) { return drain(ctx, db, query) }
		}
	case "raw":
		for i := range run {
			rc := dialRaw(t, addr)
			run[i] = func() (int, error) { return rc.query(query) }
		}
	default:
		t.Fatalf("DISTSQL_LOADGEN_CLIENT %q: want driver or raw", client)
	}
	for range 200 { // open the connections, warm the code paths
		for _, do := range run {
			if _, err := do(); err != nil {
				t.Fatal(err)
			}
		}
	}
	lat, late, service := openLoop(t, run, query, rows, n, rate)
	st := loadStats{P50: ms(pct(lat, 0.5)), P99: ms(pct(lat, 0.99)), Max: ms(lat[len(lat)-1]), LateP99: ms(pct(late, 0.99)),
		ServiceP50: ms(pct(service, 0.5)), ServiceP99: ms(pct(service, 0.99))}
	js, _ := json.Marshal(st)
	fmt.Printf("LOADGEN %s\n", js)
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
	rc := dialRaw(b, c.addr)
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
		b.Run("raw client "+q.query, func(b *testing.B) {
			for range b.N {
				if n, err := rc.query(q.query); err != nil || n != q.rows {
					b.Fatalf("%s: %d rows, %v; want %d rows", q.query, n, err, q.rows)
				}
			}
		})
	}
}

// rawClient is a minimal MySQL-protocol client: go-mysql's client logs in,
// then query sends COM_QUERY and reads the answer's packets up to its
// final EOF, OK or ERR, counting the rows without decoding any value.
type rawClient struct {
	conn net.Conn
	r    *bufio.Reader
	out  []byte
	pkt  []byte
	hdr  [4]byte
}

func dialRaw(tb testing.TB, addr string) *rawClient {
	tb.Helper()
	c, err := client.Connect(addr, "root", "", "")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return &rawClient{conn: c.Conn.Conn, r: bufio.NewReaderSize(c.Conn.Conn, 64<<10)}
}

// next reads one packet's payload (a single chunk: the results measured
// are far below 16 MiB a packet); it is valid until the next call.
func (c *rawClient) next() ([]byte, error) {
	h := c.hdr[:]
	if _, err := io.ReadFull(c.r, h); err != nil {
		return nil, err
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if cap(c.pkt) < n {
		c.pkt = make([]byte, n)
	}
	c.pkt = c.pkt[:n]
	_, err := io.ReadFull(c.r, c.pkt)
	return c.pkt, err
}

func isEOF(p []byte) bool { return len(p) > 0 && len(p) < 9 && p[0] == 0xfe }

func (c *rawClient) query(q string) (rows int, err error) {
	n := 1 + len(q)
	c.out = append(c.out[:0], byte(n), byte(n>>8), byte(n>>16), 0, 0x03)
	c.out = append(c.out, q...)
	if _, err := c.conn.Write(c.out); err != nil {
		return 0, err
	}
	p, err := c.next()
	switch {
	case err != nil:
		return 0, err
	case len(p) == 0 || p[0] == 0xff:
		return 0, fmt.Errorf("%s: error packet %q", q, p)
	case p[0] == 0x00:
		return 0, nil // OK: no result set
	}
	cols := int(p[0]) // the results measured have fewer than 251 columns
	for range cols {
		if _, err := c.next(); err != nil {
			return 0, err
		}
	}
	if p, err := c.next(); err != nil || !isEOF(p) { // the end of the column definitions
		return 0, fmt.Errorf("%s: no EOF after the column definitions: %q, %v", q, p, err)
	}
	for {
		p, err := c.next()
		switch {
		case err != nil:
			return rows, err
		case len(p) > 0 && p[0] == 0xff:
			return rows, fmt.Errorf("%s: error packet %q", q, p)
		case isEOF(p):
			return rows, nil
		}
		rows++
	}
}
