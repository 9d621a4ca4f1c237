// Command workeridbench is the worker-id startup benchmark: N nodes
// start at once against real etcd and real ZooKeeper, each with its own
// registry session, and take a worker id with this project's
// workerid.Acquire ("ours") and with ShardingSphere's algorithm
// (workerid.BaselineAcquire: lowest free id, retry on conflict with no
// sleep, read every worker_id value) in the same run. It prints the wall
// time, the registry round trips per node and the ratio baseline/ours, then
// checks the targets; with -rounds above 1 it ends with a summary
// that counts each target over the rounds (held when met in at least 4 of
// 5). The header of each round and every case's row carry the machine's
// load average.
//
//	source scripts/servers.sh && start_servers
//	go run ./tools/workeridbench [-n 64,256,1024] [-backends etcd,zookeeper]
//	    [-algos ours,ledgered,baseline] [-ledgered-n 1024] [-baseline-max 256]
//	    [-baseline-rounds 1] [-clients 32] [-rounds 1]
//
// "ours" does what cluster.Node does: Acquire, then, when the claim saw no
// ledger, workerid.EnsureLedger in the background after a random pause of
// up to a second (one node creates the 1024 fences and the ledger while
// the others start; the case ends when it is done). Round trips and times
// count Acquire only. "ledgered" is ours on a cluster whose ledger and
// fences exist already, as every start after a cluster's first.
//
// or `make bench-workerid` (starts its own servers; 5 rounds, the baseline
// in the first; BASELINE_MAX=1024 also runs the baseline at 1024 nodes). The faithful baseline reads every
// worker_id value with its own Get on every attempt, so its cost grows
// faster than N^2: measured here, 256 nodes take about 7 minutes on etcd
// 3.4 (one Get per child over 32 gRPC clients) and 80 s on ZooKeeper, and
// 1024 nodes take hours. The default stops it at 256.
//
// How a case runs: every case gets a fresh namespace. The harness opens a
// pool of -clients Repositories (0: one per node) and, for each node, its
// own session (an etcd lease; on ZooKeeper its own connection and session)
// through a per-node fault.Counter over the node's pooled Repository. Once
// every session exists, all nodes wait on one barrier; the wall time runs
// from its release to the last node holding an id. Then the ids are checked
// (unique, in range, and the registry's worker_id and reservation nodes
// agree; a duplicate fails the run loudly), the sessions are closed and the
// namespace is deleted.
//
// Counting rule: "rt/node" is what the fault.Counter sees, one per call of
// the registry contract (Get, GetMany, Children, List, Commit, CommitFirst,
// CreateExclusiveEphemeral, PutEphemeral...), as the algorithm experiences it. On ZooKeeper a List is one call here but a walk on
// the wire (getChildren per level plus one getData per znode), so "zk
// req/node" also reports the real ZooKeeper requests sent during the wall
// time (counted by a Dialer wrapper on every connection, pings and connects
// excluded; multi = 1) divided by N.
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/internal/workerid"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
)

const (
	algoOurs     = "ours"
	algoLedgered = "ledgered" // ours on a cluster whose ledger and fences exist
	algoBaseline = "baseline"
)

type config struct {
	backends    []string
	ns          []int
	algos       []string
	baselineMax int
	baseRounds  int
	ledgeredNs  []int
	clients     int
	ttl         time.Duration
	timeout     time.Duration
	rounds      int
	parallel    int
	verbose     bool
	cpuProfile  string
	etcd        []string
	zk          []string
}

func main() {
	var c config
	var backends, ns, ledgeredNs, algos, etcdEP, zkServers string
	flag.StringVar(&backends, "backends", "etcd,zookeeper", "registries to run: etcd, zookeeper")
	flag.StringVar(&ns, "n", "64,256,1024", "numbers of nodes starting at once")
	flag.StringVar(&algos, "algos", "ours,ledgered,baseline", "algorithms: ours (a fresh cluster), ledgered (ours on a cluster whose ledger and 1024 fences exist, as every start after a cluster's first), baseline")
	flag.StringVar(&ledgeredNs, "ledgered-n", "1024", "node counts of the ledgered cases")
	flag.IntVar(&c.baselineMax, "baseline-max", 256, "run the baseline only for N <= this (at 1024 it takes hours on etcd)")
	flag.IntVar(&c.baseRounds, "baseline-rounds", 1, "run the baseline only in the first this many rounds (it takes minutes)")
	flag.IntVar(&c.clients, "clients", 32, "Repository clients shared by the nodes of a case (0: one per node); sessions are always one per node")
	flag.DurationVar(&c.ttl, "ttl", 30*time.Second, "session TTL (etcd lease / ZooKeeper session timeout)")
	flag.DurationVar(&c.timeout, "timeout", 15*time.Minute, "limit for one case")
	flag.IntVar(&c.rounds, "rounds", 1, "times to run the whole table; the targets are then counted over the rounds")
	flag.IntVar(&c.parallel, "setup-parallel", 64, "sessions opened or closed at once during setup and cleanup")
	flag.BoolVar(&c.verbose, "v", false, "print per-operation counts of each case")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the first case's timed part (barrier to last id) to this file")
	flag.StringVar(&etcdEP, "etcd", os.Getenv(testenv.EnvEtcdEndpoints), "etcd endpoints (default $"+testenv.EnvEtcdEndpoints+")")
	flag.StringVar(&zkServers, "zk", os.Getenv(testenv.EnvZooKeeper), "ZooKeeper servers (default $"+testenv.EnvZooKeeper+")")
	flag.Parse()

	c.backends = splitList(backends)
	c.algos = splitList(algos)
	c.etcd = splitList(etcdEP)
	c.zk = splitList(zkServers)
	c.ns = parseCounts("-n", ns)
	c.ledgeredNs = parseCounts("-ledgered-n", ledgeredNs)
	for _, b := range c.backends {
		switch b {
		case "etcd":
			if len(c.etcd) == 0 {
				fatalf("etcd: no endpoints: set -etcd or $%s (source scripts/servers.sh && start_servers)", testenv.EnvEtcdEndpoints)
			}
		case "zookeeper":
			if len(c.zk) == 0 {
				fatalf("zookeeper: no servers: set -zk or $%s (source scripts/servers.sh && start_servers)", testenv.EnvZooKeeper)
			}
		default:
			fatalf("-backends: unknown registry %q (etcd, zookeeper)", b)
		}
	}
	for _, a := range c.algos {
		if a != algoOurs && a != algoLedgered && a != algoBaseline {
			fatalf("-algos: unknown algorithm %q (ours, ledgered, baseline)", a)
		}
	}
	checkFileLimit(c)
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			fatalf("%v", err)
		}
		profile = f
		defer f.Close()
	}

	failed := false
	var rounds [][]*result
	fmt.Printf("workeridbench: %d cores, %s, etcd %v, ZooKeeper %v\n", runtime.NumCPU(), runtime.Version(), c.etcd, c.zk)
	for round := 1; round <= c.rounds; round++ {
		fmt.Printf("\n== round %d of %d: clients=%d (0 = one per node), one session per node, TTL %v; load average (1/5/15 min) %s\n",
			round, c.rounds, c.clients, c.ttl, loadAvg())
		var results []*result
		for _, b := range c.backends {
			for _, n := range c.ns {
				for _, a := range c.algos {
					switch {
					case a == algoBaseline && (n > c.baselineMax || round > c.baseRounds):
						continue
					case a == algoLedgered && !slices.Contains(c.ledgeredNs, n):
						continue
					}
					fmt.Fprintf(os.Stderr, "running %s N=%d %s...\n", b, n, a)
					r := runCase(c, b, n, a)
					if r.err != nil {
						failed = true
						fmt.Fprintf(os.Stderr, "FAIL %s N=%d %s: %v\n", b, n, a, r.err)
					}
					if c.verbose {
						fmt.Fprintf(os.Stderr, "  %s N=%d %s: setup %v, calls %v, zk requests %v\n", b, n, a, r.setup.Round(time.Millisecond), r.calls, r.zkOps)
					}
					results = append(results, r)
				}
			}
		}
		printTable(results)
		printTargets(results)
		rounds = append(rounds, results)
	}
	if len(rounds) > 1 {
		printSummary(rounds)
	}
	if failed {
		fmt.Fprintln(os.Stderr, "workeridbench: FAILED (see FAIL lines above)")
		os.Exit(1)
	}
}

func parseCounts(flagName, list string) []int {
	var out []int
	for _, s := range splitList(list) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > workerid.Count {
			fatalf("%s: %q is not a node count in [1, %d]", flagName, s, workerid.Count)
		}
		out = append(out, n)
	}
	return out
}

// loadAvg returns /proc/loadavg's first three fields, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "workeridbench: "+format+"\n", args...)
	os.Exit(2)
}

// checkFileLimit refuses to start when the open-file limit cannot hold the
// largest case (the Go runtime has already raised the soft limit to the
// hard one): on ZooKeeper every node's session is its own connection.
func checkFileLimit(c config) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	need := uint64(slices.Max(c.ns))*2 + 256
	if lim.Cur < need {
		fatalf("open-file limit %d is below the %d this run needs (one connection per ZooKeeper session, plus clients): raise it with `ulimit -n 65536`", lim.Cur, need)
	}
}

// result is one case: a registry, N and an algorithm.
type result struct {
	backend, algo string
	n             int
	wall          time.Duration
	setup         time.Duration
	p50, p99      time.Duration // node completion times after the barrier
	meanRT        float64
	maxRT         int64
	conflicts     int64
	zkReqs        int64  // real ZooKeeper requests during the wall time; -1 on etcd
	load          string // load average when the case started
	calls         map[string]int64
	zkOps         map[string]int64
	err           error
}

// profile, when set, receives a CPU profile of the first case's timed part.
var profile *os.File

type node struct {
	inst    string
	counter *fault.Counter
	total   int64            // registry calls until it held an id
	counts  map[string]int64 // the same, per operation
	sess    registry.Session
	id      int
	end     time.Time
	err     error
}

func newNamespace(backend string, n int, algo string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("sk_widbench_%s_%d_%s_%s", backend, n, algo, hex.EncodeToString(b))
}

func openRepo(ctx context.Context, c config, backend, ns string, wire *wireCounter) (registry.Repository, error) {
	if backend == "etcd" {
		return etcd.Open(ctx, etcd.Config{Endpoints: c.etcd, Namespace: ns, RequestTimeout: time.Minute})
	}
	return zookeeper.Open(ctx, zookeeper.Config{
		Servers: c.zk, Namespace: ns, SessionTimeout: c.ttl,
		ConnectTimeout: time.Minute, Dialer: wire.dial,
	})
}

// each runs fn(i) for i in [0, n) on at most par goroutines and returns the
// first error.
func each(n, par int, fn func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs error
		next atomic.Int64
	)
	for range min(par, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					errs = errors.Join(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return errs
}

func runCase(c config, backend string, n int, algo string) *result {
	r := &result{backend: backend, algo: algo, n: n, zkReqs: -1, load: loadAvg()}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	ns := newNamespace(backend, n, algo)
	wire := &wireCounter{}

	setupStart := time.Now()
	clients := c.clients
	if clients <= 0 || clients > n {
		clients = n
	}
	pool := make([]registry.Repository, clients)
	defer func() {
		for _, p := range pool {
			if p != nil {
				_ = p.Close()
			}
		}
	}()
	if err := each(clients, c.parallel, func(i int) error {
		var err error
		pool[i], err = openRepo(ctx, c, backend, ns, wire)
		return err
	}); err != nil {
		r.err = fmt.Errorf("open clients: %w", err)
		return r
	}
	nodes := make([]*node, n)
	for i := range nodes {
		nodes[i] = &node{inst: fmt.Sprintf("bench-node-%04d", i), counter: fault.Count(pool[i%clients]), id: -1}
	}
	defer cleanup(c, pool[0], nodes, backend, ns)
	if err := each(n, c.parallel, func(i int) error {
		s, err := nodes[i].counter.NewSession(ctx, registry.SessionOptions{TTL: c.ttl})
		nodes[i].sess = s
		return err
	}); err != nil {
		r.err = fmt.Errorf("open sessions: %w", err)
		return r
	}
	r.setup = time.Since(setupStart)

	for _, nd := range nodes {
		nd.counter.Reset()
	}
	if algo == algoLedgered {
		// A cluster used before: the ledger and every fence exist.
		s, err := pool[0].NewSession(ctx, registry.SessionOptions{TTL: c.ttl})
		if err == nil {
			_, err = workerid.EnsureLedger(ctx, pool[0], s, "bench-setup", workerid.Options{})
			_ = s.Close(ctx)
		}
		if err != nil {
			r.err = fmt.Errorf("create the ledger: %w", err)
			return r
		}
	}
	var stats workerid.Stats
	var ready, done, background sync.WaitGroup
	start := make(chan struct{})
	for _, nd := range nodes {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			var h *workerid.Holding
			if algo != algoBaseline {
				h, nd.err = workerid.Acquire(ctx, nd.counter, nd.sess, nd.inst, workerid.Options{Stats: &stats})
				if h != nil {
					nd.id = h.WorkerID
				}
			} else {
				nd.id, nd.err = workerid.BaselineAcquire(ctx, nd.counter, nd.sess, nd.inst, &stats)
			}
			nd.end = time.Now()
			nd.total, nd.counts = nd.counter.Total(), nd.counter.Counts()
			if h != nil && !h.Ledgered {
				// As cluster.Node does: create the ledger in the
				// background after a random pause of up to a second.
				background.Add(1)
				go func() {
					defer background.Done()
					time.Sleep(mrand.N(time.Second))
					if _, err := workerid.EnsureLedger(ctx, nd.counter, nd.sess, nd.inst, workerid.Options{}); err != nil {
						fmt.Fprintf(os.Stderr, "%s: ledger: %v\n", nd.inst, err)
					}
				}()
			}
		}()
	}
	ready.Wait()
	wire.reset()
	if profile != nil {
		_ = pprof.StartCPUProfile(profile)
	}
	t0 := time.Now()
	close(start)
	done.Wait()
	if profile != nil {
		pprof.StopCPUProfile()
		profile = nil // one profile per file: the first case's
	}
	if backend == "zookeeper" {
		r.zkReqs, r.zkOps = wire.snapshot()
	}
	background.Wait() // the ledger, created meanwhile, before the checks and cleanup

	var errs []error
	lat := make([]time.Duration, 0, n)
	var total int64
	r.calls = map[string]int64{}
	for _, nd := range nodes {
		if nd.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", nd.inst, nd.err))
			continue
		}
		d := nd.end.Sub(t0)
		lat = append(lat, d)
		r.wall = max(r.wall, d)
		t := nd.total
		total += t
		r.maxRT = max(r.maxRT, t)
		for op, k := range nd.counts {
			if k > 0 {
				r.calls[op] += k
			}
		}
	}
	if len(errs) > 0 {
		r.err = fmt.Errorf("%d of %d nodes failed, first: %w", len(errs), n, errs[0])
		return r
	}
	slices.Sort(lat)
	r.p50, r.p99 = lat[len(lat)/2], lat[(len(lat)*99)/100]
	r.meanRT = float64(total) / float64(n)
	r.conflicts = stats.Conflicts()
	r.err = verify(ctx, pool[0], nodes)
	return r
}

// verify fails on a duplicate or out-of-range id, and checks that the
// registry agrees: one worker_id node per node with its id, and each id's
// reservation held by that node.
func verify(ctx context.Context, repo registry.Repository, nodes []*node) error {
	owner := map[int]string{}
	for _, nd := range nodes {
		if nd.id < 0 || nd.id >= workerid.Count {
			return fmt.Errorf("%s got worker id %d, outside [0, %d)", nd.inst, nd.id, workerid.Count)
		}
		if other, dup := owner[nd.id]; dup {
			return fmt.Errorf("DUPLICATE WORKER ID %d: held by both %s and %s", nd.id, other, nd.inst)
		}
		owner[nd.id] = nd.inst
	}
	ids, err := repo.List(ctx, paths.WorkerIDRoot)
	if err != nil {
		return fmt.Errorf("verify: list worker ids: %w", err)
	}
	res, err := repo.List(ctx, paths.ReservationRoot)
	if err != nil {
		return fmt.Errorf("verify: list reservations: %w", err)
	}
	if len(ids) != len(nodes) || len(res) != len(nodes) {
		return fmt.Errorf("verify: %d nodes but %d worker_id nodes and %d reservations in the registry", len(nodes), len(ids), len(res))
	}
	seen := map[string]bool{}
	for _, kv := range ids {
		seen[string(kv.Value)] = true
	}
	if len(seen) != len(nodes) {
		return fmt.Errorf("DUPLICATE WORKER ID in the registry: %d worker_id nodes carry only %d distinct ids", len(ids), len(seen))
	}
	byKey := map[string]string{}
	for _, kv := range append(ids, res...) {
		byKey[kv.Key] = string(kv.Value)
	}
	for _, nd := range nodes {
		wk, _ := paths.WorkerID(nd.inst)
		rk, _ := paths.Reservation(nd.id)
		if byKey[wk] != strconv.Itoa(nd.id) || byKey[rk] != nd.inst {
			return fmt.Errorf("verify: %s holds %d, but the registry has worker_id=%q and reservation holder %q", nd.inst, nd.id, byKey[wk], byKey[rk])
		}
	}
	return nil
}

// cleanup closes every session and deletes the namespace.
func cleanup(c config, repo registry.Repository, nodes []*node, backend, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_ = each(len(nodes), c.parallel, func(i int) error {
		if s := nodes[i].sess; s != nil {
			return s.Close(ctx)
		}
		return nil
	})
	if err := repo.Delete(ctx, "/"); err != nil {
		fmt.Fprintf(os.Stderr, "cleanup %s: %v\n", ns, err)
	}
	if zr, ok := repo.(*zookeeper.Repo); ok {
		_ = zr.Conn().Delete("/"+ns, -1) // Delete("/") keeps the namespace root
	}
}

func printTable(results []*result) {
	ours := map[string]*result{}
	for _, r := range results {
		if r.algo == algoOurs && r.err == nil {
			ours[fmt.Sprint(r.backend, r.n)] = r
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "registry\tN\talgorithm\twall\trt/node mean\trt/node max\tconflicts\tzk req/node\tnode p50\tnode p99\tbaseline/ours\tload at start\t")
	for _, r := range results {
		if r.err != nil {
			fmt.Fprintf(tw, "%s\t%d\t%s\tFAILED\t\t\t\t\t\t\t\t%s\t\n", r.backend, r.n, r.algo, r.load)
			continue
		}
		zk := "-"
		if r.zkReqs >= 0 {
			zk = fmt.Sprintf("%.1f", float64(r.zkReqs)/float64(r.n))
		}
		ratio := ""
		if o := ours[fmt.Sprint(r.backend, r.n)]; r.algo == algoBaseline && o != nil {
			ratio = fmt.Sprintf("%.1fx", r.wall.Seconds()/o.wall.Seconds())
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.2f\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n",
			r.backend, r.n, r.algo, fmtDur(r.wall), r.meanRT, r.maxRT, r.conflicts, zk, fmtDur(r.p50), fmtDur(r.p99), ratio, r.load)
	}
	_ = tw.Flush()
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	default:
		return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
	}
}

// check is one target judged on one round's results.
type check struct {
	name  string
	value string
	ok    bool
}

// targets judges the README's targets on the cases of one round that ran.
func targets(results []*result) []check {
	find := func(backend string, n int, algo string) *result {
		for _, r := range results {
			if r.backend == backend && r.n == n && r.algo == algo && r.err == nil {
				return r
			}
		}
		return nil
	}
	var out []check
	for _, a := range []string{algoOurs, algoLedgered} {
		if r := find("etcd", 1024, a); r != nil {
			out = append(out,
				check{fmt.Sprintf("etcd 1024 nodes (%s) in <= 2 s", a), fmtDur(r.wall), r.wall <= 2*time.Second},
				check{fmt.Sprintf("etcd 1024 nodes (%s) <= 4 calls/node (mean)", a), fmt.Sprintf("%.2f, worst node %d", r.meanRT, r.maxRT), r.meanRT <= 4})
		}
	}
	for _, a := range []string{algoOurs, algoLedgered} {
		if r := find("zookeeper", 1024, a); r != nil {
			out = append(out, check{fmt.Sprintf("zookeeper 1024 nodes (%s) in <= 3 s", a), fmtDur(r.wall), r.wall <= 3*time.Second})
		}
	}
	for _, b := range []string{"etcd", "zookeeper"} {
		o, base := find(b, 256, algoOurs), find(b, 256, algoBaseline)
		if o != nil && base != nil {
			ratio := base.wall.Seconds() / o.wall.Seconds()
			out = append(out, check{fmt.Sprintf("%s 256 nodes >= 50x the baseline", b), fmt.Sprintf("%.1fx", ratio), ratio >= 50})
		}
	}
	return out
}

func verdict(ok bool) string {
	if ok {
		return "MET"
	}
	return "MISSED"
}

// printTargets prints one round's targets.
func printTargets(results []*result) {
	fmt.Println("targets:")
	for _, c := range targets(results) {
		fmt.Printf("  %-50s %s (%s)\n", c.name+":", verdict(c.ok), c.value)
	}
}

// printSummary counts each target over the rounds: it is met when it was
// met in at least 4 of every 5 rounds that measured it.
func printSummary(rounds [][]*result) {
	type tally struct {
		values []string
		met    int
	}
	// Every target that any round measured, in targets' order.
	var all []*result
	for _, rs := range rounds {
		all = append(all, rs...)
	}
	var order []string
	by := map[string]*tally{}
	for _, c := range targets(all) {
		order = append(order, c.name)
		by[c.name] = &tally{}
	}
	for _, rs := range rounds {
		for _, c := range targets(rs) {
			t := by[c.name]
			mark := ""
			if !c.ok {
				mark = " (missed)"
			}
			t.values = append(t.values, c.value+mark)
			if c.ok {
				t.met++
			}
		}
	}
	fmt.Printf("\n== summary of %d rounds (a target holds when met in at least 4 of 5 rounds that measured it); load average now %s\n", len(rounds), loadAvg())
	for _, name := range order {
		t := by[name]
		need := (4*len(t.values) + 4) / 5
		fmt.Printf("  %-50s %s in %d of %d: %s\n", name+":", verdict(t.met >= need), t.met, len(t.values), strings.Join(t.values, "; "))
	}
}

// wireCounter counts the requests sent on ZooKeeper connections, by opcode,
// from the request header of each packet (the client writes one packet per
// Write). The connect request (each connection's first packet) and pings,
// auth and set-watches packets (negative xids) are not counted.
type wireCounter struct {
	ops [256]atomic.Int64
}

func (w *wireCounter) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, w: w}, nil
}

func (w *wireCounter) reset() {
	for i := range w.ops {
		w.ops[i].Store(0)
	}
}

var zkOpNames = map[uint8]string{
	1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData", 8: "getChildren",
	12: "getChildren2", 13: "check", 14: "multi", 19: "createContainer", 245: "close",
}

func (w *wireCounter) snapshot() (int64, map[string]int64) {
	var total int64
	m := map[string]int64{}
	for i := range w.ops {
		k := w.ops[i].Load()
		if k == 0 {
			continue
		}
		total += k
		name, ok := zkOpNames[uint8(i)]
		if !ok {
			name = fmt.Sprintf("op%d", int8(i))
		}
		m[name] = k
	}
	return total, m
}

type countingConn struct {
	net.Conn
	w         *wireCounter
	connected atomic.Bool
}

func (c *countingConn) Write(b []byte) (int, error) {
	if !c.connected.Swap(true) {
		return c.Conn.Write(b) // the connect request has no header
	}
	if len(b) >= 12 {
		xid := int32(binary.BigEndian.Uint32(b[4:8]))
		op := int32(binary.BigEndian.Uint32(b[8:12]))
		if xid >= 0 {
			c.w.ops[uint8(op)].Add(1)
		}
	}
	return c.Conn.Write(b)
}
