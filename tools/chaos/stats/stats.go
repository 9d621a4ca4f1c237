// Package stats sums up how a chaos run went, apart from whether it issued
// a key twice: worker-id takeovers and the zombie windows they left, losses
// by reason, each node's stalls, recoveries and keys/s over time, faults by
// kind and the registry write rate.
package stats

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
)

// Figures are a run's figures. Every field is filled by Compute; counts
// are zero, maps empty (never nil) and slices empty when there was nothing
// to count.
type Figures struct {
	// Acquisitions counts EventAcquired of all incarnations.
	Acquisitions int
	// Takeovers counts acquisitions of (w, e) whose previous epoch of w was
	// held by another incarnation; ZombieTakeovers those of them that
	// happened while that incarnation was alive and still held the epoch;
	// ZombieWindow is the sum of those windows (the acquire to the old
	// holder's lost or released event or process end).
	Takeovers       int
	ZombieTakeovers int
	ZombieWindow    time.Duration
	// Losses counts EventLost by Reason ("" is counted as "unknown").
	Losses map[string]int

	// Nodes has one entry per node directory, sorted by name.
	Nodes []NodeStats
	// StalledByReason sums the stall durations of all nodes by the stall
	// event's Reason ("" is counted as "unknown").
	StalledByReason map[string]time.Duration

	// Faults has one entry per record.FaultKinds kind in that order, count
	// 0 included, then any other recorded kind in name order.
	Faults []FaultStats
	// PausesVsTTL is a histogram of pause lengths in units of the session
	// TTL, with the bucket upper bounds in PauseBuckets; all zero when the
	// TTL is 0.
	PausesVsTTL [len(PauseBuckets) + 1]int

	// Writes is the sum over incarnations of the last Writes counter seen
	// in their events; WriteRate is Writes per second of the run's
	// duration.
	Writes    int64
	WriteRate float64

	// Series holds each node's keys/s over time, for the plot.
	Series []NodeSeries
}

// PauseBuckets are the upper bounds, in session TTLs, of
// Figures.PausesVsTTL's buckets; the last bucket holds the pauses of
// PauseBuckets[last] TTLs and longer.
var PauseBuckets = [...]float64{0.5, 1, 2, 5}

// NodeStats are one node's figures over all its incarnations.
type NodeStats struct {
	Node          string
	Incarnations  int
	Keys          int64   // recorded
	KeysPerSecond float64 // Keys / the run's duration
	// Stalls counts EventStall..EventResume intervals; an open stall ends
	// at its incarnation's end. P50 and P99 are nearest-rank percentiles.
	Stalls                       int
	StallP50, StallP99, StallMax time.Duration
	Stalled                      time.Duration // sum
	// Recoveries counts the faults targeting the node (the fault's End, or
	// Start for an instantaneous one) after which the node issued a key;
	// RecoveryP50 and RecoveryMax are the time from the fault's end to the
	// first progress event showing a key issued after it. Progress events
	// are periodic, so these are upper bounds by one progress interval.
	Recoveries               int
	RecoveryP50, RecoveryMax time.Duration
}

// FaultStats sums up the faults of one kind. Total and Max are over the
// faults with an End; instantaneous faults count with duration 0.
type FaultStats struct {
	Kind       string
	Count      int
	Total, Max time.Duration
}

// NodeSeries is one node's keys/s over time: one segment per incarnation,
// so the plot shows a gap while the node is dead.
type NodeSeries struct {
	Node     string
	Segments [][]RatePoint
}

// RatePoint is the rate between two progress events, at the later one;
// Seconds is since RunInfo.Start.
type RatePoint struct {
	Seconds       float64
	KeysPerSecond float64
}

// Compute returns the figures of run; keys[i] is the number of keys on
// record of run.Incarnations[i].
func Compute(run *record.Run, keys []int64) Figures {
	f := Figures{Losses: map[string]int{}, StalledByReason: map[string]time.Duration{}}
	f.takeovers(run)
	f.nodes(run, keys)
	f.faults(run)
	for _, x := range run.Incarnations {
		f.Writes += x.Writes
	}
	if s := run.Duration.Seconds(); s > 0 {
		f.WriteRate = float64(f.Writes) / s
	}
	return f
}

// takeovers counts acquisitions, takeovers and zombie takeovers, and
// losses by reason. The acquisitions of a worker id are ordered by the time
// they were recorded, not by epoch: after a fence is deleted the epochs of
// a worker id start at 1 again.
func (f *Figures) takeovers(run *record.Run) {
	type acq struct {
		w   int
		e   int64
		inc int
		t   int64
	}
	incs := run.Incarnations
	byWorker := map[int][]acq{}
	for i, x := range incs {
		for _, e := range x.Events {
			switch e.Kind {
			case record.EventAcquired:
				f.Acquisitions++
				byWorker[e.Worker] = append(byWorker[e.Worker], acq{w: e.Worker, e: e.Epoch, inc: i, t: e.T})
			case record.EventLost:
				f.Losses[lossClass(e.Reason)]++
			}
		}
	}
	for _, as := range byWorker {
		slices.SortStableFunc(as, func(a, b acq) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.e, b.e)) })
		for k := 1; k < len(as); k++ {
			prev, a := as[k-1], as[k]
			if prev.inc == a.inc {
				continue
			}
			f.Takeovers++
			x := incs[prev.inc]
			if a.t < x.Start || a.t >= x.End {
				continue
			}
			gone := int64(math.MaxInt64) // X's first lost/released of prev after a.t
			held := true
			for _, e := range x.Events {
				if (e.Kind == record.EventLost || e.Kind == record.EventReleased) && e.Worker == prev.w && e.Epoch == prev.e && e.T >= prev.t {
					if e.T <= a.t {
						held = false
					} else {
						gone = min(gone, e.T)
					}
				}
			}
			if !held {
				continue
			}
			f.ZombieTakeovers++
			f.ZombieWindow += time.Duration(min(gone, x.End) - a.t)
		}
	}
}

// nodes fills Nodes (keys, stalls, recoveries) and Series.
func (f *Figures) nodes(run *record.Run, keys []int64) {
	byNode := map[string][]int{}
	var nodes []string
	for i, x := range run.Incarnations {
		if _, ok := byNode[x.Node]; !ok {
			nodes = append(nodes, x.Node)
		}
		byNode[x.Node] = append(byNode[x.Node], i)
	}
	sort.Strings(nodes)
	secs := run.Duration.Seconds()
	for _, node := range nodes {
		ns := NodeStats{Node: node, Incarnations: len(byNode[node])}
		series := NodeSeries{Node: node}
		var stalls []time.Duration
		type progress struct{ prevT, t, delta int64 }
		var prog []progress
		for _, i := range byNode[node] {
			x := run.Incarnations[i]
			ns.Keys += keys[i]
			// Stalls.
			var open bool
			var from int64
			var reason string
			for _, e := range x.Events {
				switch {
				case e.Kind == record.EventStall && !open:
					open, from, reason = true, e.T, e.Reason
				case e.Kind == record.EventResume && open:
					open = false
					stalls = append(stalls, f.stall(reason, e.T-from))
				}
			}
			if open {
				stalls = append(stalls, f.stall(reason, max(x.End-from, 0)))
			}
			// Progress: rates and key deltas.
			var seg []RatePoint
			prevT, prevK := x.Start, int64(0)
			for _, e := range x.Events {
				if e.Kind != record.EventProgress && e.Kind != record.EventExit {
					continue
				}
				if e.T > prevT && e.Keys >= prevK {
					seg = append(seg, RatePoint{
						Seconds:       float64(e.T-run.Info.Start) / 1e9,
						KeysPerSecond: float64(e.Keys-prevK) / (float64(e.T-prevT) / 1e9),
					})
					prog = append(prog, progress{prevT, e.T, e.Keys - prevK})
				}
				prevT, prevK = e.T, e.Keys
			}
			if len(seg) > 0 {
				series.Segments = append(series.Segments, seg)
			}
		}
		if secs > 0 {
			ns.KeysPerSecond = float64(ns.Keys) / secs
		}
		ns.Stalls = len(stalls)
		slices.Sort(stalls)
		ns.StallP50, ns.StallP99 = percentile(stalls, 0.50), percentile(stalls, 0.99)
		if len(stalls) > 0 {
			ns.StallMax = stalls[len(stalls)-1]
		}
		for _, s := range stalls {
			ns.Stalled += s
		}
		// Recoveries: from a fault's end to the first progress interval
		// that starts after it and shows keys.
		slices.SortFunc(prog, func(a, b progress) int { return cmp.Compare(a.t, b.t) })
		var recs []time.Duration
		for _, fr := range run.Faults {
			if fr.Target != node {
				continue
			}
			heal := fr.Start
			if fr.End != 0 {
				heal = fr.End
			}
			for _, p := range prog {
				if p.prevT >= heal && p.delta > 0 {
					recs = append(recs, time.Duration(p.t-heal))
					break
				}
			}
		}
		slices.Sort(recs)
		ns.Recoveries = len(recs)
		ns.RecoveryP50 = percentile(recs, 0.50)
		if len(recs) > 0 {
			ns.RecoveryMax = recs[len(recs)-1]
		}
		f.Nodes = append(f.Nodes, ns)
		f.Series = append(f.Series, series)
	}
}

func (f *Figures) stall(reason string, d int64) time.Duration {
	if reason == "" {
		reason = "unknown"
	}
	f.StalledByReason[reason] += time.Duration(d)
	return time.Duration(d)
}

// percentile returns the nearest-rank p-quantile of sorted: the smallest
// value with at least p of the values at or below it; 0 when empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// faults fills Faults and PausesVsTTL.
func (f *Figures) faults(run *record.Run) {
	idx := map[string]int{}
	for _, k := range record.FaultKinds {
		idx[k] = len(f.Faults)
		f.Faults = append(f.Faults, FaultStats{Kind: k})
	}
	var other []string
	for _, fr := range run.Faults {
		if _, ok := idx[fr.Kind]; !ok {
			idx[fr.Kind] = -1
			other = append(other, fr.Kind)
		}
	}
	sort.Strings(other)
	for _, k := range other {
		idx[k] = len(f.Faults)
		f.Faults = append(f.Faults, FaultStats{Kind: k})
	}
	ttl := run.Info.SessionTTL
	for _, fr := range run.Faults {
		s := &f.Faults[idx[fr.Kind]]
		s.Count++
		var d time.Duration
		if fr.End > fr.Start {
			d = time.Duration(fr.End - fr.Start)
		}
		s.Total += d
		s.Max = max(s.Max, d)
		if fr.Kind == record.FaultPause && ttl > 0 {
			ttls := float64(d) / float64(ttl)
			b := len(PauseBuckets)
			for i, ub := range PauseBuckets {
				if ttls < ub {
					b = i
					break
				}
			}
			f.PausesVsTTL[b]++
		}
	}
}

// lossClass groups a loss's reason (an error text with lease ids and
// versions in it) into a few classes for the report.
func lossClass(reason string) string {
	switch {
	case reason == "":
		return "unknown"
	case strings.Contains(reason, "registry session lost"):
		return "session expired"
	case strings.Contains(reason, "worker id lost") && strings.Contains(reason, "version mismatch"):
		return "fence taken over"
	case strings.Contains(reason, "worker id lost") && (strings.Contains(reason, "session expired") || strings.Contains(reason, "is gone")):
		return "session expired (seen by a renewal)"
	case strings.Contains(reason, "worker id lost"):
		return "fence lost"
	case strings.Contains(reason, "first time reservation"):
		return "first reservation failed"
	case strings.Contains(reason, "cluster: register"):
		return "registration failed"
	}
	if len(reason) > 60 {
		reason = reason[:60] + "..."
	}
	return reason
}
