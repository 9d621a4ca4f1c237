package checker_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/snowflake"
	"github.com/shardkeeper/shardkeeper/tools/chaos/checker"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
	"github.com/shardkeeper/shardkeeper/tools/chaos/report"
	"github.com/shardkeeper/shardkeeper/tools/chaos/stats"
)

const (
	testT0 = int64(1_700_000_000_000_000_000) // run start, unix ns
	testM0 = int64(1_700_000_000_000)         // node clock at the start, unix ms
)

// testRun writes a synthetic run directory with the record.go helpers.
type testRun struct {
	t    testing.TB
	dir  string
	info record.RunInfo
}

func newTestRun(t testing.TB, v record.Variant) *testRun {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "nodes"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &testRun{t: t, dir: dir, info: record.RunInfo{
		Seed: 7, Registry: "etcd", Versions: []string{"etcd 3.4.23", "go1.26.8"},
		Nodes: 5, Pool: 3, SessionTTL: 2 * time.Second, Reservation: 3 * time.Second,
		EpochMillis: snowflake.DefaultEpochMillis, Start: testT0, End: testT0 + int64(20*time.Second),
	}}
	r.info.Variant = v
	return r
}

// testAt returns the unix ns of sec seconds after the start.
func testAt(sec float64) int64 { return testT0 + int64(sec*1e9) }

// key composes a key stamped at unix ms ms.
func testKey(t testing.TB, ms, worker, seq int64) int64 {
	t.Helper()
	k, err := snowflake.Compose(snowflake.Parts{Millis: ms - snowflake.DefaultEpochMillis, WorkerID: worker, Sequence: seq})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// counts are a report's violation counts: duplicates, overlaps,
// non-monotonic keys, keys outside the fence, intersecting fence windows.
type counts struct{ dup, overlap, nonmono, fence, windows int64 }

func countsOf(r *checker.Report) counts {
	return counts{r.Duplicates.Count, r.Overlaps.Count, r.NonMonotonic.Count, r.OutsideFence.Count,
		r.FenceWindowOverlaps.Count}
}

func (r *testRun) nodeDir(inc string) string {
	node, _, _ := strings.Cut(inc, ".")
	d := filepath.Join(r.dir, "nodes", node)
	if err := os.MkdirAll(d, 0o755); err != nil {
		r.t.Fatal(err)
	}
	return d
}

// keys records keys of an unknown epoch, as a batch issued across a
// re-acquisition is recorded.
func (r *testRun) keys(inc string, keys ...int64) {
	r.t.Helper()
	r.keysIn(inc, record.EpochUnknown, keys...)
}

// keysIn records keys issued in epoch.
func (r *testRun) keysIn(inc string, epoch int64, keys ...int64) {
	r.t.Helper()
	w, err := record.CreateKeyWriter(filepath.Join(r.nodeDir(inc), record.KeyFileName(inc)))
	if err != nil {
		r.t.Fatal(err)
	}
	if err := errors.Join(w.Append(epoch, keys), w.Close()); err != nil {
		r.t.Fatal(err)
	}
}

// span records the keys of worker in ms from..to, seq 0 and 1.
func (r *testRun) span(inc string, worker, from, to int64) {
	r.t.Helper()
	var keys []int64
	for ms := from; ms <= to; ms++ {
		keys = append(keys, testKey(r.t, ms, worker, 0), testKey(r.t, ms, worker, 1))
	}
	r.keys(inc, keys...)
}

func (r *testRun) events(inc string, evs ...record.Event) {
	r.t.Helper()
	for _, e := range evs {
		if err := record.AppendJSONLine(filepath.Join(r.nodeDir(inc), record.EventFileName(inc)), e); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *testRun) append(name string, vs ...any) {
	r.t.Helper()
	for _, v := range vs {
		if err := record.AppendJSONLine(filepath.Join(r.dir, name), v); err != nil {
			r.t.Fatal(err)
		}
	}
}

// writeInfo writes run.json.
func (r *testRun) writeInfo() {
	r.t.Helper()
	b, err := json.Marshal(r.info)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "run.json"), b, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRun) check() *checker.Report {
	r.t.Helper()
	r.writeInfo()
	rep, err := checker.Check(r.dir)
	if err != nil {
		r.t.Fatal(err)
	}
	return rep
}

// cleanRun is a run of variant v without violations: g1.1 holds worker 1
// (epoch 1) and loses it at 2 s, g3.1 takes it over at 3 s (epoch 2); g2.1
// holds worker 2 throughout; a key at exactly Until is inside the window.
func cleanRun(t testing.TB, v record.Variant) *testRun {
	r := newTestRun(t, v)
	r.events("g1.1",
		record.Event{T: testAt(0), Kind: record.EventStart},
		record.Event{T: testAt(0.1), Kind: record.EventAcquired, Worker: 1, Epoch: 1, Floor: testM0},
		record.Event{T: testAt(0.2), Kind: record.EventReserved, Worker: 1, Epoch: 1, Until: testM0 + 500},
		record.Event{T: testAt(0.9), Kind: record.EventReserved, Worker: 1, Epoch: 1, Until: testM0 + 1000},
		record.Event{T: testAt(1), Kind: record.EventProgress, Keys: 20, Writes: 3},
		record.Event{T: testAt(2), Kind: record.EventLost, Worker: 1, Epoch: 1, Reason: "expired"},
		record.Event{T: testAt(2), Kind: record.EventProgress, Keys: 20, Writes: 3},
	)
	r.span("g1.1", 1, testM0+1, testM0+10)
	r.events("g2.1",
		record.Event{T: testAt(0), Kind: record.EventStart},
		record.Event{T: testAt(0.1), Kind: record.EventAcquired, Worker: 2, Epoch: 1, Floor: testM0},
		record.Event{T: testAt(0.2), Kind: record.EventReserved, Worker: 2, Epoch: 1, Until: testM0 + 1000},
		record.Event{T: testAt(1), Kind: record.EventProgress, Keys: 21, Writes: 2},
		record.Event{T: testAt(2), Kind: record.EventExit, Keys: 21, Writes: 2},
	)
	r.span("g2.1", 2, testM0+1, testM0+10)
	r.keys("g2.1", testKey(t, testM0+1000, 2, 0))
	r.events("g3.1",
		record.Event{T: testAt(0), Kind: record.EventStart},
		record.Event{T: testAt(3), Kind: record.EventAcquired, Worker: 1, Epoch: 2, Floor: testM0 + 1000},
		record.Event{T: testAt(3), Kind: record.EventReserved, Worker: 1, Epoch: 2, Until: testM0 + 2000},
		record.Event{T: testAt(4), Kind: record.EventProgress, Keys: 20, Writes: 5},
	)
	r.span("g3.1", 1, testM0+1001, testM0+1010)
	r.append("processes.jsonl", record.ProcessRecord{Incarnation: "g2.1", Node: "g2", Start: testAt(0), End: testAt(2), Exit: "exit 0"})
	r.append("faults.jsonl",
		record.FaultRecord{Kind: record.FaultPause, Target: "g1", Start: testAt(1), End: testAt(5)},
		record.FaultRecord{Kind: record.FaultLeaderKill, Target: "e1", Start: testAt(6)},
	)
	return r
}

func TestCheckViolations(t *testing.T) {
	// zombie4 is a second holder of worker 1 epoch 1 (what the lease-only
	// negative control allows), with a valid window.
	zombie4 := func(r *testRun, keys ...int64) {
		r.events("g4.1",
			record.Event{T: testAt(0.5), Kind: record.EventAcquired, Worker: 1, Epoch: 1, Floor: testM0},
			record.Event{T: testAt(0.5), Kind: record.EventReserved, Worker: 1, Epoch: 1, Until: testM0 + 1000},
		)
		r.keys("g4.1", keys...)
	}
	// successor4 takes worker 1 over at epoch 3, above g3.1's reservation,
	// and stamps keys at or below that floor (what the floor control
	// allows when its clock is behind).
	successor4 := func(r *testRun, keys ...int64) {
		r.events("g4.1",
			record.Event{T: testAt(5), Kind: record.EventAcquired, Worker: 1, Epoch: 3, Floor: testM0 + 2000},
			record.Event{T: testAt(5), Kind: record.EventReserved, Worker: 1, Epoch: 3, Until: testM0 + 2000})
		r.keys("g4.1", keys...)
	}
	tests := []struct {
		name    string
		variant record.Variant
		modify  func(t *testing.T, r *testRun)
		want    counts
		fail    string // a substring of a failure; "" means pass
	}{
		{name: "clean", variant: record.VariantFenced, modify: func(*testing.T, *testRun) {}},
		// zombie4's window of worker 1 epoch 1 is g1.1's too.
		{name: "duplicate", variant: record.VariantFenced, want: counts{dup: 1, overlap: 1, windows: 1}, fail: "duplicated keys: 1",
			modify: func(t *testing.T, r *testRun) { zombie4(r, testKey(t, testM0+5, 1, 0)) }},
		{name: "overlap", variant: record.VariantFenced, want: counts{overlap: 1, windows: 1}, fail: "more than one incarnation or epoch: 1",
			modify: func(t *testing.T, r *testRun) { zombie4(r, testKey(t, testM0+5, 1, 7)) }},
		{name: "two overlapping ms", variant: record.VariantFenced, want: counts{overlap: 2, windows: 1}, fail: "more than one incarnation or epoch: 2",
			modify: func(t *testing.T, r *testRun) {
				zombie4(r, testKey(t, testM0+5, 1, 7), testKey(t, testM0+5, 1, 8), testKey(t, testM0+6, 1, 7))
			}},
		{name: "non-monotonic", variant: record.VariantFenced, want: counts{nonmono: 1}, fail: "worker id: 1",
			modify: func(t *testing.T, r *testRun) { r.keys("g2.1", testKey(t, testM0+3, 2, 5)) }},
		{name: "above until", variant: record.VariantFenced, want: counts{fence: 1}, fail: "fence window: 1",
			modify: func(t *testing.T, r *testRun) { r.keys("g2.1", testKey(t, testM0+1001, 2, 0)) }},
		{name: "at floor", variant: record.VariantFenced, want: counts{fence: 1}, fail: "fence window: 1",
			modify: func(t *testing.T, r *testRun) {
				r.events("g5.1",
					record.Event{T: testAt(0.5), Kind: record.EventAcquired, Worker: 3, Epoch: 1, Floor: testM0 + 100},
					record.Event{T: testAt(0.5), Kind: record.EventReserved, Worker: 3, Epoch: 1, Until: testM0 + 1000})
				r.keys("g5.1", testKey(t, testM0+100, 3, 0), testKey(t, testM0+101, 3, 0))
			}},
		{name: "no reservation", variant: record.VariantFenced, want: counts{fence: 2}, fail: "fence window: 2",
			modify: func(t *testing.T, r *testRun) {
				r.events("g5.1", record.Event{T: testAt(0.5), Kind: record.EventAcquired, Worker: 3, Epoch: 1, Floor: testM0})
				r.keys("g5.1", testKey(t, testM0+1, 3, 0), testKey(t, testM0+1, 4, 0))
			}},
		{name: "control without duplicates", variant: record.VariantLeaseOnly, fail: "(lease only, no fence) found no duplicate",
			modify: func(*testing.T, *testRun) {}},
		{name: "control with an overlap only", variant: record.VariantLeaseOnly, want: counts{overlap: 1}, fail: "the faults are not biting",
			modify: func(t *testing.T, r *testRun) { zombie4(r, testKey(t, testM0+5, 1, 7)) }},
		{name: "control with duplicates", variant: record.VariantLeaseOnly, want: counts{dup: 2, overlap: 1},
			modify: func(t *testing.T, r *testRun) {
				// outside g4's window too: not checked in a control
				zombie4(r, testKey(t, testM0+5, 1, 0), testKey(t, testM0+5, 1, 1), testKey(t, testM0+3000, 1, 1))
			}},
		{name: "floor control without duplicates or overlaps", variant: record.VariantIgnoreFloor,
			fail:   "(fence on, floor ignored) found no duplicate and no (worker id, ms) overlap among 61 keys: the faults are not biting",
			modify: func(*testing.T, *testRun) {}},
		{name: "floor control with keys below the floor only", variant: record.VariantIgnoreFloor, want: counts{fence: 1},
			fail:   "the faults are not biting",
			modify: func(t *testing.T, r *testRun) { successor4(r, testKey(t, testM0+500, 1, 0)) }},
		{name: "floor control with an overlap", variant: record.VariantIgnoreFloor, want: counts{overlap: 1, fence: 1},
			modify: func(t *testing.T, r *testRun) { successor4(r, testKey(t, testM0+5, 1, 7)) }},
		{name: "floor control with a duplicate", variant: record.VariantIgnoreFloor, want: counts{dup: 1, overlap: 1, fence: 1},
			modify: func(t *testing.T, r *testRun) { successor4(r, testKey(t, testM0+1005, 1, 0)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cleanRun(t, tt.variant)
			tt.modify(t, r)
			rep := r.check()
			got := countsOf(rep)
			if got != tt.want {
				t.Errorf("counts (dup, overlap, nonmono, fence, windows) = %+v, want %+v", got, tt.want)
			}
			f := rep.Failures()
			switch {
			case tt.fail == "" && len(f) > 0:
				t.Errorf("Failures() = %q, want none", f)
			case tt.fail != "" && !slices.ContainsFunc(f, func(s string) bool { return strings.Contains(s, tt.fail) }):
				t.Errorf("Failures() = %q, want one containing %q", f, tt.fail)
			}
			if len(rep.Warnings) > 0 {
				t.Errorf("Warnings = %q", rep.Warnings)
			}
			for _, v := range [][]checker.Violation{rep.Duplicates.Examples, rep.Overlaps.Examples, rep.NonMonotonic.Examples,
				rep.OutsideFence.Examples, rep.FenceWindowOverlaps.Examples} {
				for _, e := range v {
					if len(e.Incarnations) == 0 || e.Millis < testM0 || e.Detail == "" {
						t.Errorf("example %+v lacks incarnations, ms or detail", e)
					}
				}
			}
			var buf bytes.Buffer
			if err := report.WriteText(&buf, rep); err != nil {
				t.Fatal(err)
			}
			verdict := "PASS"
			if tt.fail != "" {
				verdict = "FAIL"
			}
			if head := "Chaos run: " + verdict + " (" + tt.variant.Label() + ")\n"; !strings.HasPrefix(buf.String(), head) {
				t.Errorf("report starts %q, want %q", strings.SplitN(buf.String(), "\n", 2)[0], head)
			}
		})
	}
}

// TestCheckEpochs checks what tells epochs apart in a fenced run: the fence
// windows of one worker id must be disjoint, across epochs of one
// incarnation and across incarnations, with a successful release lowering
// its window to the last millisecond stamped.
func TestCheckEpochs(t *testing.T) {
	// epochs makes g1.1 hold worker 5 at epoch 1 with the window (M0,
	// M0+100], lose it, and hold it again at epoch 2 from floor2, reserved
	// up to M0+200.
	epochs := func(r *testRun, floor2 int64) {
		r.events("g1.1",
			record.Event{T: testAt(0), Kind: record.EventStart},
			record.Event{T: testAt(0.1), Kind: record.EventAcquired, Worker: 5, Epoch: 1, Floor: testM0},
			record.Event{T: testAt(0.1), Kind: record.EventReserved, Worker: 5, Epoch: 1, Until: testM0 + 100},
			record.Event{T: testAt(1), Kind: record.EventLost, Worker: 5, Epoch: 1, Reason: "expired"},
			record.Event{T: testAt(2), Kind: record.EventAcquired, Worker: 5, Epoch: 2, Floor: floor2},
			record.Event{T: testAt(2), Kind: record.EventReserved, Worker: 5, Epoch: 2, Until: testM0 + 200})
	}
	// sameMs are keys of epoch 1 up to M0+60 and of epoch 2 from M0+60 on,
	// increasing: neither duplicated nor non-monotonic.
	sameMs := func(t *testing.T) []int64 {
		return []int64{testKey(t, testM0+10, 5, 0), testKey(t, testM0+60, 5, 0), // epoch 1
			testKey(t, testM0+60, 5, 1), testKey(t, testM0+150, 5, 0)} // epoch 2
	}
	// sameMsMarked records sameMs with their epochs marked.
	sameMsMarked := func(t *testing.T, r *testRun) {
		k := sameMs(t)
		r.keysIn("g1.1", 1, k[:2]...)
		r.keysIn("g1.1", 2, k[2:]...)
	}
	tests := []struct {
		name    string
		variant record.Variant
		build   func(t *testing.T, r *testRun)
		want    counts
		windows int      // FenceWindows
		unknown int64    // KeysOfUnknownEpoch
		fail    []string // substrings of failures; nil means pass
		details []string // substrings of the examples' details
	}{
		{name: "two epochs of one incarnation in one ms", variant: record.VariantFenced,
			build: func(t *testing.T, r *testRun) {
				epochs(r, testM0+50) // below epoch 1's reservation
				r.keys("g1.1", sameMs(t)...)
			},
			want: counts{windows: 1}, windows: 2, unknown: 4,
			fail:    []string{"fence windows of one worker id that intersect: 1"},
			details: []string{"windows g1.1 e1 (1700000000000, 1700000000100] and g1.1 e2 (1700000000050, 1700000000200]"}},
		{name: "two epochs of one incarnation in one ms, marked", variant: record.VariantFenced,
			build: func(t *testing.T, r *testRun) {
				epochs(r, testM0+50)
				sameMsMarked(t, r)
			},
			want: counts{overlap: 1, windows: 1}, windows: 2,
			fail:    []string{"more than one incarnation or epoch: 1", "fence windows of one worker id that intersect: 1"},
			details: []string{"2 keys in this ms, of g1.1 e1, g1.1 e2"}},
		{name: "disjoint windows, keys in their own", variant: record.VariantFenced,
			build: func(t *testing.T, r *testRun) {
				epochs(r, testM0+100) // at epoch 1's reservation: (M0+100, ...] is open there
				r.keysIn("g1.1", 1, testKey(t, testM0+10, 5, 0), testKey(t, testM0+100, 5, 0))
				r.keysIn("g1.1", 2, testKey(t, testM0+101, 5, 0), testKey(t, testM0+150, 5, 0))
			},
			windows: 2},
		{
			// Epoch 2 stamps in epoch 1's last ms, below its own floor,
			// with a higher sequence: neither duplicate nor non-monotonic.
			name: "disjoint windows, keys of both epochs in one ms, marked", variant: record.VariantFenced,
			build: func(t *testing.T, r *testRun) {
				epochs(r, testM0+100)
				sameMsMarked(t, r)
			},
			want: counts{overlap: 1, fence: 1}, windows: 2,
			fail:    []string{"more than one incarnation or epoch: 1", "fence window: 1"},
			details: []string{"2 keys in this ms, of g1.1 e1, g1.1 e2", "issued in epoch 2; windows e1 (1700000000000, 1700000000100]"}},
		{
			// The same keys without their epoch: with disjoint windows both
			// keys of M0+60 are in epoch 1's window and count as its keys;
			// what the markers are for.
			name: "disjoint windows, keys of both epochs in one ms, epoch unknown", variant: record.VariantFenced,
			build: func(t *testing.T, r *testRun) {
				epochs(r, testM0+100)
				r.keys("g1.1", sameMs(t)...)
			},
			windows: 2, unknown: 4},
		{name: "released, successor below the reservation", variant: record.VariantFenced,
			build: func(t *testing.T, r *testRun) {
				r.events("g1.1",
					record.Event{T: testAt(0.1), Kind: record.EventAcquired, Worker: 5, Epoch: 1, Floor: testM0},
					record.Event{T: testAt(0.1), Kind: record.EventReserved, Worker: 5, Epoch: 1, Until: testM0 + 100},
					record.Event{T: testAt(1), Kind: record.EventReleased, Worker: 5, Epoch: 1, Until: testM0 + 10})
				r.keysIn("g1.1", 1, testKey(t, testM0+10, 5, 0))
				r.events("g2.1",
					record.Event{T: testAt(1.1), Kind: record.EventAcquired, Worker: 5, Epoch: 2, Floor: testM0 + 10},
					record.Event{T: testAt(1.1), Kind: record.EventReserved, Worker: 5, Epoch: 2, Until: testM0 + 200})
				r.keysIn("g2.1", 2, testKey(t, testM0+11, 5, 0))
			},
			windows: 2},
		{name: "release failed, successor below the reservation", variant: record.VariantFenced,
			build: func(t *testing.T, r *testRun) {
				r.events("g1.1",
					record.Event{T: testAt(0.1), Kind: record.EventAcquired, Worker: 5, Epoch: 1, Floor: testM0},
					record.Event{T: testAt(0.1), Kind: record.EventReserved, Worker: 5, Epoch: 1, Until: testM0 + 100},
					record.Event{T: testAt(1), Kind: record.EventReleased, Worker: 5, Epoch: 1, Until: testM0 + 100, Reason: "timeout"})
				r.events("g2.1",
					record.Event{T: testAt(1.1), Kind: record.EventAcquired, Worker: 5, Epoch: 2, Floor: testM0 + 10},
					record.Event{T: testAt(1.1), Kind: record.EventReserved, Worker: 5, Epoch: 2, Until: testM0 + 200})
				r.keys("g2.1", testKey(t, testM0+11, 5, 0))
			},
			want: counts{windows: 1}, windows: 2, unknown: 1,
			fail:    []string{"fence windows of one worker id that intersect: 1"},
			details: []string{"windows g1.1 e1 (1700000000000, 1700000000100] and g2.1 e2 (1700000000010, 1700000000200]"}},
		{name: "an empty window inside another", variant: record.VariantFenced,
			build: func(t *testing.T, r *testRun) {
				r.events("g1.1",
					record.Event{T: testAt(0.1), Kind: record.EventAcquired, Worker: 5, Epoch: 1, Floor: testM0},
					record.Event{T: testAt(0.1), Kind: record.EventReserved, Worker: 5, Epoch: 1, Until: testM0 + 100})
				r.keys("g1.1", testKey(t, testM0+50, 5, 0))
				// Acquired, never reserved: (M0+50, M0+50] holds no ms.
				r.events("g2.1", record.Event{T: testAt(1.1), Kind: record.EventAcquired, Worker: 5, Epoch: 2, Floor: testM0 + 50})
			},
			windows: 2, unknown: 1},
		{name: "floor control: per incarnation, windows not checked", variant: record.VariantIgnoreFloor,
			build: func(t *testing.T, r *testRun) {
				epochs(r, testM0+50)
				r.keys("g1.1", sameMs(t)...)
			},
			fail: []string{"the faults are not biting"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRun(t, tt.variant)
			tt.build(t, r)
			rep := r.check()
			got := countsOf(rep)
			if got != tt.want || rep.FenceWindows != tt.windows || rep.KeysOfUnknownEpoch != tt.unknown {
				t.Errorf("counts (dup, overlap, nonmono, fence, windows) = %+v, %d windows, %d keys of an unknown epoch; want %+v, %d, %d",
					got, rep.FenceWindows, rep.KeysOfUnknownEpoch, tt.want, tt.windows, tt.unknown)
			}
			f := rep.Failures()
			for _, want := range tt.fail {
				if !slices.ContainsFunc(f, func(s string) bool { return strings.Contains(s, want) }) {
					t.Errorf("Failures() = %q, want one containing %q", f, want)
				}
			}
			if tt.fail == nil && len(f) > 0 {
				t.Errorf("Failures() = %q, want none", f)
			}
			var all []checker.Violation
			for _, v := range [][]checker.Violation{rep.Overlaps.Examples, rep.OutsideFence.Examples, rep.FenceWindowOverlaps.Examples} {
				for _, e := range v {
					if !slices.Equal(e.Incarnations, []string{"g1.1"}) && !slices.Equal(e.Incarnations, []string{"g1.1", "g2.1"}) ||
						e.Worker != 5 || e.Millis <= testM0 {
						t.Errorf("example %+v: want worker 5, g1.1 (and g2.1), a ms after the start", e)
					}
				}
				all = append(all, v...)
			}
			for _, want := range tt.details {
				if !slices.ContainsFunc(all, func(e checker.Violation) bool { return strings.Contains(e.Detail, want) }) {
					t.Errorf("examples %+v: want a detail containing %q", all, want)
				}
			}
			var buf bytes.Buffer
			if err := report.WriteText(&buf, rep); err != nil {
				t.Fatal(err)
			}
			line := fmt.Sprintf("  fence windows %d   pairs intersecting %d   keys of an unknown epoch %d\n",
				tt.windows, tt.want.windows, tt.unknown)
			if tt.variant != record.VariantFenced {
				line = "  fence windows not checked\n"
			}
			if !strings.Contains(buf.String(), line) {
				t.Errorf("report lacks %q:\n%s", line, buf.String())
			}
			if tt.want.windows > 0 && !strings.Contains(buf.String(), "  fence windows: worker 5 from ms ") {
				t.Errorf("report lacks the fence windows example:\n%s", buf.String())
			}
		})
	}
}

func TestCheckCleanRunFigures(t *testing.T) {
	rep := cleanRun(t, record.VariantFenced).check()
	k := rep.Keys
	if k.Attempted != 61 || k.Distinct != 61 || k.Acknowledged != 61 {
		t.Errorf("Keys = %+v, want 61 attempted, distinct and acknowledged", k)
	}
	if k.Min != testKey(t, testM0+1, 1, 0) || k.Max != testKey(t, testM0+1010, 1, 1) {
		t.Errorf("range = %d..%d", k.Min, k.Max)
	}
	if rep.FenceWindows != 3 || rep.FenceWindowOverlaps.Count != 0 {
		t.Errorf("%d fence windows, %d intersecting; want 3, 0", rep.FenceWindows, rep.FenceWindowOverlaps.Count)
	}
	if rep.Acquisitions != 3 || rep.Takeovers != 1 || rep.ZombieTakeovers != 0 {
		t.Errorf("acquisitions, takeovers, zombies = %d, %d, %d; want 3, 1, 0", rep.Acquisitions, rep.Takeovers, rep.ZombieTakeovers)
	}
	if rep.Losses["expired"] != 1 {
		t.Errorf("Losses = %v", rep.Losses)
	}
	if rep.Writes != 10 || rep.WriteRate != 0.5 || rep.Duration != 20*time.Second {
		t.Errorf("Writes %d, WriteRate %v, Duration %v; want 10, 0.5, 20s", rep.Writes, rep.WriteRate, rep.Duration)
	}
	if len(rep.Nodes) != 3 || rep.Nodes[1].Node != "g2" || rep.Nodes[1].Keys != 21 || rep.Nodes[1].KeysPerSecond != 21.0/20 {
		t.Errorf("Nodes = %+v", rep.Nodes)
	}
	// The pause of g1 ends at 5 s; g1.1 issues nothing after it.
	if rep.Nodes[0].Recoveries != 0 {
		t.Errorf("g1 recoveries = %d, want 0", rep.Nodes[0].Recoveries)
	}
	if len(rep.Faults) != len(record.FaultKinds) {
		t.Errorf("%d fault kinds, want %d", len(rep.Faults), len(record.FaultKinds))
	}
	for _, f := range rep.Faults {
		want := stats.FaultStats{Kind: f.Kind}
		switch f.Kind {
		case record.FaultPause:
			want = stats.FaultStats{Kind: f.Kind, Count: 1, Total: 4 * time.Second, Max: 4 * time.Second}
		case record.FaultLeaderKill:
			want.Count = 1
		}
		if f != want {
			t.Errorf("fault stats %+v, want %+v", f, want)
		}
	}
	if rep.PausesVsTTL != [5]int{0, 0, 0, 1, 0} {
		t.Errorf("PausesVsTTL = %v (a 2-TTL pause is in the 2-5 bucket)", rep.PausesVsTTL)
	}
	var buf bytes.Buffer
	if err := report.WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	for _, k := range record.FaultKinds {
		if !strings.Contains(buf.String(), k) {
			t.Errorf("report lacks fault kind %q", k)
		}
	}
	t.Logf("\n%s", buf.String())
}

func TestCheckZombieTakeover(t *testing.T) {
	// g1.1 holds worker 1 epoch 1 from 0 s; g2.1 takes epoch 2 at 3 s.
	tests := []struct {
		name    string
		g1      []record.Event
		proc    *record.ProcessRecord
		zombies int
		window  time.Duration
	}{
		{name: "alive, lost later", g1: []record.Event{{T: testAt(4.5), Kind: record.EventLost, Worker: 1, Epoch: 1, Reason: "compare failed"}},
			zombies: 1, window: 1500 * time.Millisecond},
		{name: "alive until killed", proc: &record.ProcessRecord{Incarnation: "g1.1", Node: "g1", Start: testAt(0), End: testAt(7), Exit: "killed"},
			zombies: 1, window: 4 * time.Second},
		{name: "alive to the run's end", zombies: 1, window: 17 * time.Second},
		{name: "killed before", proc: &record.ProcessRecord{Incarnation: "g1.1", Node: "g1", Start: testAt(0), End: testAt(2.5), Exit: "killed"}},
		{name: "lost before", g1: []record.Event{{T: testAt(2.5), Kind: record.EventLost, Worker: 1, Epoch: 1, Reason: "expired"}}},
		{name: "released at the takeover", g1: []record.Event{{T: testAt(3), Kind: record.EventReleased, Worker: 1, Epoch: 1, Until: testM0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRun(t, record.VariantFenced)
			r.events("g1.1",
				record.Event{T: testAt(0), Kind: record.EventStart},
				record.Event{T: testAt(0.1), Kind: record.EventAcquired, Worker: 1, Epoch: 1, Floor: testM0},
				record.Event{T: testAt(0.2), Kind: record.EventReserved, Worker: 1, Epoch: 1, Until: testM0 + 1000})
			r.events("g1.1", tt.g1...)
			r.events("g2.1",
				record.Event{T: testAt(0), Kind: record.EventStart},
				record.Event{T: testAt(3), Kind: record.EventAcquired, Worker: 1, Epoch: 2, Floor: testM0 + 1000})
			if tt.proc != nil {
				r.append("processes.jsonl", *tt.proc)
			}
			rep := r.check()
			if rep.Takeovers != 1 || rep.ZombieTakeovers != tt.zombies || rep.ZombieWindow != tt.window {
				t.Errorf("takeovers %d, zombie takeovers %d, window %v; want 1, %d, %v",
					rep.Takeovers, rep.ZombieTakeovers, rep.ZombieWindow, tt.zombies, tt.window)
			}
		})
	}
}

func TestCheckStalls(t *testing.T) {
	r := newTestRun(t, record.VariantFenced)
	// 99 stalls of 10, 20, ..., 990 ms, then one open stall of 1 s ending
	// with the process.
	var evs []record.Event
	evs = append(evs, record.Event{T: testAt(0), Kind: record.EventStart})
	sec := 0.5
	for i := 1; i <= 99; i++ {
		evs = append(evs, record.Event{T: testAt(sec), Kind: record.EventStall, Reason: "no-reservation"},
			record.Event{T: testAt(sec) + int64(i)*int64(10*time.Millisecond), Kind: record.EventResume})
		sec += 0.01
	}
	evs = append(evs, record.Event{T: testAt(10), Kind: record.EventStall, Reason: "clock-backwards"})
	evs = append(evs, record.Event{T: testAt(10.5), Kind: record.EventStall, Reason: "ignored while stalled"})
	r.events("g1.1", evs...)
	r.events("g1.1", record.Event{T: testAt(10.5), Kind: record.EventResume}) // a resume ...
	r.events("g1.1", record.Event{T: testAt(10.6), Kind: record.EventResume}) // ... and one without a stall
	r.events("g1.2", record.Event{T: testAt(11), Kind: record.EventStart}, record.Event{T: testAt(11.5), Kind: record.EventStall, Reason: "no-reservation"})
	r.append("processes.jsonl", record.ProcessRecord{Incarnation: "g1.2", Node: "g1", Start: testAt(11), End: testAt(12.5), Exit: "killed"})
	rep := r.check()
	n := rep.Nodes[0]
	// 10..990 ms, 500 ms (g1.1's last), 1 s (g1.2's open stall): 101 stalls.
	if n.Stalls != 101 || n.StallP50 != 500*time.Millisecond || n.StallP99 != 990*time.Millisecond || n.StallMax != time.Second {
		t.Errorf("stalls %d p50 %v p99 %v max %v; want 101, 500ms, 990ms, 1s", n.Stalls, n.StallP50, n.StallP99, n.StallMax)
	}
	wantNR := 49500*time.Millisecond + time.Second
	if got := rep.StalledByReason; got["no-reservation"] != wantNR || got["clock-backwards"] != 500*time.Millisecond || len(got) != 2 {
		t.Errorf("StalledByReason = %v, want no-reservation %v, clock-backwards 500ms", got, wantNR)
	}
	if n.Stalled != wantNR+500*time.Millisecond {
		t.Errorf("Stalled = %v", n.Stalled)
	}
}

func TestCheckRecovery(t *testing.T) {
	r := newTestRun(t, record.VariantFenced)
	r.events("g1.1",
		record.Event{T: testAt(0), Kind: record.EventStart},
		record.Event{T: testAt(1), Kind: record.EventProgress, Keys: 10},
		record.Event{T: testAt(2), Kind: record.EventProgress, Keys: 10},
		record.Event{T: testAt(3), Kind: record.EventProgress, Keys: 10},
		record.Event{T: testAt(4), Kind: record.EventProgress, Keys: 30},
		record.Event{T: testAt(5), Kind: record.EventProgress, Keys: 50})
	r.events("g1.2", record.Event{T: testAt(6), Kind: record.EventStart}, record.Event{T: testAt(7.5), Kind: record.EventProgress, Keys: 5})
	r.append("faults.jsonl",
		record.FaultRecord{Kind: record.FaultPartition, Target: "g1", Start: testAt(0.5), End: testAt(2.5)}, // first key after in (3, 4]
		record.FaultRecord{Kind: record.FaultKill, Target: "g1", Start: testAt(5.5)},                        // first key after in (6, 7.5]
		record.FaultRecord{Kind: record.FaultPause, Target: "g2", Start: testAt(1), End: testAt(2)})
	rep := r.check()
	n := rep.Nodes[0]
	if n.Recoveries != 2 || n.RecoveryP50 != 1500*time.Millisecond || n.RecoveryMax != 2*time.Second {
		t.Errorf("recoveries %d p50 %v max %v; want 2, 1.5s, 2s", n.Recoveries, n.RecoveryP50, n.RecoveryMax)
	}
	s := rep.Series[0]
	if len(s.Segments) != 2 || len(s.Segments[0]) != 5 || s.Segments[0][3].KeysPerSecond != 20 || s.Segments[1][0].KeysPerSecond != 5.0/1.5 {
		t.Errorf("Series = %+v", s)
	}
}

func TestCheckBadInput(t *testing.T) {
	r := cleanRun(t, record.VariantFenced)
	// A truncated last keys record and a corrupt last events line.
	f, err := os.OpenFile(filepath.Join(r.dir, "nodes", "g2", record.KeyFileName("g2.1")), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ev := filepath.Join(r.dir, "nodes", "g3", record.EventFileName("g3.1"))
	f, err = os.OpenFile(ev, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"t":12,"kind":"resu`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rep := r.check()
	if len(rep.Failures()) != 0 || rep.Keys.Attempted != 61 {
		t.Errorf("Failures %q, %d keys; want a pass over the 61 whole keys", rep.Failures(), rep.Keys.Attempted)
	}
	joined := strings.Join(rep.Warnings, "\n")
	if !strings.Contains(joined, "keys of g2.1: truncated last record (3 of 8 bytes)") || !strings.Contains(joined, "g3.1.events:5") {
		t.Errorf("Warnings = %q, want the truncated record and the corrupt line", rep.Warnings)
	}

	t.Run("missing run.json", func(t *testing.T) {
		if _, err := checker.Check(t.TempDir()); err == nil {
			t.Error("Check of an empty directory succeeded")
		}
	})
	t.Run("garbage", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range 50 {
			r := cleanRun(t, record.Variants[i%len(record.Variants)])
			junk := make([]byte, rng.IntN(200))
			for j := range junk {
				junk[j] = byte(rng.IntN(256))
			}
			keys := make([]int64, rng.IntN(50))
			for j := range keys {
				keys[j] = int64(rng.Uint64()) // negative keys too
			}
			r.keys("g9.1", keys...)
			for _, name := range []string{"nodes/g1/g1.1.events", "nodes/g9/g9.1.keys", "faults.jsonl", "processes.jsonl"} {
				if err := os.WriteFile(filepath.Join(r.dir, name), junk, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r.events("g9.1", record.Event{T: -5, Kind: record.EventAcquired, Worker: -3, Epoch: -1}, record.Event{T: 1, Kind: record.EventStall})
			rep := r.check()
			if err := errors.Join(report.WriteText(io.Discard, rep), report.WriteSVG(io.Discard, rep)); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// BenchmarkCheck10MKeys checks a run of 10 million keys (5 nodes, 2
// incarnations each) and reports the time per key, the maximum resident
// set size, and the ratio to sorting the same keys alone (the baseline).
func BenchmarkCheck10MKeys(b *testing.B) {
	const incs, perInc = 10, 1_000_000
	r := newTestRun(b, record.VariantFenced)
	rng := rand.New(rand.NewPCG(3, 4))
	all := make([]int64, 0, incs*perInc)
	for i := range incs {
		inc := record.IncarnationName("g"+string(rune('1'+i/2)), 1+i%2)
		w := int64(i)
		floor := testM0 + int64(i%2)*1_000_000
		r.events(inc,
			record.Event{T: testAt(float64(i)), Kind: record.EventAcquired, Worker: int(w), Epoch: int64(1 + i%2), Floor: floor},
			record.Event{T: testAt(float64(i)), Kind: record.EventReserved, Worker: int(w), Epoch: int64(1 + i%2), Until: floor + 1_000_000},
			record.Event{T: testAt(float64(i) + 1), Kind: record.EventExit, Keys: perInc})
		keys := make([]int64, 0, perInc)
		ms, seq := floor+1, int64(0)
		for range perInc {
			keys = append(keys, testKey(b, ms, w, seq))
			if seq++; seq > int64(rng.IntN(snowflake.MaxSequence)) {
				ms, seq = ms+1, 0
			}
		}
		r.keys(inc, keys...)
		all = append(all, keys...)
	}
	r.writeInfo()
	b.ReportAllocs()
	b.ResetTimer()
	var rep *checker.Report
	var check, cpu time.Duration
	for b.Loop() {
		start, cpu0 := time.Now(), benchCPU(b)
		var err error
		if rep, err = checker.Check(r.dir); err != nil {
			b.Fatal(err)
		}
		check, cpu = time.Since(start), benchCPU(b)-cpu0
	}
	b.StopTimer()
	start := time.Now()
	slices.Sort(all)
	sorting := time.Since(start)
	if rep.Keys.Attempted != incs*perInc || len(rep.Failures()) != 0 {
		b.Fatalf("%d keys, failures %q", rep.Keys.Attempted, rep.Failures())
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(check.Nanoseconds())/float64(rep.Keys.Attempted), "ns/key")
	b.ReportMetric(float64(ru.Maxrss)/1024, "maxRSS-MiB")
	b.ReportMetric(check.Seconds()/sorting.Seconds(), "x-sort")
	b.Logf("checked %d keys in %v, %v CPU (sorting them alone: %v), max RSS %d MiB",
		rep.Keys.Attempted, check.Round(time.Millisecond), cpu.Round(time.Millisecond), sorting.Round(time.Millisecond), ru.Maxrss/1024)
}

// benchCPU returns the process's user and system CPU time so far.
func benchCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestHostileCheckEpochRestart checks runs where an operator deleted a fence:
// the next claim of the worker id starts at epoch 1 again, so one epoch
// number can name two holds, of one incarnation or of two. The checker must
// tell them apart: no false violation when the new floor is above the old
// reservation, every violation when it is not, and takeovers counted in the
// order the claims happened.
func TestHostileCheckEpochRestart(t *testing.T) {
	// g1.1 holds worker 5 at epoch 1, (M0, M0+100], then epoch 2,
	// (M0+100, M0+200], and is still issuing when the fence is deleted at
	// 2.5 s; it notices at 3.2 s.
	g1 := func(t *testing.T, r *testRun) {
		r.events("g1.1",
			record.Event{T: testAt(0), Kind: record.EventStart},
			record.Event{T: testAt(0.1), Kind: record.EventAcquired, Worker: 5, Epoch: 1, Floor: testM0},
			record.Event{T: testAt(0.1), Kind: record.EventReserved, Worker: 5, Epoch: 1, Until: testM0 + 100},
			record.Event{T: testAt(1), Kind: record.EventLost, Worker: 5, Epoch: 1, Reason: "expired"},
			record.Event{T: testAt(2), Kind: record.EventAcquired, Worker: 5, Epoch: 2, Floor: testM0 + 100},
			record.Event{T: testAt(2), Kind: record.EventReserved, Worker: 5, Epoch: 2, Until: testM0 + 200},
			record.Event{T: testAt(3.2), Kind: record.EventLost, Worker: 5, Epoch: 2, Reason: "fence deleted"})
		r.keysIn("g1.1", 1, testKey(t, testM0+50, 5, 0))
		r.keysIn("g1.1", 2, testKey(t, testM0+150, 5, 0))
	}
	// g2 claims worker 5 at 3 s at epoch 1 again, from floor, and stamps ms.
	g2 := func(t *testing.T, r *testRun, floor, ms int64) {
		r.events("g2.1",
			record.Event{T: testAt(0), Kind: record.EventStart},
			record.Event{T: testAt(3), Kind: record.EventAcquired, Worker: 5, Epoch: 1, Floor: floor},
			record.Event{T: testAt(3), Kind: record.EventReserved, Worker: 5, Epoch: 1, Until: max(floor, testM0) + 300})
		r.keysIn("g2.1", 1, testKey(t, ms, 5, 0))
	}
	tests := []struct {
		name      string
		variant   record.Variant
		build     func(t *testing.T, r *testRun)
		want      counts
		takeovers int
		zombies   int
		fail      []string // substrings of failures; nil means pass
	}{
		{name: "new floor above the old reservation", variant: record.VariantFenced,
			build: func(t *testing.T, r *testRun) {
				g1(t, r)
				g2(t, r, testM0+65_000, testM0+65_010)
			},
			takeovers: 1, zombies: 1},
		{name: "absent fence read as floor 0", variant: record.VariantFenced,
			build: func(t *testing.T, r *testRun) {
				g1(t, r)
				g2(t, r, 0, testM0+50)
			},
			want: counts{dup: 1, overlap: 1, windows: 2}, takeovers: 1, zombies: 1,
			fail: []string{"duplicated keys: 1", "fence windows of one worker id that intersect: 2"}},
		{name: "absent fence read as floor 0, control", variant: record.VariantTrustAbsentFence,
			build: func(t *testing.T, r *testRun) {
				g1(t, r)
				g2(t, r, 0, testM0+50)
			},
			want: counts{dup: 1, overlap: 1}, takeovers: 1, zombies: 1},
		{name: "control without a duplicate", variant: record.VariantTrustAbsentFence,
			build: func(t *testing.T, r *testRun) {
				g1(t, r)
				g2(t, r, 0, testM0+51)
			},
			takeovers: 1, zombies: 1,
			fail: []string{"found no duplicate among 3 keys after 0 fence deletions: the faults are not biting"}},
		{
			// One incarnation claims epoch 1 of worker 5 twice, the second
			// time from floor 0, and stamps ms M0+60 in both holds with
			// increasing sequences: neither a duplicate nor non-monotonic,
			// but the two holds' windows intersect.
			name: "one incarnation holds one epoch number twice", variant: record.VariantFenced,
			build: func(t *testing.T, r *testRun) {
				r.events("g1.1",
					record.Event{T: testAt(0.1), Kind: record.EventAcquired, Worker: 5, Epoch: 1, Floor: testM0},
					record.Event{T: testAt(0.1), Kind: record.EventReserved, Worker: 5, Epoch: 1, Until: testM0 + 100},
					record.Event{T: testAt(1), Kind: record.EventLost, Worker: 5, Epoch: 1, Reason: "fence deleted"},
					record.Event{T: testAt(1.1), Kind: record.EventAcquired, Worker: 5, Epoch: 1, Floor: 0},
					record.Event{T: testAt(1.1), Kind: record.EventReserved, Worker: 5, Epoch: 1, Until: testM0 + 200})
				r.keysIn("g1.1", 1, testKey(t, testM0+60, 5, 0), testKey(t, testM0+60, 5, 1))
			},
			want: counts{windows: 1},
			fail: []string{"fence windows of one worker id that intersect: 1"}},
		{
			// The same with the second floor at the first reservation:
			// the holds' windows are disjoint and each key is in its own.
			name: "one incarnation holds one epoch number twice, disjoint", variant: record.VariantFenced,
			build: func(t *testing.T, r *testRun) {
				r.events("g1.1",
					record.Event{T: testAt(0.1), Kind: record.EventAcquired, Worker: 5, Epoch: 1, Floor: testM0},
					record.Event{T: testAt(0.1), Kind: record.EventReserved, Worker: 5, Epoch: 1, Until: testM0 + 100},
					record.Event{T: testAt(1), Kind: record.EventLost, Worker: 5, Epoch: 1, Reason: "fence deleted"},
					record.Event{T: testAt(1.1), Kind: record.EventAcquired, Worker: 5, Epoch: 1, Floor: testM0 + 100},
					record.Event{T: testAt(1.1), Kind: record.EventReserved, Worker: 5, Epoch: 1, Until: testM0 + 200})
				r.keysIn("g1.1", 1, testKey(t, testM0+60, 5, 0), testKey(t, testM0+160, 5, 1))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRun(t, tt.variant)
			tt.build(t, r)
			rep := r.check()
			if got := countsOf(rep); got != tt.want {
				t.Errorf("counts (dup, overlap, nonmono, fence, windows) = %+v, want %+v", got, tt.want)
			}
			if rep.Takeovers != tt.takeovers || rep.ZombieTakeovers != tt.zombies {
				t.Errorf("takeovers %d, while alive %d; want %d, %d", rep.Takeovers, rep.ZombieTakeovers, tt.takeovers, tt.zombies)
			}
			f := rep.Failures()
			for _, want := range tt.fail {
				if !slices.ContainsFunc(f, func(s string) bool { return strings.Contains(s, want) }) {
					t.Errorf("Failures() = %q, want one containing %q", f, want)
				}
			}
			if tt.fail == nil && len(f) > 0 {
				t.Errorf("Failures() = %q, want none", f)
			}
		})
	}
}
