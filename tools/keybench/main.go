//go:build linux

// Command keybench is the key-service benchmark: in one run on
// loopback it measures a shardkeeper node's single-key requests/s next to
// Redis INCR (redis-benchmark) and PostgreSQL nextval (pgbench), its
// batched keys/s, and its p99 latency at half its peak rate with an
// open-loop, fixed-rate load generator (openloop.go: over RESP at half the
// RESP peak and over UDP at half the UDP peak of the same round), and
// prints a Markdown table with every round, the medians and the ratios
// against Redis.
//
// The node runs in this process as serve runs it (internal/daemon, on an
// embedded etcd registry or on -etcd URLs) and serves keys over the Redis
// protocol and UDP datagrams (internal/keyserver, as serve --resp and
// --udp) and its HTTP API (internal/httpapi, GET /api/v1/keys?count=N).
// Single keys are measured with redis-benchmark (Redis and RESP) and with
// this command's own closed-loop generator (`keybench load`, load.go: one
// thread, one request in flight per socket) against Redis, RESP and UDP
// alike. Redis must listen on
// -redis and PostgreSQL on -pg; redis-benchmark, pgbench and wrk must be on
// PATH (`make bench-keys` installs the Debian packages when missing).
//
//	go run ./tools/keybench [-rounds 3] [-n 200000] [-d 5s]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/daemon"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

type options struct {
	rounds    int
	requests  int           // redis-benchmark -n for single keys
	duration  time.Duration // pgbench -T, wrk -d, open-loop run
	clients   int           // -c of every single-key client
	batch     int           // keys per batched request
	pipeline  int           // -P of the pipelined rows
	redisAddr string
	pgURL     string
	etcd      string
	borrow    time.Duration
	skipPG    bool
	profile   string // CPU profile of the RESP single-key rows of round 1
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "openloop" {
		openLoopMain(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "load" {
		loadMain(os.Args[2:])
		return
	}
	var o options
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; the table shows each and the median")
	flag.IntVar(&o.requests, "n", 200000, "requests per redis-benchmark single-key run")
	flag.DurationVar(&o.duration, "d", 5*time.Second, "duration of pgbench, wrk and the open-loop runs")
	flag.IntVar(&o.clients, "c", 50, "concurrent connections of the single-key runs (redis-benchmark's default)")
	flag.IntVar(&o.batch, "batch", 1000, "keys per batched request")
	flag.IntVar(&o.pipeline, "P", 16, "pipeline depth of the pipelined rows")
	flag.StringVar(&o.redisAddr, "redis", "127.0.0.1:6379", "Redis host:port for the INCR baseline")
	flag.StringVar(&o.pgURL, "pg", "host=127.0.0.1 port=5432 dbname=test", "PostgreSQL for the nextval baseline (pgbench/psql conninfo)")
	flag.StringVar(&o.etcd, "etcd", "", "run the node on these etcd endpoints (comma-separated) instead of an embedded registry")
	flag.DurationVar(&o.borrow, "borrow", 2*time.Millisecond, "snowflake MaxBorrow of the node: how far a batch may run ahead of the clock")
	flag.BoolVar(&o.skipPG, "skip-pg", false, "skip the PostgreSQL baseline")
	flag.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of this process (the node) while round 1 runs the RESP single-key rows against it (redis-benchmark INCR, keybench load -proto resp)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "keybench:", err)
		os.Exit(1)
	}
}

// row is one line of the table: a figure per round.
type row struct {
	name, unit string
	values     []float64
	note       []string // per round, e.g. latency percentiles
}

func (r *row) add(v float64, note string) {
	r.values = append(r.values, v)
	r.note = append(r.note, note)
}

func (r *row) median() float64 {
	if len(r.values) == 0 {
		return 0
	}
	s := slices.Clone(r.values)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func run(o options) error {
	for _, tool := range []string{"redis-benchmark", "wrk", "pgbench", "psql"} {
		if _, err := exec.LookPath(tool); err != nil && !(o.skipPG && (tool == "pgbench" || tool == "psql")) {
			return fmt.Errorf("%s not found on PATH: run `make bench-keys` (installs redis-tools, wrk, postgresql-client)", tool)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	d, registryName, closeNode, err := startNode(ctx, o)
	if err != nil {
		return err
	}
	defer closeNode()
	node := d.Node

	resp, udpAddr := d.RESPAddr, d.UDPAddr
	httpURL := "http://" + d.HTTPAddr

	if err := checkRedis(o.redisAddr); err != nil {
		return err
	}
	if !o.skipPG {
		if out, err := exec.Command("psql", o.pgURL, "-qc", "CREATE SEQUENCE IF NOT EXISTS keybench_seq").CombinedOutput(); err != nil {
			return fmt.Errorf("PostgreSQL at %q: %v: %s", o.pgURL, err, out)
		}
	}
	pgScript := filepath.Join(os.TempDir(), fmt.Sprintf("keybench-%d.sql", os.Getpid()))
	if err := os.WriteFile(pgScript, []byte("SELECT nextval('keybench_seq');\n"), 0o644); err != nil {
		return err
	}
	defer os.Remove(pgScript)

	c := strconv.Itoa(o.clients)
	n := strconv.Itoa(o.requests)
	p := strconv.Itoa(o.pipeline)
	b := strconv.Itoa(o.batch)
	dur := fmt.Sprintf("%ds", int(o.duration.Seconds()))
	rh, rp, _ := net.SplitHostPort(o.redisAddr)
	sh, sp, _ := net.SplitHostPort(resp)
	batchReqs := strconv.Itoa(max(2000, o.requests/20)) // 10M keys at the default -n: the 2 ms borrow is < 0.1% of it

	var (
		redisIncr  = &row{name: "Redis INCR: redis-benchmark -t incr -c " + c, unit: "req/s"}
		skIncr     = &row{name: "shardkeeper RESP INCR: same command line", unit: "req/s"}
		redisGen   = &row{name: "Redis INCR: keybench load -proto resp -c " + c, unit: "req/s"}
		skGen      = &row{name: "shardkeeper RESP INCR: keybench load -proto resp -c " + c, unit: "req/s"}
		skUDP      = &row{name: "shardkeeper UDP, 1 key per datagram: keybench load -proto udp -c " + c, unit: "req/s"}
		pgNext     = &row{name: "PostgreSQL nextval: pgbench -M prepared -c " + c + " -j 2", unit: "req/s"}
		skHTTP     = &row{name: "shardkeeper HTTP GET /api/v1/keys (internal/httpapi): wrk -t 2 -c " + c, unit: "req/s"}
		redisPipe  = &row{name: "Redis INCR, pipelined -P " + p, unit: "req/s"}
		skPipe     = &row{name: "shardkeeper RESP INCR, pipelined -P " + p, unit: "req/s"}
		skBatchB   = &row{name: "batched: NEXTIDB " + b + " (packed), redis-benchmark -c 4", unit: "keys/s"}
		skBatchA   = &row{name: "batched: NEXTID " + b + " (RESP array), redis-benchmark -c 4", unit: "keys/s"}
		skBatchH   = &row{name: "batched: GET /api/v1/keys?count=" + b + ", wrk -t 2 -c 4", unit: "keys/s"}
		skHalf     = &row{name: "shardkeeper RESP INCR at half its peak, open loop", unit: "p99 ms"}
		skHalfS    = &row{name: "  same, p99 from the actual send (without the generator's lateness)", unit: "p99 ms"}
		redisHalf  = &row{name: "Redis INCR at half shardkeeper's peak, open loop", unit: "p99 ms"}
		redisHalfS = &row{name: "  same, p99 from the actual send", unit: "p99 ms"}
		udpHalf    = &row{name: "shardkeeper UDP, 1 key per datagram, at half its UDP peak, open loop (the datagrams due at one wake sent as a run)", unit: "p99 ms"}
		udpHalfS   = &row{name: "  same, p99 from the actual send", unit: "p99 ms"}
		udpHalf999 = &row{name: "  same, p99.9", unit: "ms"}
		udpHalfMax = &row{name: "  same, max", unit: "ms"}
		udpHalfAch = &row{name: "  same, achieved rate", unit: "req/s"}
		udpHalfLag = &row{name: "  same, p99 of the generator's send lag (how late it sent)", unit: "ms"}
		udpHalfCPU = &row{name: "  same, machine CPU busy during the run (all processes)", unit: "%"}
		udpHalfOne = &row{name: "  same rate, each datagram sent on its own (sendmmsg, no runs)", unit: "p99 ms"}
	)
	for round := 1; round <= o.rounds; round++ {
		fmt.Fprintf(os.Stderr, "keybench: round %d/%d\n", round, o.rounds)
		v, note, err := redisBenchmark("-h", rh, "-p", rp, "-t", "incr", "-n", n, "-c", c)
		if err != nil {
			return err
		}
		redisIncr.add(v, note)
		stopProfile, err := startProfile(o.profile, round)
		if err != nil {
			return err
		}
		v, note, err = redisBenchmark("-h", sh, "-p", sp, "-t", "incr", "-n", n, "-c", c)
		if err != nil {
			return err
		}
		skIncr.add(v, note)
		for _, g := range []struct {
			r           *row
			proto, addr string
		}{{skGen, "resp", resp}, {redisGen, "resp", o.redisAddr}, {skUDP, "udp", udpAddr}} {
			if g.r == redisGen {
				stopProfile()
			}
			l, err := load(g.proto, g.addr, o.clients, o.duration)
			if err != nil {
				return err
			}
			g.r.add(l.Rate, fmt.Sprintf("%d retries", l.Retries))
		}
		if !o.skipPG {
			v, err = pgbench(o.pgURL, pgScript, c, dur)
			if err != nil {
				return err
			}
			pgNext.add(v, "")
		}
		v, note, err = wrk(httpURL+"/api/v1/keys", "2", c, dur)
		if err != nil {
			return err
		}
		skHTTP.add(v, note)
		v, note, err = redisBenchmark("-h", rh, "-p", rp, "-t", "incr", "-n", strconv.Itoa(5*o.requests), "-c", c, "-P", p)
		if err != nil {
			return err
		}
		redisPipe.add(v, note)
		v, note, err = redisBenchmark("-h", sh, "-p", sp, "-t", "incr", "-n", strconv.Itoa(5*o.requests), "-c", c, "-P", p)
		if err != nil {
			return err
		}
		skPipe.add(v, note)
		v, note, err = redisBenchmark("-h", sh, "-p", sp, "-n", batchReqs, "-c", "4", "NEXTIDB", b)
		if err != nil {
			return err
		}
		skBatchB.add(v*float64(o.batch), note)
		v, note, err = redisBenchmark("-h", sh, "-p", sp, "-n", batchReqs, "-c", "4", "NEXTID", b)
		if err != nil {
			return err
		}
		skBatchA.add(v*float64(o.batch), note)
		v, note, err = wrk(httpURL+"/api/v1/keys?count="+b, "2", "4", dur)
		if err != nil {
			return err
		}
		skBatchH.add(v*float64(o.batch), note)
		half := skIncr.values[len(skIncr.values)-1] / 2
		lat, err := openLoop("resp", resp, half, o.duration)
		if err != nil {
			return err
		}
		skHalf.add(lat.P99, lat.String())
		skHalfS.add(lat.P99Sent, "")
		lat, err = openLoop("resp", o.redisAddr, half, o.duration)
		if err != nil {
			return err
		}
		redisHalf.add(lat.P99, lat.String())
		redisHalfS.add(lat.P99Sent, "")
		// UDP at half the UDP peak of this round (keybench load -proto udp
		// above): one key per datagram, many in flight, retried after 20 ms
		// (doubling), a retried or lost request counted with its full latency.
		udpRate := skUDP.values[len(skUDP.values)-1] / 2
		lat, err = openLoop("udp", udpAddr, udpRate, o.duration, "-runs")
		if err != nil {
			return err
		}
		if lat.Errors > 0 {
			return fmt.Errorf("open-loop generator against UDP %s: %d errors: %s", udpAddr, lat.Errors, lat)
		}
		udpHalf.add(lat.P99, lat.String())
		udpHalfS.add(lat.P99Sent, "")
		udpHalf999.add(lat.P999, "")
		udpHalfMax.add(lat.Max, "")
		udpHalfAch.add(lat.Achieved, fmt.Sprintf("%d retries, %d lost", lat.Retries, lat.Lost))
		udpHalfLag.add(lat.P99Lag, "")
		udpHalfCPU.add(lat.Busy, "")
		lat, err = openLoop("udp", udpAddr, udpRate, o.duration)
		if err != nil {
			return err
		}
		udpHalfOne.add(lat.P99, lat.String())
	}

	fmt.Printf("\n## keybench: %s, GOMAXPROCS %d, %d CPUs, load average %s, registry %s, %d rounds\n\n",
		time.Now().UTC().Format(time.RFC3339), runtime.GOMAXPROCS(0), runtime.NumCPU(), loadAverage(), registryName, o.rounds)
	rows := []*row{redisIncr, skIncr, redisGen, skGen, skUDP, pgNext, skHTTP, redisPipe, skPipe, skBatchB, skBatchA, skBatchH, skHalf, skHalfS, redisHalf, redisHalfS, udpHalf, udpHalfS, udpHalf999, udpHalfMax, udpHalfAch, udpHalfLag, udpHalfCPU, udpHalfOne}
	if o.skipPG {
		rows = slices.DeleteFunc(rows, func(r *row) bool { return r == pgNext })
	}
	printTable(os.Stdout, rows)
	fmt.Println()
	ratio := func(a, b *row) []string {
		out := make([]string, len(a.values))
		for i := range a.values {
			out[i] = fmt.Sprintf("%.2f", a.values[i]/b.values[i])
		}
		return out
	}
	fmt.Printf("single-key UDP / Redis INCR (redis-benchmark) per round: %s (target >= 1)\n", strings.Join(ratio(skUDP, redisIncr), ", "))
	fmt.Printf("single-key UDP / Redis INCR (same generator) per round: %s (target >= 1)\n", strings.Join(ratio(skUDP, redisGen), ", "))
	fmt.Printf("single-key RESP / Redis INCR, redis-benchmark per round: %s\n", strings.Join(ratio(skIncr, redisIncr), ", "))
	fmt.Printf("single-key RESP / Redis INCR, same generator per round: %s\n", strings.Join(ratio(skGen, redisGen), ", "))
	fmt.Printf("UDP retries per round (a request unanswered for 20 ms, sent again): %s\n", strings.Join(skUDP.note, ", "))
	fmt.Printf("pipelined RESP / Redis INCR per round: %s\n", strings.Join(ratio(skPipe, redisPipe), ", "))
	if !o.skipPG {
		fmt.Printf("single-key UDP / PostgreSQL nextval per round: %s\n", strings.Join(ratio(skUDP, pgNext), ", "))
	}
	fmt.Printf("batched keys/s, best protocol, median: %.0f (target >= 4,000,000; the layout's ceiling is 4,096,000 per worker id)\n",
		max(skBatchB.median(), skBatchA.median(), skBatchH.median()))
	fmt.Printf("p99 at half the peak rate, median: RESP %.3f ms, UDP %.3f ms (target <= 1 ms)\n", skHalf.median(), udpHalf.median())
	fmt.Printf("UDP open loop per round (a request unanswered for 20 ms is sent again, the timeout doubling; it counts with its full latency): %s\n", strings.Join(udpHalfAch.note, ", "))
	for i, r := range []*row{skHalf, redisHalf, udpHalf, udpHalfOne} {
		fmt.Printf("open loop %d (%s): %s\n", i+1, r.name, strings.Join(r.note, " | "))
	}
	st := node.Stats()
	fmt.Printf("node: worker id %d, %d keys issued, %d stalls, %d refused, %d renewals\n", st.WorkerID, st.Keys, st.Stalls, st.Refused, st.Renewals)
	return nil
}

// startProfile starts a CPU profile into path in round 1 (none when path
// is ""); the returned stop ends it and is safe to call again.
func startProfile(path string, round int) (stop func(), err error) {
	if path == "" || round != 1 {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
			fmt.Fprintf(os.Stderr, "keybench: CPU profile of the RESP single-key rows in %s (go tool pprof -top %s)\n", path, path)
		})
	}, nil
}

func printTable(w io.Writer, rows []*row) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	n := len(rows[0].values)
	hdr := "| measurement | unit"
	sep := "|---|---"
	for i := range n {
		hdr += fmt.Sprintf(" | round %d", i+1)
		sep += "|---:"
	}
	fmt.Fprintln(tw, hdr+" | median |")
	fmt.Fprintln(tw, sep+"|---:|")
	for _, r := range rows {
		line := "| " + r.name + " | " + r.unit
		for _, v := range r.values {
			line += " | " + format(v, r.unit)
		}
		fmt.Fprintln(tw, line+" | "+format(r.median(), r.unit)+" |")
	}
	tw.Flush()
}

func format(v float64, unit string) string {
	if strings.Contains(unit, "ms") {
		return fmt.Sprintf("%.3f", v)
	}
	s := strconv.FormatFloat(v, 'f', 0, 64)
	// thousands separators
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

// startNode starts a node as serve does (internal/daemon: cluster node,
// metadata, the HTTP API on a free loopback port) on an embedded registry
// in a temporary directory, or on -etcd.
func startNode(ctx context.Context, o options) (d *daemon.Daemon, registryName string, stop func(), err error) {
	repo := config.DefaultMode().Repository
	registryName = "embedded etcd"
	var dir string
	if o.etcd != "" {
		repo, err = config.RepositoryFromFlags("etcd", map[string]string{"server-lists": o.etcd, "namespace": "keybench_" + strconv.Itoa(os.Getpid())})
		if err != nil {
			return nil, "", nil, err
		}
		registryName = "etcd " + o.etcd
	} else {
		if dir, err = os.MkdirTemp("", "keybench-registry-"); err != nil {
			return nil, "", nil, err
		}
		repo.DataDir, repo.ClientURL, repo.PeerURL = dir, "http://127.0.0.1:0", "http://127.0.0.1:0"
	}
	sf := snowflake.DefaultConfig()
	sf.MaxBorrow = o.borrow
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	d, err = daemon.Start(ctx, daemon.Config{
		Repository: repo,
		Node:       cluster.Config{InstanceID: "keybench-" + strconv.Itoa(os.Getpid()), Snowflake: sf, Logger: log},
		Logger:     log,
		HTTP:       &daemon.HTTPConfig{Addr: "127.0.0.1:0", OpenReads: true},
		// Room for every benchmark client (-c) above the default cap of 32,
		// as serve --resp-max-clients gives it.
		RESP: &daemon.RESPConfig{Addr: "127.0.0.1:0", MaxClients: o.clients + 16},
		UDP:  &daemon.UDPConfig{Addr: "127.0.0.1:0"},
	})
	if err != nil {
		if dir != "" {
			os.RemoveAll(dir)
		}
		return nil, "", nil, err
	}
	return d, registryName, func() {
		c, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = d.Close(c)
		if dir != "" {
			os.RemoveAll(dir)
		}
	}, nil
}

func checkRedis(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return fmt.Errorf("Redis at %s: %w (start redis-server, or pass -redis)", addr, err)
	}
	c.Close()
	return nil
}

// redisBenchmark runs redis-benchmark --csv and returns the requests/s and
// its latency percentiles.
func redisBenchmark(args ...string) (float64, string, error) {
	out, err := exec.Command("redis-benchmark", append([]string{"--csv"}, args...)...).CombinedOutput()
	if err != nil {
		return 0, "", fmt.Errorf("redis-benchmark %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := strings.Split(lines[len(lines)-1], ",")
	if len(last) < 8 || bytes.Contains(out, []byte("ERR")) {
		return 0, "", fmt.Errorf("redis-benchmark %s: unexpected output:\n%s", strings.Join(args, " "), out)
	}
	f := func(i int) string { return strings.Trim(last[i], `"`) }
	rps, err := strconv.ParseFloat(f(1), 64)
	if err != nil {
		return 0, "", fmt.Errorf("redis-benchmark: %q: %v", lines[len(lines)-1], err)
	}
	return rps, fmt.Sprintf("p50 %s p99 %s ms", f(4), f(6)), nil
}

var (
	pgTPS   = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	wrkRate = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrk99   = regexp.MustCompile(`\s99%\s+(\S+)`)
)

func pgbench(conninfo, script, clients, duration string) (float64, error) {
	args := []string{"-n", "-M", "prepared", "-f", script, "-c", clients, "-j", "2", "-T", strings.TrimSuffix(duration, "s")}
	args = append(args, strings.Fields(pgArgs(conninfo))...)
	out, err := exec.Command("pgbench", args...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	m := pgTPS.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench: no tps in:\n%s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// pgArgs turns "host=H port=P dbname=D" into pgbench's -h H -p P D.
func pgArgs(conninfo string) string {
	var host, port, db string
	for _, kv := range strings.Fields(conninfo) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "host":
			host = v
		case "port":
			port = v
		case "dbname":
			db = v
		}
	}
	return fmt.Sprintf("-h %s -p %s %s", host, port, db)
}

func wrk(url, threads, conns, duration string) (float64, string, error) {
	out, err := exec.Command("wrk", "-t", threads, "-c", conns, "-d", duration, "--latency", url).CombinedOutput()
	if err != nil {
		return 0, "", fmt.Errorf("wrk %s: %v\n%s", url, err, out)
	}
	if bytes.Contains(out, []byte("Non-2xx")) {
		return 0, "", fmt.Errorf("wrk %s: errors:\n%s", url, out)
	}
	m := wrkRate.FindSubmatch(out)
	if m == nil {
		return 0, "", fmt.Errorf("wrk: no Requests/sec in:\n%s", out)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	note := ""
	if p := wrk99.FindSubmatch(out); p != nil {
		note = "p99 " + string(p[1])
	}
	return v, note, err
}
