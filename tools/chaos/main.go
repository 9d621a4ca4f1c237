// Command chaos is shardkeeper's fault-injection harness: it shows, with a
// real 3-member etcd cluster or ZooKeeper ensemble and real node processes
// in network namespaces, that no key is issued twice through partitions,
// one-way loss, pauses, crashes, registry leader failures, clock steps and
// an operator deleting fences and reservations, and that the same faults do
// produce duplicates or overlaps without the fence, with the fence but
// without its floor, and with a deleted fence read as floor 0 (the negative
// controls). With --workload distsql it runs shardkeeper nodes under the
// same faults instead, with DistSQL clients on their consoles and HTTP
// APIs, and checks the history of every rule item for linearizability,
// and the nodes' views and digests against the registry's after the
// faults (its negative controls: changes without their conditions, and
// answered before the nodes' digests).
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
	"maps"
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
	controls := fs.String("negative-control", "", "negative controls run after the fenced run with the same schedule,\n"+
		"a comma-separated list or none; keys workload (default lease,floor,absent): lease (no fence, lease only;\n"+
		"must find duplicates), floor (fence on, the previous holder's reservation ignored; must find duplicates\n"+
		"or (worker id, ms) overlaps), absent (fence on, a deleted fence read as floor 0; must find duplicates);\n"+
		"distsql workload (default overwrite,early-ack): overwrite (rule changes without their conditions),\n"+
		"early-ack (changes answered before the registry confirms their commit); each must make the history NOT linearizable")
	workload := fs.String("workload", record.WorkloadKeys, "keys (key-issuing nodes) or distsql (shardkeeper nodes, DistSQL clients\n"+
		"on their consoles and HTTP APIs; --nodes defaults to 3; needs --shardkeeper)")
	shardkeeper := fs.String("shardkeeper", "", "the shardkeeper program of the distsql workload (default: shardkeeper beside this program)")
	_ = fs.Parse(args)
	distsqlRun := *workload == record.WorkloadDistSQL
	if !distsqlRun && *workload != record.WorkloadKeys {
		return fmt.Errorf("--workload %q: want keys or distsql", *workload)
	}
	if distsqlRun && !flagSet(fs, "nodes") {
		*nodes = 3
	}
	if *controls == "" {
		*controls = "lease,floor,absent"
		if distsqlRun {
			*controls = "overwrite,early-ack"
		}
	}
	variants, err := parseControls(*controls, distsqlRun)
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
			if distsqlRun {
				cfg.Workload, cfg.Shardkeeper = record.WorkloadDistSQL, *shardkeeper
			}
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

// flagSet says whether the flag name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseControls returns the fenced variant followed by the negative
// controls named in s (see the --negative-control flag), those of the
// DistSQL workload when distsqlRun.
func parseControls(s string, distsqlRun bool) ([]record.Variant, error) {
	variants := []record.Variant{record.VariantFenced}
	if s == "none" {
		return variants, nil
	}
	names := map[string]record.Variant{"lease": record.VariantLeaseOnly, "floor": record.VariantIgnoreFloor,
		"absent": record.VariantTrustAbsentFence}
	want := "lease, floor and absent"
	if distsqlRun {
		names = map[string]record.Variant{"overwrite": record.VariantUnconditional, "early-ack": record.VariantAckBeforeCommit}
		want = "overwrite and early-ack"
	}
	for _, name := range strings.Split(s, ",") {
		v, ok := names[strings.TrimSpace(name)]
		if !ok {
			return nil, fmt.Errorf("--negative-control %q: want a comma-separated list of %s, or none", s, want)
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
	if run, err := record.Load(dir); err == nil && run.Info.Workload == record.WorkloadDistSQL {
		return checkDistSQLRun(dir, run, w)
	}
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
	if res.Offline > 0 {
		fmt.Fprintf(w, "  %d observations of nodes the registry did not list online at the time left out (the guarantee is every online node's)\n", res.Offline)
	}
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

// checkDistSQLRun checks the DistSQL run in dir (its history, see
// checkHistory, and what the workload measured after the faults, see
// harness.DistSQLStats), writes report.txt there and the report to w; it
// says whether the run passed: a fenced run when every check holds, a
// negative control when its history is NOT linearizable (the violation
// it must find).
func checkDistSQLRun(dir string, run *record.Run, w io.Writer) (bool, error) {
	var text strings.Builder
	linearizable, err := checkHistory(dir, &text)
	if err != nil {
		return false, err
	}
	history := text.String()
	text.Reset()
	info := run.Info
	var failures []string
	st, err := harness.ReadDistSQLStats(dir)
	switch {
	case err != nil:
		failures = append(failures, fmt.Sprintf("the workload's figures: %v", err))
	case st.Error != "":
		failures = append(failures, "the workload: "+st.Error)
	}
	control := info.Variant.Control()
	switch {
	case control && linearizable:
		failures = append(failures, "the control found no violation: the history is linearizable (the faults or the workload do not bite)")
	case !control && !linearizable:
		failures = append(failures, "the history is NOT linearizable")
	}
	if control && len(failures) > 0 && !linearizable {
		// The control found its violation; the rest (views that do not
		// agree) is what a control may well cause.
		failures = nil
	}
	verdict := "PASS"
	if len(failures) > 0 {
		verdict = "FAIL"
	}
	fmt.Fprintf(&text, "Chaos run (DistSQL): %s (%s)\n", verdict, info.Variant.Label())
	for _, f := range failures {
		fmt.Fprintf(&text, "  - %s\n", f)
	}
	if control && !linearizable {
		line, _, _ := strings.Cut(history, "\n")
		fmt.Fprintf(&text, "  violation found: %s\n", strings.TrimPrefix(line, "DistSQL history: "))
	}
	fmt.Fprintf(&text, "\nRun\n  seed %d, %s (%s)\n  %d shardkeeper nodes, session TTL %s, ",
		info.Seed, info.Registry, strings.Join(info.Versions, ", "), info.Nodes, info.SessionTTL)
	if info.End > 0 {
		fmt.Fprintf(&text, "ran %s (faults, then settling)\n", time.Duration(info.End-info.Start).Round(time.Second))
	} else {
		fmt.Fprintf(&text, "did not end (no end time)\n")
	}
	kinds := map[string]int{}
	for _, f := range run.Faults {
		kinds[f.Kind]++
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, kinds[k]))
	}
	fmt.Fprintf(&text, "  faults %d: %s\n\n", len(run.Faults), strings.Join(parts, ", "))
	text.WriteString(history)
	if err == nil {
		fmt.Fprintf(&text, "DistSQL convergence: ")
		if st.Error == "" {
			fmt.Fprintf(&text, "every node's view equal, and the registry's, %s after the faults stopped (%d rounds of reads);\n"+
				"  every node's digest the registry's %s after (bound %s)\n",
				st.Converged.Round(time.Millisecond), st.Rounds, st.Digests.Round(time.Millisecond), st.Settle)
		} else {
			fmt.Fprintf(&text, "NOT reached: %s\n", st.Error)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "report.txt"), []byte(text.String()), 0o644); err != nil {
		return false, err
	}
	fmt.Fprintf(w, "== %s\n%s\n", dir, text.String())
	return len(failures) == 0, nil
}
