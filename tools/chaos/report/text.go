// Package report renders a checked chaos run: a text report of about one
// screen and an SVG plot of keys/s per node with the faults marked.
package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shardkeeper/shardkeeper/snowflake"
	"github.com/shardkeeper/shardkeeper/tools/chaos/checker"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
	"github.com/shardkeeper/shardkeeper/tools/chaos/stats"
)

// WriteText writes the report as plain text of about one screen (80
// columns): a PASS or FAIL line with the failures, the run's parameters,
// the key checks Jepsen unique-ids style and the fence windows' check,
// takeovers and zombie exposure, faults by kind, stalls and throughput per
// node, examples of each violation and the first warnings. It returns the
// first write error.
func WriteText(w io.Writer, r *checker.Report) error {
	ew := &errWriter{w: w}
	failures := r.Failures()
	verdict := "PASS"
	if len(failures) > 0 {
		verdict = "FAIL"
	}
	ew.printf("Chaos run: %s (%s)\n", verdict, r.Run.Variant.Label())
	for _, f := range failures {
		ew.printf("  - %s\n", f)
	}

	run := r.Run
	ew.printf("\nRun\n")
	ew.printf("  seed %d, %s (%s)\n", run.Seed, run.Registry, strings.Join(run.Versions, ", "))
	ew.printf("  %d nodes, pool %d worker ids, session TTL %s, reservation W %s\n",
		run.Nodes, run.Pool, run.SessionTTL, run.Reservation)
	start := "started " + time.Unix(0, run.Start).UTC().Format(time.RFC3339)
	ew.printf("  %s, duration %s, %d incarnations\n", start, fmtDur(r.Duration), r.Incarnations)

	k := r.Keys
	ew.printf("\nKeys\n")
	rate := "-"
	if r.Duration > 0 {
		rate = fmtRate(float64(k.Attempted) / r.Duration.Seconds())
	}
	ew.printf("  attempted %s (recorded, %s/s)   acknowledged %s (node counters)\n",
		fmtInt(k.Attempted), rate, fmtInt(k.Acknowledged))
	ew.printf("  distinct %s   duplicated %s\n", fmtInt(k.Distinct), fmtInt(r.Duplicates.Count))
	if k.Attempted > 0 {
		stamp := func(key int64) string {
			ms := snowflake.Decompose(key).Millis + run.EpochMillis
			return time.UnixMilli(ms).UTC().Format("15:04:05.000")
		}
		ew.printf("  range %d .. %d (%s .. %s UTC)\n", k.Min, k.Max, stamp(k.Min), stamp(k.Max))
	}
	fence := fmtInt(r.OutsideFence.Count)
	switch run.Variant {
	case record.VariantLeaseOnly:
		fence = "not checked"
	case record.VariantIgnoreFloor:
		fence += " (expected: floor ignored)"
	}
	ew.printf("  overlapping (worker, ms) %s   non-monotonic %s   outside fence %s\n",
		fmtInt(r.Overlaps.Count), fmtInt(r.NonMonotonic.Count), fence)
	if run.Variant == record.VariantFenced {
		ew.printf("  fence windows %s   pairs intersecting %s   keys of an unknown epoch %s\n",
			fmtInt(int64(r.FenceWindows)), fmtInt(r.FenceWindowOverlaps.Count), fmtInt(r.KeysOfUnknownEpoch))
	} else {
		ew.printf("  fence windows not checked\n")
	}

	ew.printf("\nHolders\n")
	ew.printf("  acquisitions %d   takeovers %d   while the old holder was alive %d (zombie window %s)\n",
		r.Acquisitions, r.Takeovers, r.ZombieTakeovers, fmtDur(r.ZombieWindow))
	ew.printf("  losses: %s\n", fmtCounts(r.Losses))
	ew.printf("  registry writes %s (%.1f/s)\n", fmtInt(r.Writes), r.WriteRate)

	ew.printf("\nFaults\n")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	wide := len("kind")
	for _, f := range r.Faults {
		wide = max(wide, len(f.Kind))
	}
	fmt.Fprintf(tw, "%-*s\tcount\ttotal\tmax\t\n", wide, "kind")
	total := 0
	for _, f := range r.Faults {
		total += f.Count
		fmt.Fprintf(tw, "%-*s\t%d\t%s\t%s\t\n", wide, f.Kind, f.Count, fmtDur(f.Total), fmtDur(f.Max))
	}
	fmt.Fprintf(tw, "%-*s\t%d\t\t\t\n", wide, "all", total)
	ew.err = firstErr(ew.err, tw.Flush())
	if run.SessionTTL > 0 {
		var parts []string
		lo := "0"
		for i, ub := range stats.PauseBuckets {
			parts = append(parts, fmt.Sprintf("%s-%sx %d", lo, fmtFloat(ub), r.PausesVsTTL[i]))
			lo = fmtFloat(ub)
		}
		parts = append(parts, fmt.Sprintf(">=%sx %d", lo, r.PausesVsTTL[len(stats.PauseBuckets)]))
		ew.printf("  pauses in TTLs: %s\n", strings.Join(parts, ", "))
	}

	ew.printf("\nNodes\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	wide = len("node")
	for _, n := range r.Nodes {
		wide = max(wide, len(n.Node))
	}
	fmt.Fprintf(tw, "%-*s\tinc\tkeys\tkeys/s\tstalls\tp50\tp99\tmax\tstalled\tfault-to-key p50/max\t\n", wide, "node")
	for _, n := range r.Nodes {
		rec := "-"
		if n.Recoveries > 0 {
			rec = fmt.Sprintf("%s/%s (%d)", fmtDur(n.RecoveryP50), fmtDur(n.RecoveryMax), n.Recoveries)
		}
		fmt.Fprintf(tw, "%-*s\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", wide, n.Node, n.Incarnations,
			fmtInt(n.Keys), fmtRate(n.KeysPerSecond), n.Stalls, fmtDur(n.StallP50), fmtDur(n.StallP99),
			fmtDur(n.StallMax), fmtDur(n.Stalled), rec)
	}
	ew.err = firstErr(ew.err, tw.Flush())
	var byReason []string
	for _, reason := range slices.Sorted(maps.Keys(r.StalledByReason)) {
		byReason = append(byReason, fmt.Sprintf("%s %.1f", reason, r.StalledByReason[reason].Seconds()))
	}
	if len(byReason) == 0 {
		byReason = []string{"none"}
	}
	ew.printf("  stalled node-seconds by reason: %s\n", strings.Join(byReason, ", "))

	examples := []struct {
		name  string
		v     checker.Violations
		noKey bool // a pair of fence windows: Millis is the first both hold
	}{
		{"duplicated", r.Duplicates, false},
		{"overlap", r.Overlaps, false},
		{"non-monotonic", r.NonMonotonic, false},
		{"outside fence", r.OutsideFence, false},
		{"fence windows", r.FenceWindowOverlaps, true},
	}
	header := false
	for _, e := range examples {
		for _, v := range e.v.Examples {
			if !header {
				ew.printf("\nExamples\n")
				header = true
			}
			at := time.UnixMilli(v.Millis).UTC().Format("15:04:05.000")
			in := strings.Join(v.Incarnations, ", ")
			if e.noKey {
				ew.printf("  %s: worker %d from ms %d = %s in %s: %s\n", e.name, v.Worker, v.Millis, at, in, v.Detail)
				continue
			}
			ew.printf("  %s: key %d (worker %d, ms %d = %s, seq %d) in %s: %s\n", e.name, v.Key, v.Worker,
				v.Millis, at, v.Seq, in, v.Detail)
		}
	}
	if len(r.Warnings) > 0 {
		ew.printf("\nWarnings\n")
		for i, w := range r.Warnings {
			if i == maxWarnings {
				ew.printf("  - and %d more\n", len(r.Warnings)-i)
				break
			}
			ew.printf("  - %s\n", w)
		}
	}
	return ew.err
}

// maxWarnings is the number of warnings WriteText lists.
const maxWarnings = 8

// errWriter remembers the first write error and writes nothing after it.
type errWriter struct {
	w   io.Writer
	err error
}

func (w *errWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.w.Write(p)
	w.err = err
	return n, err
}

func (w *errWriter) printf(format string, args ...any) {
	fmt.Fprintf(w, format, args...)
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// fmtInt formats n with thousands separators: 10,234,567.
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// fmtRate formats a rate with about three significant digits.
func fmtRate(f float64) string {
	switch {
	case f < 10:
		return strconv.FormatFloat(f, 'f', 2, 64)
	case f < 100:
		return strconv.FormatFloat(f, 'f', 1, 64)
	default:
		return fmtInt(int64(math.Round(f)))
	}
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// fmtDur formats d for a table: 0, 850ms, 12.3s, 4m10s.
func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return d.Round(time.Second).String()
	}
}

// fmtCounts formats a count per name, sorted by name: "a 1, b 2", or
// "none".
func fmtCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
