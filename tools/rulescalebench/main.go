//go:build linux

// Command rulescalebench measures the rule statements next to thousands of
// existing sharding tables on 3 shardkeeper nodes, each its own `serve`
// process of the built binary, on real etcd and ZooKeeper in one run: for
// each size (0, 1,000 and 10,000 tables by default) it times CREATE and
// ALTER SHARDING TABLE RULE of one table (each returns once every node
// confirmed the new rules; an untimed DROP follows each ALTER, and an
// untimed CREATE and DROP precede the first), SET DIST
// VARIABLE and SHOW SHARDING TABLE RULES, sent over the MySQL protocol to
// the first node. It reports p50 and p99, the CPU time each node spent per
// statement (the mean over the size's statements of that kind, from the
// node's threads' run time in /proc/PID/task/*/schedstat), each node's
// resident set (VmRSS) once the tables are loaded, and the ratio of the
// p50 and of each node's CPU to the empty database's.
//
// The existing tables are written straight to the registry (as
// ShardingSphere or an import would), 50 per transaction, while the nodes
// run and follow them through their watches; the statements start once
// every node shows them all.
//
//	make bench-rules-scale
//	go run ./tools/rulescalebench -bin bin/shardkeeper [-registries etcd,zookeeper] [-tables 0,1000,10000] [-statements 10]
//
// The registries are those of scripts/servers.sh (SHARDKEEPER_ETCD_ENDPOINTS,
// SHARDKEEPER_ZK_SERVERS).
package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
)

const (
	nodes    = 3
	database = "scale_db"
	create   = "CREATE SHARDING TABLE RULE t_bench (DATANODES('ds_${0..1}.t_bench_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='t_bench_${id % 2}')))))"
	alter    = "ALTER SHARDING TABLE RULE t_bench (DATANODES('ds_${0..1}.t_bench_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=uid, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='t_bench_${uid % 2}')))))"
	drop     = "DROP SHARDING TABLE RULE t_bench"
)

func main() {
	bin := flag.String("bin", "bin/shardkeeper", "the shardkeeper binary the nodes run")
	regs := flag.String("registries", "etcd,zookeeper", "registries to run on, comma-separated")
	sizesFlag := flag.String("tables", "0,1000,10000", "existing sharding tables per size, comma-separated, from 0")
	per := flag.Int("statements", 10, "statements of each kind per size")
	flag.Parse()
	sizes, err := parseSizes(*sizesFlag)
	if err != nil {
		fail(err)
	}
	if *per < 1 {
		fail(errors.New("-statements: want 1 or more"))
	}
	if _, err := os.Stat(*bin); err != nil {
		fail(fmt.Errorf("-bin: %w (make build writes bin/shardkeeper)", err))
	}
	fmt.Printf("rulescalebench: %s, %d nodes, %d statements of each kind per size, %d CPUs, load average %s\n",
		time.Now().UTC().Format(time.RFC3339), nodes, *per, runtime.NumCPU(), loadavg())
	for _, typ := range strings.Split(*regs, ",") {
		var servers string
		switch typ = strings.TrimSpace(typ); typ {
		case "etcd":
			servers = os.Getenv("SHARDKEEPER_ETCD_ENDPOINTS")
		case "zookeeper":
			servers, typ = os.Getenv("SHARDKEEPER_ZK_SERVERS"), "ZooKeeper"
		default:
			fail(fmt.Errorf("-registries: unknown registry %q (want etcd or zookeeper)", typ))
		}
		if servers == "" {
			fail(fmt.Errorf("no %s server: source scripts/servers.sh && start_servers", typ))
		}
		if err := run(*bin, typ, servers, sizes, *per); err != nil {
			fail(fmt.Errorf("%s: %w", typ, err))
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "rulescalebench:", err)
	os.Exit(1)
}

func parseSizes(v string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n > 100000 {
			return nil, fmt.Errorf("-tables %q: want table counts from 0 to 100000, comma-separated", v)
		}
		sizes = append(sizes, n)
	}
	if len(sizes) == 0 || sizes[0] != 0 {
		return nil, fmt.Errorf("-tables %q: the first size is 0, the empty database the ratios compare with", v)
	}
	return sizes, nil
}

// node is one serve process and a MySQL client of it.
type node struct {
	id   string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process exited
	db   *sql.DB
	out  *os.File
}

func run(bin, typ, servers string, sizes []int, per int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	dir, err := os.MkdirTemp("", "rulescalebench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ns := fmt.Sprintf("sk_scale_%d", time.Now().UnixNano())
	global := fmt.Sprintf(`mode:
  type: Cluster
  repository:
    type: %s
    props:
      namespace: %s
      server-lists: %s
`, typ, ns, servers)
	if err := os.WriteFile(filepath.Join(dir, "global.yaml"), []byte(global), 0o644); err != nil {
		return err
	}
	mode, err := config.LoadMode(ctx, dir)
	if err != nil {
		return err
	}
	repo, err := connect.Open(ctx, mode.Repository, nil)
	if err != nil {
		return err
	}
	defer func() {
		_ = repo.Delete(context.Background(), "/")
		_ = repo.Close()
	}()
	db := config.Database{Name: database, DataSources: map[string]config.DataSource{}}
	for i := range 2 {
		db.DataSources[fmt.Sprintf("ds_%d", i)] = config.DataSource{URL: fmt.Sprintf("jdbc:mysql://127.0.0.1:3306/ds_%d", i), MaxPoolSize: 5}
	}
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, db); err != nil {
		return err
	}
	var ns3 []*node
	defer func() {
		for _, n := range ns3 {
			n.stop()
		}
	}()
	for i := range nodes {
		n, err := start(ctx, bin, dir, fmt.Sprintf("scale-%d", i+1))
		if err != nil {
			return err
		}
		ns3 = append(ns3, n)
	}
	fmt.Printf("\n%s (%s), nodes %s\n", typ, servers, strings.Join(pids(ns3), ", "))
	conn, err := ns3[0].db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	base := map[string][]float64{} // "create" -> p50, then each node's CPU
	have := 0
	for _, size := range sizes {
		t0 := time.Now()
		if err := metadatatest.WriteShardingTables(ctx, repo, database, have, size); err != nil {
			return err
		}
		have = max(have, size)
		for _, n := range ns3 {
			if err := n.waitTables(ctx, size); err != nil {
				return err
			}
		}
		loaded := time.Since(t0)
		rss := make([]float64, len(ns3))
		for i, n := range ns3 {
			rss[i] = rssMiB(n.cmd.Process.Pid)
		}
		type cell struct {
			lat []time.Duration
			cpu []time.Duration // summed over the statements, per node
		}
		cells := map[string]*cell{}
		exec := func(kind, q string, timed bool) error {
			before := make([]time.Duration, len(ns3))
			for i, n := range ns3 {
				before[i] = cpuTime(n.cmd.Process.Pid)
			}
			t := time.Now()
			rows, err := conn.QueryContext(ctx, q)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			d := time.Since(t)
			if err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
			if !timed {
				return nil
			}
			c := cells[kind]
			if c == nil {
				c = &cell{cpu: make([]time.Duration, len(ns3))}
				cells[kind] = c
			}
			c.lat = append(c.lat, d)
			for i, n := range ns3 {
				c.cpu[i] += cpuTime(n.cmd.Process.Pid) - before[i]
			}
			return nil
		}
		if _, err := conn.ExecContext(ctx, "USE "+database); err != nil {
			return err
		}
		// One untimed CREATE and DROP first: the first rule statement
		// after the load reads the whole rule into node 1's cache, and the
		// other nodes may still be settling from the load; what a
		// statement costs from then on is what is measured.
		for _, q := range []string{create, drop} {
			if err := exec("warm-up", q, false); err != nil {
				return err
			}
		}
		for i := range per {
			for _, s := range []struct {
				kind, q string
				timed   bool
			}{
				{"CREATE", create, true}, {"ALTER", alter, true}, {"DROP", drop, false},
				{"SET", fmt.Sprintf("SET DIST VARIABLE sql_show = %t", i%2 == 0), true},
				{"SHOW", "SHOW SHARDING TABLE RULES", true},
			} {
				if err := exec(s.kind, s.q, s.timed); err != nil {
					return err
				}
			}
		}
		fmt.Printf("%d tables (written and loaded by the %d nodes in %s), RSS per node %s MiB:\n", size, nodes, loaded.Round(time.Millisecond), joinF(rss, "%.0f"))
		for _, kind := range []string{"CREATE", "ALTER", "SET", "SHOW"} {
			c := cells[kind]
			slices.Sort(c.lat)
			p50, p99 := ms(pct(c.lat, 50)), ms(pct(c.lat, 99))
			cpu := make([]float64, len(ns3))
			for i := range cpu {
				cpu[i] = ms(c.cpu[i] / time.Duration(len(c.lat)))
			}
			line := fmt.Sprintf("  %-6s p50 %8.1f ms  p99 %8.1f ms  CPU per statement per node %s ms", kind, p50, p99, joinF(cpu, "%.1f"))
			if size == 0 {
				base[kind] = append([]float64{p50}, cpu...)
			} else if b := base[kind]; kind != "SHOW" {
				ratios := make([]float64, len(cpu))
				for i := range cpu {
					ratios[i] = cpu[i] / b[1+i]
				}
				line += fmt.Sprintf("  (ratio to 0 tables: p50 %.1fx, CPU %s)", p50/b[0], joinF(ratios, "%.1fx"))
			}
			fmt.Println(line)
		}
		fmt.Printf("  load average %s\n", loadavg())
	}
	return nil
}

// start runs bin serve as node id on the conf dir with its MySQL console
// on a free port, and returns once the node runs and answers.
func start(ctx context.Context, bin, dir, id string) (*node, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	out, err := os.Create(filepath.Join(dir, id+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--conf", dir, "--instance-id", id, "--port", strconv.Itoa(port),
		"--mysql", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "--http", "off", "--log-format", "json")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	n := &node{id: id, cmd: cmd, out: out, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(n.done) }()
	mc := mysql.NewConfig()
	// No users in the registry: loopback clients get in, each an admin.
	mc.User, mc.Net, mc.Addr = "root", "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	mc.Timeout = 5 * time.Second
	if n.db, err = sql.Open("mysql", mc.FormatDSN()); err != nil {
		n.stop()
		return nil, err
	}
	n.db.SetMaxOpenConns(2)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if strings.Contains(n.log(), "shardkeeper: running") && n.db.PingContext(ctx) == nil {
			return n, nil
		}
		exited := false
		select {
		case <-n.done:
			exited = true
		default:
		}
		if exited || time.Now().After(deadline) {
			n.stop()
			return nil, fmt.Errorf("node %s did not start in 2 minutes:\n%s", id, n.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (n *node) log() string {
	data, _ := os.ReadFile(n.out.Name())
	return string(data)
}

func (n *node) stop() {
	if n.db != nil {
		_ = n.db.Close()
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
	}
	_ = n.out.Close()
}

// waitTables waits until the node shows want sharding tables of the
// database.
func (n *node) waitTables(ctx context.Context, want int) error {
	deadline := time.Now().Add(30 * time.Minute)
	for {
		got, err := n.tables(ctx)
		if err == nil && got == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s shows %d tables (%v) after 30 minutes, want %d", n.id, got, err, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (n *node) tables(ctx context.Context) (int, error) {
	rows, err := n.db.QueryContext(ctx, "SHOW SHARDING TABLE RULES FROM "+database)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	got := 0
	for rows.Next() {
		got++
	}
	return got, rows.Err()
}

// cpuTime is the time the threads of process pid ran on a CPU (the first
// field of each /proc/PID/task/TID/schedstat, in nanoseconds), or the
// process's user and system time from /proc/PID/stat (in clock ticks)
// where schedstat is missing.
func cpuTime(pid int) time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var total time.Duration
	found := false
	for _, f := range tasks {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(data))
		if len(fields) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(fields[0], 10, 64)
		if err == nil {
			total += time.Duration(ns)
			found = true
		}
	}
	if found {
		return total
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which ends with ')': utime and
	// stime are the 12th and 13th of them.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(u+st) * time.Second / 100 // USER_HZ
}

// rssMiB is the resident set of process pid in MiB (VmRSS).
func rssMiB(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func pids(ns []*node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, fmt.Sprintf("%s pid %d", n.id, n.cmd.Process.Pid))
	}
	return out
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func pct(s []time.Duration, p int) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func joinF(v []float64, format string) string {
	var s []string
	for _, x := range v {
		s = append(s, fmt.Sprintf(format, x))
	}
	return strings.Join(s, " / ")
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
