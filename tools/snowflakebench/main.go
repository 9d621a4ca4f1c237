// Command snowflakebench measures, in one process and one run, the sustained key
// rate and the CPU cost of this module's snowflake generator next to
// github.com/bwmarrin/snowflake and github.com/sony/sonyflake, and prints a table
// with ratios against bwmarrin measured in the same run.
//
// Each case runs its goroutines for a fixed duration; the CPU time is the
// process's user+system time (getrusage) over that duration, so nothing else
// should run in the process. The machine's other load shows up as noise: read
// the ratios, and rerun with -rounds 3 to take the median. The header prints
// the machine's cores, GOMAXPROCS and load average before and after the run.
//
// Single-key cases run from 1, 2, 8, 16 and 64 goroutines (-goroutines),
// all calling one generator, as the goroutines of a Go service do. Every
// single-key case also checks that each goroutine sees its keys strictly
// increase (the same compare for every generator); a violation is counted
// in the "order errors" column and fails the acceptance.
//
//	go run ./tools/snowflakebench [-d 2s] [-rounds 1] [-goroutines 1,2,8,16,64]
//	    [-gomaxprocs 0] [-check]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	bwmarrin "github.com/bwmarrin/snowflake"
	"github.com/sony/sonyflake"

	"github.com/shardkeeper/shardkeeper/snowflake"
)

// layoutLimit is 4,096 keys per millisecond.
const layoutLimit = 4_096_000.0

type result struct {
	keysPerSec   float64
	cpuPerMKeys  float64 // CPU seconds per million keys
	cpuCores     float64 // CPU seconds per wall second
	allocsPerOp  float64
	keysPerOp    int
	errs         int64
	orderErrs    int64 // keys not above the same goroutine's previous key
	wall         time.Duration
	totalKeys    int64
	callsPerCase int64
}

// op issues keysPerOp keys and reports an error as false. Single-key ops
// also count, in *order, keys not above the goroutine's previous key.
type op func() bool

type benchCase struct {
	name       string
	goroutines int
	keysPerOp  int
	baseline   string // name of the bwmarrin case to compare with
	// newOps returns one op per goroutine over a fresh generator; op i
	// adds its order errors to order[i].
	newOps func(order []int64) []op
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func run(c benchCase, d time.Duration) result {
	order := make([]int64, c.goroutines)
	ops := c.newOps(order)
	var stop atomic.Bool
	counts := make([]int64, c.goroutines)
	errs := make([]int64, c.goroutines)
	var wg sync.WaitGroup
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	start := make(chan struct{})
	for i := range c.goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := ops[i]
			<-start
			var n, e int64
			for !stop.Load() {
				for range 16 {
					if !f() {
						e++
					}
				}
				n += 16
			}
			counts[i], errs[i] = n, e
		}()
	}
	cpu0, t0 := cpuNow(), time.Now()
	close(start)
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	wall, cpu := time.Since(t0), cpuNow()-cpu0
	runtime.ReadMemStats(&ms)
	var calls, nerr, norder int64
	for i := range counts {
		calls += counts[i]
		nerr += errs[i]
		norder += order[i]
	}
	keys := (calls - nerr) * int64(c.keysPerOp)
	return result{
		keysPerSec:   float64(keys) / wall.Seconds(),
		cpuPerMKeys:  cpu.Seconds() / (float64(keys) / 1e6),
		cpuCores:     cpu.Seconds() / wall.Seconds(),
		allocsPerOp:  float64(ms.Mallocs-mallocs) / float64(calls),
		keysPerOp:    c.keysPerOp,
		errs:         nerr,
		orderErrs:    norder,
		wall:         wall,
		totalKeys:    keys,
		callsPerCase: calls,
	}
}

// increasing wraps next (one key, ok) to count, in *bad, keys not above
// the previous key it returned.
func increasing(next func() (int64, bool), bad *int64) op {
	last := int64(-1)
	return func() bool {
		k, ok := next()
		if !ok {
			return false
		}
		if k <= last {
			*bad++
		}
		last = k
		return true
	}
}

func shardkeeperNextID(order []int64) []op {
	g, err := snowflake.New(snowflake.DefaultConfig())
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	ops := make([]op, len(order))
	for i := range ops {
		ops[i] = increasing(func() (int64, bool) { k, err := g.NextID(ctx); return k, err == nil }, &order[i])
	}
	return ops
}

func shardkeeperNextIDs(order []int64) []op {
	g, err := snowflake.New(snowflake.DefaultConfig())
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	ops := make([]op, len(order))
	for i := range ops {
		ops[i] = func() bool { _, err := g.NextIDs(ctx, 1000); return err == nil }
	}
	return ops
}

func shardkeeperAppendIDs(order []int64) []op {
	g, err := snowflake.New(snowflake.DefaultConfig())
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	ops := make([]op, len(order))
	for i := range ops {
		buf := make([]int64, 0, 1000)
		ops[i] = func() bool {
			var err error
			buf, err = g.AppendIDs(ctx, buf[:0], 1000)
			return err == nil
		}
	}
	return ops
}

func bwmarrinNext(order []int64) []op {
	n, err := bwmarrin.NewNode(1)
	if err != nil {
		panic(err)
	}
	ops := make([]op, len(order))
	for i := range ops {
		ops[i] = increasing(func() (int64, bool) { return int64(n.Generate()), true }, &order[i])
	}
	return ops
}

func bwmarrinBatch(order []int64) []op {
	n, err := bwmarrin.NewNode(1)
	if err != nil {
		panic(err)
	}
	ops := make([]op, len(order))
	for i := range ops {
		buf := make([]int64, 0, 1000)
		ops[i] = func() bool {
			buf = buf[:0]
			for range 1000 {
				buf = append(buf, int64(n.Generate()))
			}
			return true
		}
	}
	return ops
}

func sonyflakeNext(order []int64) []op {
	sf, err := sonyflake.New(sonyflake.Settings{MachineID: func() (uint16, error) { return 1, nil }})
	if err != nil {
		panic(err)
	}
	ops := make([]op, len(order))
	for i := range ops {
		ops[i] = increasing(func() (int64, bool) { k, err := sf.NextID(); return int64(k), err == nil }, &order[i])
	}
	return ops
}

// loadAvg returns /proc/loadavg's first three fields, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

func main() {
	d := flag.Duration("d", 2*time.Second, "duration of each case")
	rounds := flag.Int("rounds", 1, "rounds of all cases; the table shows the median keys/s and CPU per case")
	check := flag.Bool("check", false, "exit 1 when an acceptance threshold is missed")
	only := flag.String("only", "", "run only the cases whose name/goroutines contains this (the acceptance lines then read missing cases as zero)")
	gs := flag.String("goroutines", "1,2,8,16,64", "goroutine counts of the single-key cases")
	procs := flag.Int("gomaxprocs", 0, "GOMAXPROCS for the run (0: the Go default, the number of usable cores)")
	flag.Parse()
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	var counts []int
	for _, f := range strings.Split(*gs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "snowflakebench: -goroutines: %q is not a goroutine count >= 1\n", f)
			os.Exit(2)
		}
		counts = append(counts, n)
	}

	var cases []benchCase
	for _, g := range counts {
		base := fmt.Sprintf("bwmarrin Generate/%d", g)
		cases = append(cases,
			benchCase{name: "bwmarrin Generate", goroutines: g, keysPerOp: 1, newOps: bwmarrinNext},
			benchCase{name: "shardkeeper NextID", goroutines: g, keysPerOp: 1, baseline: base, newOps: shardkeeperNextID})
		if g <= 2 {
			// sonyflake makes 25,600 keys/s (256 per 10 ms) at any count.
			cases = append(cases, benchCase{name: "sonyflake NextID", goroutines: g, keysPerOp: 1, baseline: base, newOps: sonyflakeNext})
		}
	}
	cases = append(cases,
		benchCase{name: "bwmarrin 1000x Generate", goroutines: 1, keysPerOp: 1000, newOps: bwmarrinBatch},
		benchCase{name: "shardkeeper NextIDs(1000)", goroutines: 1, keysPerOp: 1000, baseline: "bwmarrin 1000x Generate/1", newOps: shardkeeperNextIDs},
		benchCase{name: "shardkeeper AppendIDs(1000)", goroutines: 1, keysPerOp: 1000, baseline: "bwmarrin 1000x Generate/1", newOps: shardkeeperAppendIDs},
	)
	key := func(c benchCase) string { return fmt.Sprintf("%s/%d", c.name, c.goroutines) }

	loadBefore := loadAvg()
	all := map[string][]result{}
	for range *rounds {
		for _, c := range cases {
			if !strings.Contains(key(c), *only) {
				continue
			}
			all[key(c)] = append(all[key(c)], run(c, *d))
		}
	}
	med := map[string]result{}
	for k, rs := range all {
		slices.SortFunc(rs, func(a, b result) int { return int(a.keysPerSec - b.keysPerSec) })
		m := rs[len(rs)/2]
		cpus := make([]float64, len(rs))
		m.orderErrs = 0
		for i, r := range rs {
			cpus[i] = r.cpuPerMKeys
			m.orderErrs += r.orderErrs
		}
		slices.Sort(cpus)
		m.cpuPerMKeys = cpus[len(cpus)/2]
		med[k] = m
	}

	fmt.Printf("snowflakebench: %s per case, %d round(s) (median shown), %s\n", *d, *rounds, runtime.Version())
	fmt.Printf("machine: %d cores usable, GOMAXPROCS=%d, load average (1/5/15 min) %s before, %s after\n\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), loadBefore, loadAvg())
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "generator\tgoroutines\tkeys/s\t% of 4.096M\tCPU cores\tCPU s/Mkeys\trate vs bwmarrin\tCPU/key vs bwmarrin\tallocs/call\terrors\torder errors\t")
	for _, c := range cases {
		r, ran := med[key(c)]
		if !ran {
			continue
		}
		rate, cpu := "1.00x", "1.00x"
		if c.baseline != "" {
			b := med[c.baseline]
			rate = fmt.Sprintf("%.2fx", r.keysPerSec/b.keysPerSec)
			cpu = fmt.Sprintf("%.2fx", r.cpuPerMKeys/b.cpuPerMKeys)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.1f%%\t%.2f\t%.3f\t%s\t%s\t%.2f\t%d\t%d\t\n",
			c.name, c.goroutines, r.keysPerSec, 100*r.keysPerSec/layoutLimit, r.cpuCores, r.cpuPerMKeys, rate, cpu, r.allocsPerOp, r.errs, r.orderErrs)
	}
	tw.Flush()

	fmt.Println("\nacceptance (medians):")
	ok := true
	verdict := func(name string, pass bool, detail string) {
		s := "PASS"
		if !pass {
			s, ok = "FAIL", false
		}
		fmt.Printf("  %s  %s: %s\n", s, name, detail)
	}
	for _, g := range counts {
		r := med[fmt.Sprintf("shardkeeper NextID/%d", g)]
		b := med[fmt.Sprintf("bwmarrin Generate/%d", g)]
		verdict(fmt.Sprintf("NextID rate, %d goroutine(s), >= 99%% of 4.096M/s", g), r.keysPerSec >= 0.99*layoutLimit,
			fmt.Sprintf("%.1f%%", 100*r.keysPerSec/layoutLimit))
		verdict(fmt.Sprintf("NextID CPU per key, %d goroutine(s), <= 0.5x bwmarrin", g), r.cpuPerMKeys <= 0.5*b.cpuPerMKeys,
			fmt.Sprintf("%.3f vs %.3f CPU s/Mkeys = %.2fx", r.cpuPerMKeys, b.cpuPerMKeys, r.cpuPerMKeys/b.cpuPerMKeys))
		verdict(fmt.Sprintf("NextID keys strictly increasing per goroutine, %d goroutine(s)", g), r.orderErrs == 0 && r.totalKeys > 0,
			fmt.Sprintf("%d out of order in all rounds", r.orderErrs))
	}
	for _, name := range []string{"shardkeeper NextIDs(1000)/1", "shardkeeper AppendIDs(1000)/1"} {
		r := med[name]
		verdict(name+" >= 4.0M keys/s, <= 1 alloc/call", r.keysPerSec >= 4.0e6 && r.allocsPerOp < 1.01,
			fmt.Sprintf("%.0f keys/s, %.3f allocs/call", r.keysPerSec, r.allocsPerOp))
	}
	if *check && !ok {
		os.Exit(1)
	}
}
