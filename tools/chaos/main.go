// Command chaos is shardkeeper's fault-injection harness: it shows, with a
// real 3-member etcd cluster or ZooKeeper ensemble and real node processes
// in network namespaces, that no key is issued twice through partitions,
// one-way loss, pauses, crashes, registry leader failures, clock steps and
// an operator deleting fences and reservations, and that the same faults do
// produce duplicates or overlaps without the fence, with the fence but
// without its floor, and with a deleted fence read as floor 0 (the negative
// controls).
// It needs root (namespaces and routes) and the Debian packages
// etcd-server, etcd-client and zookeeper.
//
//	chaos run [flags]        runs, checks and reports (exit 1 on any failure)
//	chaos check DIR          checks a run directory again
//	chaos cleanup            removes the namespaces and links of a crashed run
//	chaos node [flags]       one key-issuing node (started by run)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/shardkeeper/shardkeeper/tools/chaos/checker"
	"github.com/shardkeeper/shardkeeper/tools/chaos/harness"
	"github.com/shardkeeper/shardkeeper/tools/chaos/linear"
	"github.com/shardkeeper/shardkeeper/tools/chaos/netns"
	"github.com/shardkeeper/shardkeeper/tools/chaos/node"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
	"github.com/shardkeeper/shardkeeper/tools/chaos/report"
)

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(ctx, os.Args[2:])
	case "check":
		err = checkCmd(os.Args[2:])
	case "cleanup":
		err = netns.CleanupStale(harness.NamePrefix)
	case "node":
		err = nodeCmd(ctx, os.Args[2:])
	case "-h", "--help", "help":
		usage(os.Stdout)
		return
	default:
		fmt.Fprintf(os.Stderr, "chaos: unknown command %q\n", os.Args[1])
		usage(os.Stderr)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  chaos run [--registry etcd|zookeeper|both] [--duration 2m] [--nodes 6] [--out DIR] ...
  chaos check DIR
  chaos cleanup
  chaos node ... (started by run)
Run "chaos run -h" for the run's flags.
`)
}

// errFailed is returned when a run's checks fail.
var errFailed = errors.New("checks failed (see the reports above)")

func runCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("chaos run", flag.ExitOnError)
	registries := fs.String("registry", "both", "etcd, zookeeper or both")
	out := fs.String("out", "", "directory for the runs (default: a new directory under $TMPDIR)")
	nodes := fs.Int("nodes", 6, "node processes (at least 5)")
	pool := fs.Int("pool", 0, "free worker ids (0: nodes-2, so standby nodes take over at once)")
	duration := fs.Duration("duration", 2*time.Minute, "how long faults are injected, per run")
	controlDuration := fs.Duration("control-duration", 0, "how long faults are injected in each negative control\n"+
		"(0: as long as --duration); a shorter control runs the first part of the same schedule")
	maxKeys := fs.Int64("max-keys", 0, "stop a run once this many keys are issued (0: no bound)")
	rate := fs.Int("rate", 2000, "keys per second per node")
	seed := fs.Int64("seed", time.Now().UnixNano()%1_000_000, "the fault schedule's seed")
	ttl := fs.Duration("ttl", 2*time.Second, "registry session TTL")
	reservation := fs.Duration("reservation", 600*time.Millisecond, "the fence's reservation W")
	every := fs.Duration("fault-every", 1500*time.Millisecond, "mean gap between faults on each lane")
	deleteEvery := fs.Duration("delete-every", 3*time.Second, "mean gap between an operator's deletions of the reservations and\n"+
		"fences of worker ids in use (0: none)")
	controls := fs.String("negative-control", "lease,floor,absent", "negative controls run after the fenced run with the same schedule,\n"+
		"a comma-separated list or none: lease (no fence, lease only; must find duplicates), floor (fence on,\n"+
		"the previous holder's reservation ignored; must find duplicates or (worker id, ms) overlaps),\n"+
		"absent (fence on, a deleted fence read as floor 0; must find duplicates)")
	_ = fs.Parse(args)
	variants, err := parseControls(*controls)
	if err != nil {
		return err
	}

	if *out == "" {
		d, err := os.MkdirTemp("", "shardkeeper-chaos-")
		if err != nil {
			return err
		}
		*out = d
	}
	var regs []string
	switch *registries {
	case "both":
		regs = []string{"etcd", "zookeeper"}
	case "etcd", "zookeeper":
		regs = []string{*registries}
	default:
		return fmt.Errorf("--registry %q: want etcd, zookeeper or both", *registries)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	failed := false
	for _, reg := range regs {
		for _, v := range variants {
			name := string(v)
			dir := filepath.Join(*out, reg, name)
			d := *duration
			if v.Control() && *controlDuration > 0 {
				d = *controlDuration
			}
			cfg := harness.Config{Dir: dir, Registry: reg, Nodes: *nodes, Pool: *pool, Duration: d,
				MaxKeys: *maxKeys, Rate: *rate, Seed: *seed, SessionTTL: *ttl, Reservation: *reservation,
				FaultEvery: *every, DeleteEvery: *deleteEvery, Variant: v, Log: log.With("run", reg+"/"+name)}
			if *deleteEvery == 0 {
				cfg.DeleteEvery = -1
			}
			log.Info("run starting", "registry", reg, "variant", name, "dir", dir, "seed", *seed)
			if err := harness.Run(ctx, cfg); err != nil {
				return fmt.Errorf("%s/%s: %w", reg, name, err)
			}
			ok, err := checkRun(dir, os.Stdout)
			if err != nil {
				return err
			}
			failed = failed || !ok
		}
	}
	fmt.Printf("runs in %s\n", *out)
	if failed {
		return errFailed
	}
	return nil
}

// parseControls returns the fenced variant followed by the negative
// controls named in s (see the --negative-control flag).
func parseControls(s string) ([]record.Variant, error) {
	variants := []record.Variant{record.VariantFenced}
	if s == "none" {
		return variants, nil
	}
	names := map[string]record.Variant{"lease": record.VariantLeaseOnly, "floor": record.VariantIgnoreFloor,
		"absent": record.VariantTrustAbsentFence}
	for _, name := range strings.Split(s, ",") {
		v, ok := names[strings.TrimSpace(name)]
		if !ok {
			return nil, fmt.Errorf("--negative-control %q: want a comma-separated list of lease, floor and absent, or none", s)
		}
		if !slices.Contains(variants, v) {
			variants = append(variants, v)
		}
	}
	return variants, nil
}

func checkCmd(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: chaos check DIR")
	}
	ok, err := checkRun(args[0], os.Stdout)
	if err != nil {
		return err
	}
	if !ok {
		return errFailed
	}
	return nil
}

// checkRun checks the run in dir, writes report.txt and plot.svg there and
// the report to w; it says whether the run passed.
func checkRun(dir string, w io.Writer) (bool, error) {
	r, err := checker.Check(dir)
	if err != nil {
		return false, err
	}
	var text strings.Builder
	if err := report.WriteText(&text, r); err != nil {
		return false, err
	}
	linearizable, err := checkHistory(dir, &text)
	if err != nil {
		return false, err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.txt"), []byte(text.String()), 0o644); err != nil {
		return false, err
	}
	plot, err := os.Create(filepath.Join(dir, "plot.svg"))
	if err != nil {
		return false, err
	}
	err = errors.Join(report.WriteSVG(plot, r), plot.Close())
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "== %s\n%s\n", dir, text.String())
	return len(r.Failures()) == 0 && linearizable, nil
}

// historyCheckTime bounds the linearizability check of a run's DistSQL
// history, and again the shrinking of a failure.
const historyCheckTime = 2 * time.Minute

// checkHistory checks the DistSQL history of the run in dir, if it has
// one, and appends its report line to w, followed, when it is not
// linearizable, by the offending observations, the changes around them
// and where the visualisation is. It says whether the history passed (true when there is none).
func checkHistory(dir string, w io.Writer) (bool, error) {
	res, found, err := linear.CheckRun(dir, historyCheckTime)
	if err != nil || !found {
		return !found, err
	}
	fmt.Fprintf(w, "DistSQL history: %s\n", res)
	if !res.Linearizable && !res.Undecided {
		fmt.Fprintf(w, "  observations no order of the changes explains (%d; visualisation: %s):\n",
			len(res.Offending), filepath.Join(dir, linear.HTMLName))
		for _, o := range res.Offending {
			fmt.Fprintf(w, "    %s\n", o)
		}
		fmt.Fprintf(w, "  the changes around them (%d):\n", len(res.Changes))
		for _, o := range res.Changes {
			fmt.Fprintf(w, "    %s\n", o)
		}
	}
	return res.Linearizable, nil
}

func nodeCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("chaos node", flag.ExitOnError)
	var cfg node.Config
	var endpoints string
	fs.StringVar(&cfg.Dir, "dir", "", "run directory")
	fs.StringVar(&cfg.Node, "node", "", "node name")
	fs.StringVar(&cfg.Incarnation, "incarnation", "", "incarnation name (also the instance id)")
	fs.StringVar(&cfg.Registry, "registry", "etcd", "etcd or zookeeper")
	fs.StringVar(&endpoints, "endpoints", "", "comma-separated registry endpoints")
	fs.StringVar(&cfg.Namespace, "namespace", "chaos", "registry namespace")
	fs.DurationVar(&cfg.SessionTTL, "ttl", 2*time.Second, "session TTL")
	fs.DurationVar(&cfg.Reservation, "reservation", 600*time.Millisecond, "reservation W")
	fs.Func("variant", "fenced (default), lease-only (negative control: no fence), ignore-floor (negative control:\n"+
		"fence on, the previous holder's reservation ignored) or trust-absent-fence (negative control: fence on,\n"+
		"a deleted fence read as floor 0)", func(s string) (err error) {
		cfg.Variant, err = record.ParseVariant(s)
		return err
	})
	fs.DurationVar(&cfg.ClockOffset, "clock-offset", 0, "the key clock's offset at start (negative: behind)")
	fs.IntVar(&cfg.Rate, "rate", 2000, "keys per second")
	fs.IntVar(&cfg.Batch, "batch", 16, "keys per request")
	fs.Int64Var(&cfg.MaxKeys, "max-keys", 0, "stop after this many keys")
	_ = fs.Parse(args)
	cfg.Endpoints = strings.Split(endpoints, ",")
	if cfg.Dir == "" || cfg.Node == "" || cfg.Incarnation == "" || endpoints == "" {
		return errors.New("node: --dir, --node, --incarnation and --endpoints are required")
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("incarnation", cfg.Incarnation)
	return node.Run(ctx, cfg, os.Stdin)
}
