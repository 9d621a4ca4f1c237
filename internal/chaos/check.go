package chaos

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/snowflake"
)

// MaxExamples is the number of examples a Violations keeps.
const MaxExamples = 5

// Report is what Check found in a run directory. Every field is filled by
// Check; counts are zero, maps empty (never nil) and slices empty when there
// was nothing to count.
//
// Times of events and faults are real wall time (unix ns); key times are the
// issuing node's clock (unix ms). An incarnation's life runs from its
// process record's Start (or its first event) to the record's End; without
// a record or with End 0, to its EventExit, or else to the run's end; never
// before its last event. The run's end is RunInfo.End, or the last recorded
// event or fault when End is 0.
type Report struct {
	Dir string
	Run RunInfo
	// Duration is RunInfo.End - RunInfo.Start, or up to the last recorded
	// event or fault when End is 0 (a warning says so).
	Duration time.Duration
	// Incarnations is the number of incarnations found under nodes/.
	Incarnations int

	Keys KeyStats
	// Duplicates counts distinct keys recorded more than once, in any
	// incarnations (Keys.Attempted - Keys.Distinct is the number of extra
	// copies).
	Duplicates Violations
	// NonMonotonic counts keys that are not greater than the previous key of
	// the same worker id in the same incarnation file.
	NonMonotonic Violations
	// Overlaps counts distinct (worker id, millisecond) pairs stamped by more
	// than one holder: an incarnation in the negative controls, an
	// (incarnation, epoch) in a fenced run. A key's epoch is the one its
	// keys file marks it with or, for the keys of EpochUnknown, the epoch
	// whose fence window of its incarnation holds it.
	Overlaps Violations
	// OutsideFence counts keys outside the fence window of their epoch
	// (of any epoch their incarnation acquired for their worker id when the
	// epoch is unknown). It is always zero for the lease-only
	// control (RunInfo.Fenced false), which has no fence to check, and
	// expected for the floor control (RunInfo.IgnoreFloor), whose nodes
	// stamp keys at or below the floor.
	OutsideFence Violations
	// FenceWindows is the number of fence windows of a fenced run, one per
	// EventAcquired, empty ones included; 0 in the negative controls.
	FenceWindows int
	// FenceWindowOverlaps counts, in a fenced run, the pairs of fence
	// windows of one worker id, of different epochs or incarnations, that
	// share a millisecond: each epoch's floor must be at or above every
	// earlier epoch's reservation, so that no millisecond can be stamped in
	// two epochs and each key is in the window of one epoch at most. A
	// window here is (floor, until] with until lowered to the fence a
	// successful EventReleased left; an epoch without a reservation has an
	// empty window, which meets none. The examples have no key (Key 0):
	// Millis is the first millisecond the two windows share.
	// Always zero in the negative controls, which are not checked.
	FenceWindowOverlaps Violations
	// KeysOfUnknownEpoch counts, in a fenced run, the keys whose keys file
	// does not say their epoch (a batch issued across a re-acquisition, or
	// a file written before the markers existed); the fence windows place
	// them.
	KeysOfUnknownEpoch int64

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

	// Faults has one entry per Fault* kind in declaration order, count 0
	// included, then any other recorded kind in name order.
	Faults []FaultStats
	// PausesVsTTL is a histogram of pause lengths in units of the session
	// TTL, with the bucket upper bounds in PauseBuckets; all zero when the
	// TTL is 0.
	PausesVsTTL [len(PauseBuckets) + 1]int

	// Writes is the sum over incarnations of the last Writes counter seen
	// in their events; WriteRate is Writes per second of Duration.
	Writes    int64
	WriteRate float64

	// Series holds each node's keys/s over time, for the plot.
	Series []NodeSeries
	// FaultRecords are faults.jsonl's records, as read.
	FaultRecords []FaultRecord

	// Warnings lists problems with the records that did not stop the check
	// (a truncated keys record, a corrupt events line, a missing file,
	// keys on record fewer than an incarnation counted).
	Warnings []string
}

// PauseBuckets are the upper bounds, in session TTLs, of Report.PausesVsTTL's
// buckets; the last bucket holds the pauses of PauseBuckets[last] TTLs and
// longer.
var PauseBuckets = [...]float64{0.5, 1, 2, 5}

// KeyStats sums up the recorded keys, Jepsen unique-ids style.
type KeyStats struct {
	// Attempted is the number of keys in the .keys files: a node records a
	// key before it hands it out.
	Attempted int64
	// Acknowledged is the sum of the incarnations' last Keys counters
	// (EventProgress, EventExit): keys the nodes counted as issued, a lower
	// bound of Attempted.
	Acknowledged int64
	// Distinct is the number of distinct keys.
	Distinct int64
	// Min and Max are the smallest and largest key; both 0 without keys.
	Min, Max int64
}

// Violations counts one kind of violation and keeps the first few examples
// in key order (at most MaxExamples).
type Violations struct {
	Count    int64
	Examples []Violation
}

// Violation is one example of a violation. Millis is the key's unix
// millisecond on the issuing node's clock.
type Violation struct {
	Key          int64
	Worker       int64
	Millis       int64
	Seq          int64
	Incarnations []string
	Detail       string
}

// NodeStats are one node's figures over all its incarnations.
type NodeStats struct {
	Node          string
	Incarnations  int
	Keys          int64   // recorded
	KeysPerSecond float64 // Keys / Report.Duration
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

// FaultKinds lists the Fault* constants in declaration order.
var FaultKinds = []string{
	FaultPartition, FaultOneWay, FaultPause, FaultKill, FaultLeaderKill,
	FaultLeaderPause, FaultClockStep, FaultClockSkew, FaultFenceDelete,
}

// Failures lists why the run fails; empty means it passes. A fenced run
// fails on any duplicate, non-monotonic key, (worker id, ms) overlap, key
// outside its fence window or pair of intersecting fence windows, and when
// no key was recorded at all. A negative control fails only when the
// faults are not biting: the lease-only control and the absent-fence
// control when they found no duplicate, the floor control when it found
// neither a duplicate nor a (worker id, ms) overlap (its keys outside the
// fence are expected).
func (r *Report) Failures() []string {
	var f []string
	switch v := r.Run.Variant(); v {
	case VariantLeaseOnly, VariantTrustAbsentFence:
		if r.Duplicates.Count == 0 {
			f = append(f, fmt.Sprintf("%s found no duplicate among %d keys: the faults are not biting",
				v.Label(), r.Keys.Attempted))
		}
		return f
	case VariantIgnoreFloor:
		if r.Duplicates.Count == 0 && r.Overlaps.Count == 0 {
			f = append(f, fmt.Sprintf("%s found no duplicate and no (worker id, ms) overlap among %d keys: the faults are not biting",
				v.Label(), r.Keys.Attempted))
		}
		return f
	}
	if r.Keys.Attempted == 0 {
		f = append(f, "no key recorded: nothing was checked")
	}
	if n := r.Duplicates.Count; n > 0 {
		f = append(f, fmt.Sprintf("duplicated keys: %d", n))
	}
	if n := r.Overlaps.Count; n > 0 {
		f = append(f, fmt.Sprintf("(worker id, ms) pairs stamped by more than one incarnation or epoch: %d", n))
	}
	if n := r.NonMonotonic.Count; n > 0 {
		f = append(f, fmt.Sprintf("keys not increasing within their incarnation and worker id: %d", n))
	}
	if n := r.OutsideFence.Count; n > 0 {
		f = append(f, fmt.Sprintf("keys outside their fence window: %d", n))
	}
	if n := r.FenceWindowOverlaps.Count; n > 0 {
		f = append(f, fmt.Sprintf("pairs of fence windows of one worker id that intersect: %d", n))
	}
	return f
}

// checkEntry is one recorded key and the index of its holder.
type checkEntry struct {
	key    int64
	holder uint32
}

// checkHolder is what issued a key: an incarnation and, in a fenced run,
// the epoch the key was issued in (EpochUnknown otherwise, and when neither
// the keys file nor the fence windows tell) and the index of the fence
// window that holds it among its incarnation's windows of its worker id
// (-1 when none does). The window tells apart two holds of one epoch
// number: after a fence is deleted the next claim starts at epoch 1 again.
type checkHolder struct {
	inc    int
	epoch  int64
	window int
}

// checkFence is one fence window (floor, until] of an incarnation, one per
// EventAcquired; end is until lowered by a successful release (the last
// millisecond the epoch stamped, or its floor).
type checkFence struct {
	epoch, floor, until, end int64
}

// has reports whether the window holds the millisecond ms.
func (f checkFence) has(ms int64) bool { return ms > f.floor && ms <= f.until }

// checkWindow is a fence window and the index of its incarnation.
type checkWindow struct {
	checkFence
	inc int
}

// checkWindows holds the fence windows of every incarnation by worker id.
type checkWindows [snowflake.MaxWorkerID + 1][]checkWindow

// checkInc is what Check knows of one incarnation.
type checkInc struct {
	name, node string
	events     []Event
	proc       *ProcessRecord
	keys       int64 // recorded
	counted    int64 // last Keys counter
	writes     int64 // last Writes counter
	start, end int64 // unix ns of the process life
}

// Check reads the run directory dir, which it does not modify, and checks
// every recorded key. It returns an error only when run.json or the nodes
// directory cannot be read;
// a truncated keys record, a corrupt events line or a missing faults or
// processes file is listed in Report.Warnings and the check goes on with
// what could be read. Memory is about 16 bytes per recorded key.
func Check(dir string) (*Report, error) {
	r := &Report{
		Dir:             dir,
		Losses:          map[string]int{},
		StalledByReason: map[string]time.Duration{},
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return nil, fmt.Errorf("chaos: check %s: %w", dir, err)
	}
	if err := json.Unmarshal(b, &r.Run); err != nil {
		return nil, fmt.Errorf("chaos: check %s: run.json: %w", dir, err)
	}
	names, err := checkIncarnations(dir, r)
	if err != nil {
		return nil, fmt.Errorf("chaos: check %s: %w", dir, err)
	}
	r.FaultRecords = checkReadLines[FaultRecord](r, filepath.Join(dir, "faults.jsonl"))
	procs := map[string]*ProcessRecord{}
	for _, p := range checkReadLines[ProcessRecord](r, filepath.Join(dir, "processes.jsonl")) {
		procs[p.Incarnation] = &p
	}

	incs := make([]*checkInc, len(names))
	var last int64 // latest event or fault, unix ns
	for i, n := range names {
		x := &checkInc{name: n[1], node: n[0], proc: procs[n[1]]}
		incs[i] = x
		path := filepath.Join(dir, "nodes", x.node, EventFileName(x.name))
		evs, err := ReadJSONLines[Event](path)
		if err != nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("events of %s: %v (checked the %d events before it)", x.name, err, len(evs)))
		}
		x.events = evs
		for _, e := range evs {
			last = max(last, e.T)
			if e.Kind == EventProgress || e.Kind == EventExit {
				x.counted = max(x.counted, e.Keys)
			}
			x.writes = max(x.writes, e.Writes)
		}
	}
	for _, f := range r.FaultRecords {
		last = max(last, f.Start, f.End)
	}
	end := r.Run.End
	if end == 0 {
		end = max(last, r.Run.Start)
		r.Warnings = append(r.Warnings, "run.json has no end: the run did not finish; duration is up to the last record")
	}
	r.Duration = time.Duration(end - r.Run.Start)
	for _, x := range incs {
		x.start, x.end = checkLife(x, end)
	}

	checkKeys(dir, r, incs)
	checkTakeovers(r, incs)
	checkNodes(r, incs)
	checkFaults(r)
	for _, x := range incs {
		r.Writes += x.writes
	}
	if s := r.Duration.Seconds(); s > 0 {
		r.WriteRate = float64(r.Writes) / s
	}
	return r, nil
}

// checkIncarnations lists the incarnations under dir/nodes as (node,
// incarnation) pairs sorted by node then incarnation: every name with an
// .events or a .keys file.
func checkIncarnations(dir string, r *Report) ([][2]string, error) {
	nodes, err := os.ReadDir(filepath.Join(dir, "nodes"))
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, n := range nodes {
		if !n.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, "nodes", n.Name()))
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		var list []string
		for _, f := range files {
			inc, ok := strings.CutSuffix(f.Name(), ".events")
			if !ok {
				inc, ok = strings.CutSuffix(f.Name(), ".keys")
			}
			if ok && !seen[inc] {
				seen[inc] = true
				list = append(list, inc)
			}
		}
		sort.Strings(list)
		for _, inc := range list {
			out = append(out, [2]string{n.Name(), inc})
		}
	}
	if len(out) > math.MaxUint32 {
		return nil, fmt.Errorf("%d incarnations: at most %d can be checked", len(out), uint32(math.MaxUint32))
	}
	r.Incarnations = len(out)
	return out, nil
}

// checkReadLines reads a JSON-lines file of the run; a missing or corrupt
// file is a warning.
func checkReadLines[T any](r *Report, path string) []T {
	v, err := ReadJSONLines[T](path)
	if err != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %v (used the %d records before it)", filepath.Base(path), err, len(v)))
	}
	return v
}

// checkLife returns an incarnation's process life, unix ns: from the
// process record's Start (or the first event) to its End; without a record
// or with End 0, to its exit event, or else the run's end, and never before
// its last event.
func checkLife(x *checkInc, runEnd int64) (start, end int64) {
	var first, last, exit int64
	for i, e := range x.events {
		if i == 0 || e.T < first {
			first = e.T
		}
		last = max(last, e.T)
		if e.Kind == EventExit && exit == 0 {
			exit = e.T
		}
	}
	start, end = first, runEnd
	if exit != 0 {
		end = exit
	}
	if x.proc != nil {
		if x.proc.Start != 0 {
			start = x.proc.Start
		}
		if x.proc.End != 0 {
			end = x.proc.End
		}
	}
	return start, max(end, last)
}

// checkKeys reads every keys file and runs the key checks: per-incarnation
// monotonicity and fence windows while reading, then uniqueness and overlap
// on one sorted slice; in a fenced run also the fence windows' disjointness.
func checkKeys(dir string, r *Report, incs []*checkInc) {
	var total int64
	for _, x := range incs {
		if fi, err := os.Stat(filepath.Join(dir, "nodes", x.node, KeyFileName(x.name))); err == nil {
			total += fi.Size() / 8
		}
	}
	entries := make([]checkEntry, 0, total)
	var last [snowflake.MaxWorkerID + 1]int64
	var seen [snowflake.MaxWorkerID + 1]bool
	var hit [snowflake.MaxWorkerID + 1]int // index of the last matching fence window
	var fences [snowflake.MaxWorkerID + 1][]checkFence
	var holders []checkHolder // (incarnation, epoch) pairs that issued keys
	holderIndex := map[checkHolder]uint32{}
	var lastHolder uint32     // index of the last key's holder
	var windows *checkWindows // all incarnations' (only in a fenced run)
	if r.Run.Variant() == VariantFenced {
		windows = new(checkWindows)
	}
	for i, x := range incs {
		if r.Run.Fenced {
			checkFences(x, &fences)
		}
		if windows != nil {
			for w, fs := range fences {
				for _, f := range fs {
					windows[w] = append(windows[w], checkWindow{f, i})
				}
			}
		}
		clear(seen[:])
		clear(hit[:])
		epoch := EpochUnknown // of the keys read next, from the last marker
		path := filepath.Join(dir, "nodes", x.node, KeyFileName(x.name))
		err := checkReadKeys(path, func(k int64) {
			if k < 0 {
				epoch = markerEpoch(k)
				return
			}
			p := snowflake.Decompose(k)
			w := p.WorkerID
			if seen[w] && k <= last[w] {
				var detail string
				if r.NonMonotonic.room() {
					q := snowflake.Decompose(last[w])
					detail = fmt.Sprintf("after %d (ms %d, seq %d)", last[w], q.Millis+r.Run.EpochMillis, q.Sequence)
				}
				r.NonMonotonic.add(k, r.Run.EpochMillis, []string{x.name}, detail)
			}
			seen[w], last[w] = true, k
			holder := checkHolder{inc: i, epoch: EpochUnknown, window: -1}
			if r.Run.Fenced {
				// The window of the key's epoch, or of any epoch when its
				// epoch is unknown.
				ms := p.Millis + r.Run.EpochMillis
				fs := fences[w]
				ok := func(f checkFence) bool { return f.has(ms) && (epoch == EpochUnknown || f.epoch == epoch) }
				in := hit[w] < len(fs) && ok(fs[hit[w]])
				for j := 0; !in && j < len(fs); j++ {
					if ok(fs[j]) {
						hit[w], in = j, true
					}
				}
				if !in {
					var detail string
					if r.OutsideFence.room() {
						detail = checkFenceDetail(fs)
						if epoch != EpochUnknown {
							detail = fmt.Sprintf("issued in epoch %d; %s", epoch, detail)
						}
					}
					r.OutsideFence.add(k, r.Run.EpochMillis, []string{x.name}, detail)
				}
				switch {
				case windows == nil:
				case epoch != EpochUnknown:
					holder.epoch = epoch
				default:
					r.KeysOfUnknownEpoch++
					if in {
						holder.epoch = fs[hit[w]].epoch
					}
				}
				if windows != nil && in {
					holder.window = hit[w]
				}
			}
			if len(holders) == 0 || holders[lastHolder] != holder { // keys come in runs of one holder
				h, ok := holderIndex[holder]
				if !ok {
					h = uint32(len(holders))
					holders = append(holders, holder)
					holderIndex[holder] = h
				}
				lastHolder = h
			}
			entries = append(entries, checkEntry{k, lastHolder})
			x.keys++
		})
		missing := errors.Is(err, os.ErrNotExist)
		if err != nil && !missing {
			r.Warnings = append(r.Warnings, fmt.Sprintf("keys of %s: %v (checked the %d keys before it)", x.name, err, x.keys))
		}
		switch {
		case missing && x.counted > 0:
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s counted %d keys issued but has no keys file", x.name, x.counted))
		case x.counted > x.keys:
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s counted %d keys issued but recorded only %d", x.name, x.counted, x.keys))
		}
		r.Keys.Acknowledged += x.counted
	}
	r.Keys.Attempted = int64(len(entries))
	checkSorted(r, incs, holders, entries)
	if windows != nil {
		checkDisjoint(r, incs, windows)
	}
}

// checkReadKeys calls fn for each key of the keys file at path, in file
// order. A trailing partial record is reported as an error after every
// whole key.
func checkReadKeys(path string, fn func(int64)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		n, err := io.ReadFull(f, buf)
		whole := n &^ 7
		for i := 0; i < whole; i += 8 {
			fn(int64(binary.LittleEndian.Uint64(buf[i:])))
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, io.ErrUnexpectedEOF):
			if n > whole {
				return fmt.Errorf("truncated last record (%d of 8 bytes)", n-whole)
			}
			return nil
		default:
			return err
		}
	}
}

// checkFences sets out to an incarnation's fence windows by worker id:
// (Floor of its EventAcquired, max Until of its EventReserved] for each
// acquisition, in event order. A reservation or release belongs to the
// latest acquisition of its worker id and epoch before it (one incarnation
// can hold one epoch number twice when a fence was deleted in between). An
// acquisition without a reservation has an empty window; events of a worker
// id out of range, and reservations before any acquisition of their epoch,
// are ignored. The end of a window is its until, lowered to the Until of a
// successful EventReleased (a release lowers the fence to the last
// millisecond stamped; one that failed may or may not have).
func checkFences(x *checkInc, out *[snowflake.MaxWorkerID + 1][]checkFence) {
	for w := range out {
		out[w] = out[w][:0]
	}
	// latest returns the index of the latest window of (w, epoch), or -1.
	latest := func(w int, epoch int64) int {
		fs := out[w]
		for j := len(fs) - 1; j >= 0; j-- {
			if fs[j].epoch == epoch {
				return j
			}
		}
		return -1
	}
	type release struct {
		w, j  int
		until int64
	}
	var released []release
	for _, e := range x.events {
		if e.Worker < 0 || e.Worker > snowflake.MaxWorkerID {
			continue
		}
		switch e.Kind {
		case EventAcquired:
			out[e.Worker] = append(out[e.Worker], checkFence{epoch: e.Epoch, floor: e.Floor, until: e.Floor})
		case EventReserved:
			if j := latest(e.Worker, e.Epoch); j >= 0 {
				f := &out[e.Worker][j]
				f.until = max(f.until, e.Until)
			}
		case EventReleased:
			if j := latest(e.Worker, e.Epoch); j >= 0 && e.Reason == "" {
				released = append(released, release{e.Worker, j, e.Until})
			}
		}
	}
	for _, fs := range out {
		for j := range fs {
			fs[j].end = fs[j].until
		}
	}
	for _, rel := range released {
		f := &out[rel.w][rel.j]
		f.end = min(f.end, rel.until)
	}
}

func checkFenceDetail(fs []checkFence) string {
	if len(fs) == 0 {
		return "no epoch acquired for this worker id"
	}
	var b strings.Builder
	b.WriteString("windows")
	for i, f := range fs {
		if i == 3 {
			fmt.Fprintf(&b, " and %d more", len(fs)-i)
			break
		}
		fmt.Fprintf(&b, " e%d (%d, %d]", f.epoch, f.floor, f.until)
	}
	return b.String()
}

// room reports whether add would keep another example.
func (v *Violations) room() bool { return len(v.Examples) < MaxExamples }

// add counts one violation and keeps it as an example if there is room.
func (v *Violations) add(key, epochMillis int64, incs []string, detail string) {
	v.Count++
	if len(v.Examples) >= MaxExamples {
		return
	}
	p := snowflake.Decompose(key)
	v.Examples = append(v.Examples, Violation{
		Key: key, Worker: p.WorkerID, Millis: p.Millis + epochMillis, Seq: p.Sequence,
		Incarnations: incs, Detail: detail,
	})
}

// checkSorted sorts the keys and counts duplicates (equal keys) and
// overlaps ((worker, ms) pairs, key>>12, with more than one holder).
func checkSorted(r *Report, incs []*checkInc, holders []checkHolder, entries []checkEntry) {
	slices.SortFunc(entries, func(a, b checkEntry) int { return cmp.Compare(a.key, b.key) })
	n := len(entries)
	if n > 0 {
		r.Keys.Min, r.Keys.Max = entries[0].key, entries[n-1].key
	}
	names := func(es []checkEntry) []string {
		var s []string
		for _, e := range es {
			s = append(s, incs[holders[e.holder].inc].name)
		}
		slices.Sort(s)
		return slices.Compact(s)
	}
	// holderNames names the holders of es: "g1.1 e3, g1.1 e5".
	holderNames := func(es []checkEntry) string {
		var s []string
		for _, e := range es {
			h := holders[e.holder]
			name := incs[h.inc].name
			if h.epoch != EpochUnknown {
				name += fmt.Sprintf(" e%d", h.epoch)
			}
			s = append(s, name)
		}
		slices.Sort(s)
		return strings.Join(slices.Compact(s), ", ")
	}
	for i := 0; i < n; {
		pair := entries[i].key >> snowflake.SequenceBits
		holder0, multi := entries[i].holder, false
		j := i
		for ; j < n && entries[j].key>>snowflake.SequenceBits == pair; j++ {
			if entries[j].holder != holder0 {
				multi = true
			}
		}
		for a := i; a < j; {
			b := a + 1
			for b < j && entries[b].key == entries[a].key {
				b++
			}
			r.Keys.Distinct++
			if b-a > 1 {
				var in []string
				var detail string
				if r.Duplicates.room() {
					in, detail = names(entries[a:b]), fmt.Sprintf("recorded %d times", b-a)
				}
				r.Duplicates.add(entries[a].key, r.Run.EpochMillis, in, detail)
			}
			a = b
		}
		if multi {
			var in []string
			var detail string
			if r.Overlaps.room() {
				in, detail = names(entries[i:j]), fmt.Sprintf("%d keys in this ms, of %s", j-i, holderNames(entries[i:j]))
			}
			r.Overlaps.add(entries[i].key, r.Run.EpochMillis, in, detail)
		}
		i = j
	}
}

// checkDisjoint counts in FenceWindows the windows and in
// FenceWindowOverlaps the pairs of windows of one worker id, of different
// claims, whose (floor, end] intersect. Two windows of one incarnation and
// epoch with the same floor are one claim recorded twice.
func checkDisjoint(r *Report, incs []*checkInc, windows *checkWindows) {
	for w, ws := range windows {
		r.FenceWindows += len(ws)
		var full []checkWindow
		for _, f := range ws {
			if f.end > f.floor {
				full = append(full, f)
			}
		}
		// By floor: the windows after a that meet it are the ones with a
		// floor below a's end.
		slices.SortStableFunc(full, func(a, b checkWindow) int { return cmp.Compare(a.floor, b.floor) })
		for i, a := range full {
			for _, b := range full[i+1:] {
				if b.floor >= a.end {
					break
				}
				if a.inc == b.inc && a.epoch == b.epoch && a.floor == b.floor {
					continue // one claim recorded twice
				}
				v := &r.FenceWindowOverlaps
				v.Count++
				if !v.room() {
					continue
				}
				x, y := incs[a.inc].name, incs[b.inc].name
				v.Examples = append(v.Examples, Violation{Worker: int64(w), Millis: b.floor + 1,
					Incarnations: slices.Compact([]string{x, y}),
					Detail: fmt.Sprintf("windows %s e%d (%d, %d] and %s e%d (%d, %d]",
						x, a.epoch, a.floor, a.end, y, b.epoch, b.floor, b.end)})
			}
		}
	}
}

// checkTakeovers counts acquisitions, takeovers and zombie takeovers, and
// losses by reason. The acquisitions of a worker id are ordered by the time
// they were recorded, not by epoch: after a fence is deleted the epochs of
// a worker id start at 1 again.
func checkTakeovers(r *Report, incs []*checkInc) {
	type acq struct {
		w   int
		e   int64
		inc int
		t   int64
	}
	byWorker := map[int][]acq{}
	for i, x := range incs {
		for _, e := range x.events {
			switch e.Kind {
			case EventAcquired:
				r.Acquisitions++
				byWorker[e.Worker] = append(byWorker[e.Worker], acq{w: e.Worker, e: e.Epoch, inc: i, t: e.T})
			case EventLost:
				r.Losses[lossClass(e.Reason)]++
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
			r.Takeovers++
			x := incs[prev.inc]
			if a.t < x.start || a.t >= x.end {
				continue
			}
			gone := int64(math.MaxInt64) // X's first lost/released of prev after a.t
			held := true
			for _, e := range x.events {
				if (e.Kind == EventLost || e.Kind == EventReleased) && e.Worker == prev.w && e.Epoch == prev.e && e.T >= prev.t {
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
			r.ZombieTakeovers++
			r.ZombieWindow += time.Duration(min(gone, x.end) - a.t)
		}
	}
}

// checkNodes fills Nodes (keys, stalls, recoveries) and Series.
func checkNodes(r *Report, incs []*checkInc) {
	byNode := map[string][]*checkInc{}
	var nodes []string
	for _, x := range incs {
		if _, ok := byNode[x.node]; !ok {
			nodes = append(nodes, x.node)
		}
		byNode[x.node] = append(byNode[x.node], x)
	}
	sort.Strings(nodes)
	secs := r.Duration.Seconds()
	for _, node := range nodes {
		ns := NodeStats{Node: node, Incarnations: len(byNode[node])}
		series := NodeSeries{Node: node}
		var stalls []time.Duration
		type progress struct{ prevT, t, delta int64 }
		var prog []progress
		for _, x := range byNode[node] {
			ns.Keys += x.keys
			// Stalls.
			var open bool
			var from int64
			var reason string
			for _, e := range x.events {
				switch {
				case e.Kind == EventStall && !open:
					open, from, reason = true, e.T, e.Reason
				case e.Kind == EventResume && open:
					open = false
					stalls = append(stalls, checkStall(r, reason, e.T-from))
				}
			}
			if open {
				stalls = append(stalls, checkStall(r, reason, max(x.end-from, 0)))
			}
			// Progress: rates and key deltas.
			var seg []RatePoint
			prevT, prevK := x.start, int64(0)
			for _, e := range x.events {
				if e.Kind != EventProgress && e.Kind != EventExit {
					continue
				}
				if e.T > prevT && e.Keys >= prevK {
					seg = append(seg, RatePoint{
						Seconds:       float64(e.T-r.Run.Start) / 1e9,
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
		ns.StallP50, ns.StallP99 = checkPercentile(stalls, 0.50), checkPercentile(stalls, 0.99)
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
		for _, f := range r.FaultRecords {
			if f.Target != node {
				continue
			}
			heal := f.Start
			if f.End != 0 {
				heal = f.End
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
		ns.RecoveryP50 = checkPercentile(recs, 0.50)
		if len(recs) > 0 {
			ns.RecoveryMax = recs[len(recs)-1]
		}
		r.Nodes = append(r.Nodes, ns)
		r.Series = append(r.Series, series)
	}
}

func checkStall(r *Report, reason string, d int64) time.Duration {
	if reason == "" {
		reason = "unknown"
	}
	r.StalledByReason[reason] += time.Duration(d)
	return time.Duration(d)
}

// checkPercentile returns the nearest-rank p-quantile of sorted: the
// smallest value with at least p of the values at or below it; 0 when
// empty.
func checkPercentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// checkFaults fills Faults and PausesVsTTL.
func checkFaults(r *Report) {
	idx := map[string]int{}
	for _, k := range FaultKinds {
		idx[k] = len(r.Faults)
		r.Faults = append(r.Faults, FaultStats{Kind: k})
	}
	var other []string
	for _, f := range r.FaultRecords {
		if _, ok := idx[f.Kind]; !ok {
			idx[f.Kind] = -1
			other = append(other, f.Kind)
		}
	}
	sort.Strings(other)
	for _, k := range other {
		idx[k] = len(r.Faults)
		r.Faults = append(r.Faults, FaultStats{Kind: k})
	}
	for _, f := range r.FaultRecords {
		s := &r.Faults[idx[f.Kind]]
		s.Count++
		var d time.Duration
		if f.End > f.Start {
			d = time.Duration(f.End - f.Start)
		}
		s.Total += d
		s.Max = max(s.Max, d)
		if f.Kind == FaultPause && r.Run.SessionTTL > 0 {
			ttls := float64(d) / float64(r.Run.SessionTTL)
			b := len(PauseBuckets)
			for i, ub := range PauseBuckets {
				if ttls < ub {
					b = i
					break
				}
			}
			r.PausesVsTTL[b]++
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
