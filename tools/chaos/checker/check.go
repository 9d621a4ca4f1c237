// Package checker checks a chaos run's records offline: every key issued
// once, each incarnation's keys increasing per worker id, no (worker id,
// millisecond) stamped by two holders, every key inside its epoch's fence
// window and the fence windows of a worker id disjoint. Its Report also
// carries the run's figures (package stats).
package checker

import (
	"fmt"
	"time"

	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
	"github.com/shardkeeper/shardkeeper/tools/chaos/stats"
)

// MaxExamples is the number of examples a Violations keeps.
const MaxExamples = 5

// Report is what Check found in a run directory. Every field is filled by
// Check; counts are zero, maps empty (never nil) and slices empty when there
// was nothing to count.
//
// Times of events and faults are real wall time (unix ns); key times are the
// issuing node's clock (unix ms). Incarnations' lives and the run's end are
// record.Load's.
type Report struct {
	Dir string
	Run record.RunInfo
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
	// keys file marks it with or, for the keys of record.EpochUnknown, the epoch
	// whose fence window of its incarnation holds it.
	Overlaps Violations
	// OutsideFence counts keys outside the fence window of their epoch
	// (of any epoch their incarnation acquired for their worker id when the
	// epoch is unknown). It is always zero for the lease-only
	// control (record.VariantLeaseOnly), which has no fence to check, and
	// expected for the floor control (record.VariantIgnoreFloor), whose
	// nodes stamp keys at or below the floor.
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
	// does not say their epoch (a batch issued across a re-acquisition);
	// the fence windows place them.
	KeysOfUnknownEpoch int64

	// Figures are the run's figures: takeovers, losses, nodes' stalls and
	// keys/s, faults by kind, registry writes.
	stats.Figures
	// FaultRecords are faults.jsonl's records, as read.
	FaultRecords []record.FaultRecord

	// Warnings lists problems with the records that did not stop the check
	// (a truncated keys record, a corrupt events line, a missing file,
	// keys on record fewer than an incarnation counted).
	Warnings []string
}

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
	switch v := r.Run.Variant; v {
	case record.VariantLeaseOnly:
		if r.Duplicates.Count == 0 {
			f = append(f, fmt.Sprintf("%s found no duplicate among %d keys: the faults are not biting",
				v.Label(), r.Keys.Attempted))
		}
		return f
	case record.VariantTrustAbsentFence:
		if r.Duplicates.Count == 0 {
			f = append(f, fmt.Sprintf("%s found no duplicate among %d keys after %d fence deletions: the faults are not biting",
				v.Label(), r.Keys.Attempted, r.fenceDeletes()))
		}
		return f
	case record.VariantIgnoreFloor:
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

// Check reads the run directory dir, which it does not modify, and checks
// every recorded key. It returns an error only when record.Load does; a
// truncated keys record, a corrupt events line or a missing faults or
// processes file is listed in Report.Warnings and the check goes on with
// what could be read. Memory is about 16 bytes per recorded key.
func Check(dir string) (*Report, error) {
	run, err := record.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("chaos: check %s: %w", dir, err)
	}
	r := &Report{
		Dir:          dir,
		Run:          run.Info,
		Duration:     run.Duration,
		Incarnations: len(run.Incarnations),
		FaultRecords: run.Faults,
		Warnings:     run.Warnings,
	}
	keys := checkKeys(run, r)
	r.Figures = stats.Compute(run, keys)
	return r, nil
}

// fenceDeletes is how many of the operator lane's deletions the run
// recorded: the faults the control that reads a deleted fence as floor 0
// needs to fail on.
func (r *Report) fenceDeletes() int {
	n := 0
	for _, f := range r.FaultRecords {
		if f.Kind == record.FaultFenceDelete {
			n++
		}
	}
	return n
}
