// Package harness performs one chaos run: it builds the test network and
// the registry ensemble, leaves a small pool of worker ids free, starts the
// node processes, lets the nemesis inject faults, and tears everything
// down, leaving the records in the run directory for the checker.
package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/retry"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
	"github.com/shardkeeper/shardkeeper/snowflake"
	"github.com/shardkeeper/shardkeeper/tools/chaos/ensemble"
	"github.com/shardkeeper/shardkeeper/tools/chaos/nemesis"
	"github.com/shardkeeper/shardkeeper/tools/chaos/netns"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
)

// NamePrefix starts the name of every network namespace and link a run
// creates; netns.CleanupStale(NamePrefix) removes a crashed run's
// leftovers. One run at a time per machine.
const NamePrefix = "skc"

// DefaultSubnet is the test network's address range; it exists only inside
// the run's namespaces and its bridge.
var DefaultSubnet = netip.MustParsePrefix("10.213.0.0/24")

// registryNamespace is where the run's keys live in the registry.
const registryNamespace = "chaos"

// Config configures a run.
type Config struct {
	Dir         string        // the run directory; created, must not hold a run already
	Registry    string        // "etcd" or "zookeeper"
	Nodes       int           // node processes; at least 5
	Pool        int           // free worker ids; 0 means Nodes-2
	Duration    time.Duration // how long faults are injected, at least (see endFaults)
	MaxKeys     int64         // stop once the nodes issued this many keys in all; 0: no bound
	Rate        int           // keys per second per node; 0 means 2000
	Seed        int64         // the fault schedule's seed
	SessionTTL  time.Duration // 0 means 2 s
	Reservation time.Duration // W; 0 means 600 ms
	FaultEvery  time.Duration // mean gap between the faults of a lane; 0 means 1.5 s
	// DeleteEvery is the mean gap between an operator's deletions of worker
	// ids' reservations and fences; 0 means 3 s, negative means none.
	DeleteEvery time.Duration
	Variant     record.Variant // the fenced run or a negative control; "" means record.VariantFenced
	Binary      string         // the program with the "node" subcommand; "" means this one
	// Workload is record.WorkloadKeys ("" means it: key-issuing nodes,
	// the program Binary) or record.WorkloadDistSQL: shardkeeper nodes
	// (the program Shardkeeper, serve) with their consoles and HTTP APIs,
	// and the DistSQL clients of package distsql in the harness; its
	// faults are the partitions, one-way losses, pauses and kills of the
	// nodes and the registry lane's (no clock faults, no operator lane).
	Workload string
	// Shardkeeper is the shardkeeper program of the DistSQL workload;
	// "" means "shardkeeper" beside Binary.
	Shardkeeper string
	Log         *slog.Logger // nil means slog.Default()
	// Prefix names the run's namespaces and links; "" means NamePrefix.
	// Leftovers with this prefix are removed before the run starts.
	Prefix string
	// Subnet is the test network; the zero value means DefaultSubnet.
	Subnet netip.Prefix
}

func (c *Config) defaults() error {
	if c.Pool == 0 {
		c.Pool = c.Nodes - 2
	}
	if c.Rate == 0 {
		c.Rate = 2000
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = 2 * time.Second
	}
	if c.Reservation == 0 {
		c.Reservation = 600 * time.Millisecond
	}
	if c.FaultEvery == 0 {
		c.FaultEvery = 1500 * time.Millisecond
	}
	if c.DeleteEvery == 0 {
		c.DeleteEvery = 3 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Prefix == "" {
		c.Prefix = NamePrefix
	}
	if c.Variant == "" {
		c.Variant = record.VariantFenced
	}
	if !c.Subnet.IsValid() {
		c.Subnet = DefaultSubnet
	}
	if c.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		c.Binary = exe
	}
	if c.Shardkeeper == "" {
		c.Shardkeeper = filepath.Join(filepath.Dir(c.Binary), "shardkeeper")
	}
	var errs []error
	distsqlRun := c.Workload == record.WorkloadDistSQL
	switch {
	case c.Workload != "" && c.Workload != record.WorkloadKeys && !distsqlRun:
		errs = append(errs, fmt.Errorf("workload %q: want %s or %s", c.Workload, record.WorkloadKeys, record.WorkloadDistSQL))
	case distsqlRun && c.Variant != record.VariantFenced && c.Variant != record.VariantUnconditional && c.Variant != record.VariantAckBeforeCommit:
		errs = append(errs, fmt.Errorf("variant %s: the DistSQL workload's are %s, %s and %s", c.Variant, record.VariantFenced,
			record.VariantUnconditional, record.VariantAckBeforeCommit))
	case !distsqlRun && (c.Variant == record.VariantUnconditional || c.Variant == record.VariantAckBeforeCommit):
		errs = append(errs, fmt.Errorf("variant %s is a control of the DistSQL workload", c.Variant))
	}
	if distsqlRun {
		if _, err := os.Stat(c.Shardkeeper); err != nil {
			errs = append(errs, fmt.Errorf("the DistSQL workload runs shardkeeper nodes: %w (go build -o bin/shardkeeper ./cmd/shardkeeper)", err))
		}
	}
	if c.Registry != "etcd" && c.Registry != "zookeeper" {
		errs = append(errs, fmt.Errorf("registry %q: want etcd or zookeeper", c.Registry))
	}
	if _, err := record.ParseVariant(string(c.Variant)); err != nil {
		errs = append(errs, err)
	}
	minNodes := 5
	if distsqlRun {
		minNodes = 3
	}
	if c.Nodes < minNodes || c.Nodes > 64 {
		errs = append(errs, fmt.Errorf("nodes %d: want %d to 64", c.Nodes, minNodes))
	}
	if !distsqlRun && (c.Pool < 1 || c.Pool >= c.Nodes) {
		errs = append(errs, fmt.Errorf("pool %d: want 1 to nodes-1 (%d), so that standby nodes take over at once", c.Pool, c.Nodes-1))
	}
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration %v: want > 0", c.Duration))
	}
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("the harness needs root (network namespaces, routes)"))
	}
	return errors.Join(errs...)
}

// runner is one run in progress.
type runner struct {
	cfg      Config
	log      *slog.Logger
	net      *netns.Network
	ensemble ensemble.Ensemble
	procs    []*nodeProc
	faultsMu sync.Mutex
	// fenceDeletes counts the operator lane's recorded deletions (see
	// endFaults).
	fenceDeletes atomic.Int64
	// stopWorkload ends the DistSQL workload's operations (it then lets
	// the views settle).
	stopWorkload func()
}

// Run performs one run: it builds the network and the registry ensemble,
// leaves cfg.Pool worker ids free (the others are taken by permanent
// fillers), starts the nodes, injects faults for cfg.Duration (or until
// cfg.MaxKeys keys), lets the nodes leave, and tears everything down. The
// run directory keeps the records for checker.Check. Everything it created outside
// the run directory (namespaces, links, processes, server data) is removed
// when it returns, also when ctx is cancelled (an interrupt).
func Run(ctx context.Context, cfg Config) (err error) {
	if err := cfg.defaults(); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, "run.json")); err == nil {
		return fmt.Errorf("chaos: %s already holds a run; choose a new directory", cfg.Dir)
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "nodes"), 0o755); err != nil {
		return err
	}
	if err := netns.CleanupStale(cfg.Prefix); err != nil {
		return fmt.Errorf("chaos: removing an earlier run's leftovers: %w", err)
	}
	r := &runner{cfg: cfg, log: cfg.Log}
	r.net, err = netns.NewNetwork(cfg.Prefix, cfg.Subnet)
	if err != nil {
		return fmt.Errorf("chaos: network: %w", err)
	}
	defer func() { err = errors.Join(err, r.net.Close()) }()

	var serverHosts []*netns.Host
	letter := map[string]string{"etcd": "e", "zookeeper": "z"}[cfg.Registry]
	for i := 1; i <= 3; i++ {
		h, err := r.net.AddHost(fmt.Sprintf("%s%d", letter, i))
		if err != nil {
			return err
		}
		serverHosts = append(serverHosts, h)
	}
	for i := 1; i <= cfg.Nodes; i++ {
		h, err := r.net.AddHost(fmt.Sprintf("g%d", i))
		if err != nil {
			return err
		}
		r.procs = append(r.procs, &nodeProc{r: r, name: h.Name, host: h})
	}
	serverLog, err := os.Create(filepath.Join(cfg.Dir, "servers.log"))
	if err != nil {
		return err
	}
	defer serverLog.Close()
	serverDir, err := os.MkdirTemp("", "shardkeeper-chaos-servers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(serverDir)
	opts := []ensemble.Option{}
	if runtime.NumCPU() >= 2 {
		opts = append(opts, ensemble.WithCPUs("0"))
	}
	start := ensemble.StartEtcd
	if cfg.Registry == "zookeeper" {
		start = ensemble.StartZooKeeper
	}
	r.ensemble, err = start(ctx, serverHosts, serverDir, serverLog, opts...)
	if err != nil {
		return fmt.Errorf("chaos: %s ensemble: %w", cfg.Registry, err)
	}
	defer func() { err = errors.Join(err, r.ensemble.Close()) }()

	distsqlRun := cfg.Workload == record.WorkloadDistSQL
	if distsqlRun {
		err = r.writeServeConf()
	} else {
		err = r.fillPool(ctx)
	}
	if err != nil {
		return fmt.Errorf("chaos: leaving %d worker ids free / writing the nodes' conf: %w", cfg.Pool, err)
	}
	info := record.RunInfo{Seed: cfg.Seed, Registry: cfg.Registry, Versions: []string{r.ensemble.Version(), runtime.Version()},
		Nodes: cfg.Nodes, Pool: cfg.Pool, SessionTTL: cfg.SessionTTL, Reservation: cfg.Reservation, Variant: cfg.Variant,
		Workload: cfg.Workload, EpochMillis: snowflake.DefaultEpochMillis, Start: time.Now().UnixNano()}
	if err := record.WriteRunInfo(cfg.Dir, info); err != nil {
		return err
	}
	defer r.stopAll()
	for _, p := range r.procs {
		if err := p.Start(0); err != nil {
			return err
		}
	}
	var workload chan error
	nodeFaults := []string(nil)
	deleteEvery := max(0, cfg.DeleteEvery)
	if distsqlRun {
		if err := r.prepareDistSQL(ctx); err != nil {
			return fmt.Errorf("chaos: preparing the DistSQL workload: %w", err)
		}
		nodeFaults = []string{record.FaultPartition, record.FaultOneWay, record.FaultPause, record.FaultKill}
		deleteEvery = 0
	}
	r.log.Info("nodes started; injecting faults", "registry", cfg.Registry, "nodes", cfg.Nodes, "pool", cfg.Pool,
		"duration", cfg.Duration, "variant", cfg.Variant, "seed", cfg.Seed)

	faultCtx, stopFaults := context.WithCancel(ctx)
	defer stopFaults()
	go r.endFaults(faultCtx, stopFaults, deleteEvery > 0)
	go r.watchKeys(faultCtx, stopFaults)
	if distsqlRun {
		repo, err := r.openRegistry(ctx)
		if err != nil {
			return fmt.Errorf("chaos: the DistSQL workload's registry client: %w", err)
		}
		defer repo.Close()
		// The workload stops when the faults stopped and healed.
		workloadCtx, stopWorkload := context.WithCancel(ctx)
		defer stopWorkload()
		workload = make(chan error, 1)
		go func() { workload <- r.runDistSQL(workloadCtx, repo) }()
		defer func() {
			stopWorkload()
			if workload != nil {
				<-workload
			}
		}()
		r.stopWorkload = stopWorkload
	}
	nodes := make([]nemesis.Node, len(r.procs))
	for i, p := range r.procs {
		nodes[i] = p
	}
	nemesis.Run(faultCtx, nemesis.Config{Seed: cfg.Seed, Every: cfg.FaultEvery, DeleteEvery: deleteEvery,
		TTL: cfg.SessionTTL, Reservation: cfg.Reservation, Pool: cfg.Pool, Network: r.net, Ensemble: r.ensemble,
		Nodes: nodes, NodeFaults: nodeFaults, Open: r.openRegistry, Record: r.recordFault, Log: r.log})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if distsqlRun {
		r.log.Info("faults stopped and healed; the DistSQL workload settles")
		r.stopWorkload()
		err := <-workload
		workload = nil
		if err != nil {
			return fmt.Errorf("chaos: the DistSQL workload: %w", err)
		}
	}
	r.log.Info("faults stopped; nodes leaving")
	r.stopAll()
	info.End = time.Now().UnixNano()
	return record.WriteRunInfo(cfg.Dir, info)
}

// fillPool reserves every worker id but the first cfg.Pool with a
// permanent (non-ephemeral) filler, so the nodes compete for a small pool.
func (r *runner) fillPool(ctx context.Context) error {
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	repo, err := r.openRegistry(c)
	if err != nil {
		return err
	}
	defer repo.Close()
	for lo := r.cfg.Pool; lo <= paths.MaxWorkerID; lo += 50 {
		var txn registry.Txn
		for id := lo; id < min(lo+50, paths.MaxWorkerID+1); id++ {
			key, _ := paths.Reservation(id)
			txn.Conds = append(txn.Conds, registry.Cond{Key: key})
			txn.Ops = append(txn.Ops, registry.Op{Key: key, Value: []byte("chaos-filler")})
		}
		sess, err := repo.NewSession(c, registry.SessionOptions{})
		if err != nil {
			return err
		}
		_, err = sess.Commit(c, txn)
		_ = sess.Close(c)
		if err != nil {
			return err
		}
	}
	return nil
}

// openRegistry connects the harness (root namespace) to the ensemble.
func (r *runner) openRegistry(ctx context.Context) (registry.Repository, error) {
	if r.cfg.Registry == "zookeeper" {
		return zookeeper.Open(ctx, zookeeper.Config{Servers: r.ensemble.Endpoints(), Namespace: registryNamespace})
	}
	return etcd.Open(ctx, etcd.Config{Endpoints: r.ensemble.Endpoints(), Namespace: registryNamespace})
}

// watchKeys calls stop once the nodes have recorded cfg.MaxKeys keys.
func (r *runner) watchKeys(ctx context.Context, stop func()) {
	if r.cfg.MaxKeys <= 0 {
		return
	}
	for retry.Sleep(ctx, time.Second) {
		var total int64
		_ = filepath.WalkDir(filepath.Join(r.cfg.Dir, "nodes"), func(path string, d os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(path, ".keys") {
				if fi, err := d.Info(); err == nil {
					total += fi.Size() / 8
				}
			}
			return nil
		})
		if total >= r.cfg.MaxKeys {
			r.log.Info("key budget reached", "keys", total)
			stop()
			return
		}
	}
}

func (r *runner) recordFault(f record.FaultRecord) {
	r.faultsMu.Lock()
	defer r.faultsMu.Unlock()
	if err := record.AppendJSONLine(filepath.Join(r.cfg.Dir, "faults.jsonl"), f); err != nil {
		r.log.Error("recording a fault", "err", err)
	}
	if f.Kind == record.FaultFenceDelete {
		r.fenceDeletes.Add(1)
	}
}

// minFenceDeletes is how many of the operator lane's deletions a run with
// the lane has before its faults end; afterBite is how long the faults go
// on after the last of them, for a node to stamp on the deleted worker id.
// Whether a deletion finds an id to delete depends on the timing of the
// other faults (a held, usable id whose new holder's clock is behind), so
// a short run can end without one, and then the negative control that
// reads a deleted fence as floor 0 has nothing to fail on (seen at seed 1
// in CI).
const (
	minFenceDeletes = 2
	afterBite       = 3 * time.Second
)

// endFaults calls stop once the faults have run for cfg.Duration and, when
// deletions is set (the operator lane runs), the lane has recorded
// minFenceDeletes deletions and afterBite has passed since; it waits at
// most cfg.Duration longer for them and then stops anyway, with a
// warning (the checker's reports show the deletions a run had).
func (r *runner) endFaults(ctx context.Context, stop func(), deletions bool) {
	defer stop()
	if !retry.Sleep(ctx, r.cfg.Duration) || !deletions {
		return
	}
	seen, since := r.fenceDeletes.Load(), time.Now()
	deadline := time.Now().Add(r.cfg.Duration)
	for seen < minFenceDeletes || time.Since(since) < afterBite {
		if time.Now().After(deadline) {
			r.log.Warn("faults end with fewer fence deletions than wanted", "deletions", seen, "wanted", minFenceDeletes)
			return
		}
		if !retry.Sleep(ctx, 250*time.Millisecond) {
			return
		}
		if n := r.fenceDeletes.Load(); n != seen {
			seen, since = n, time.Now()
		}
	}
}

// stopAll asks every node to leave, and kills those still there after 10 s.
func (r *runner) stopAll() {
	var wg sync.WaitGroup
	for _, p := range r.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop(10 * time.Second)
		}()
	}
	wg.Wait()
}
