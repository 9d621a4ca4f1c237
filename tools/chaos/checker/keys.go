package checker

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/snowflake"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
)

// checkEntry is one recorded key and the index of its holder.
type checkEntry struct {
	key    int64
	holder uint32
}

// checkHolder is what issued a key: an incarnation and, in a fenced run,
// the epoch the key was issued in (record.EpochUnknown otherwise, and when neither
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
// record.EventAcquired; end is until lowered by a successful release (the last
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

// checkKeys reads every keys file and runs the key checks: per-incarnation
// monotonicity and fence windows while reading, then uniqueness and overlap
// on one sorted slice; in a fenced run also the fence windows' disjointness.
// It returns the number of keys on record of each incarnation.
func checkKeys(run *record.Run, r *Report) (keys []int64) {
	incs := run.Incarnations
	keys = make([]int64, len(incs))
	var total int64
	for _, x := range incs {
		if fi, err := os.Stat(run.KeysPath(x)); err == nil {
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
	if r.Run.Variant == record.VariantFenced {
		windows = new(checkWindows)
	}
	for i, x := range incs {
		if r.Run.Variant.Fenced() {
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
		err := record.ReadKeys(run.KeysPath(x), func(epoch, k int64) {
			p := snowflake.Decompose(k)
			w := p.WorkerID
			if seen[w] && k <= last[w] {
				var detail string
				if r.NonMonotonic.room() {
					q := snowflake.Decompose(last[w])
					detail = fmt.Sprintf("after %d (ms %d, seq %d)", last[w], q.Millis+r.Run.EpochMillis, q.Sequence)
				}
				r.NonMonotonic.add(k, r.Run.EpochMillis, []string{x.Name}, detail)
			}
			seen[w], last[w] = true, k
			holder := checkHolder{inc: i, epoch: record.EpochUnknown, window: -1}
			if r.Run.Variant.Fenced() {
				// The window of the key's epoch, or of any epoch when its
				// epoch is unknown.
				ms := p.Millis + r.Run.EpochMillis
				fs := fences[w]
				ok := func(f checkFence) bool { return f.has(ms) && (epoch == record.EpochUnknown || f.epoch == epoch) }
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
						if epoch != record.EpochUnknown {
							detail = fmt.Sprintf("issued in epoch %d; %s", epoch, detail)
						}
					}
					r.OutsideFence.add(k, r.Run.EpochMillis, []string{x.Name}, detail)
				}
				switch {
				case windows == nil:
				case epoch != record.EpochUnknown:
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
			keys[i]++
		})
		missing := errors.Is(err, os.ErrNotExist)
		if err != nil && !missing {
			r.Warnings = append(r.Warnings, fmt.Sprintf("keys of %s: %v (checked the %d keys before it)", x.Name, err, keys[i]))
		}
		switch {
		case missing && x.Counted > 0:
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s counted %d keys issued but has no keys file", x.Name, x.Counted))
		case x.Counted > keys[i]:
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s counted %d keys issued but recorded only %d", x.Name, x.Counted, keys[i]))
		}
		r.Keys.Acknowledged += x.Counted
	}
	r.Keys.Attempted = int64(len(entries))
	checkSorted(r, incs, holders, entries)
	if windows != nil {
		checkDisjoint(r, incs, windows)
	}
	return keys
}

// checkFences sets out to an incarnation's fence windows by worker id:
// (Floor of its record.EventAcquired, max Until of its record.EventReserved] for each
// acquisition, in event order. A reservation or release belongs to the
// latest acquisition of its worker id and epoch before it (one incarnation
// can hold one epoch number twice when a fence was deleted in between). An
// acquisition without a reservation has an empty window; events of a worker
// id out of range, and reservations before any acquisition of their epoch,
// are ignored. The end of a window is its until, lowered to the Until of a
// successful record.EventReleased (a release lowers the fence to the last
// millisecond stamped; one that failed may or may not have).
func checkFences(x *record.Incarnation, out *[snowflake.MaxWorkerID + 1][]checkFence) {
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
	for _, e := range x.Events {
		if e.Worker < 0 || e.Worker > snowflake.MaxWorkerID {
			continue
		}
		switch e.Kind {
		case record.EventAcquired:
			out[e.Worker] = append(out[e.Worker], checkFence{epoch: e.Epoch, floor: e.Floor, until: e.Floor})
		case record.EventReserved:
			if j := latest(e.Worker, e.Epoch); j >= 0 {
				f := &out[e.Worker][j]
				f.until = max(f.until, e.Until)
			}
		case record.EventReleased:
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
func checkSorted(r *Report, incs []*record.Incarnation, holders []checkHolder, entries []checkEntry) {
	slices.SortFunc(entries, func(a, b checkEntry) int { return cmp.Compare(a.key, b.key) })
	n := len(entries)
	if n > 0 {
		r.Keys.Min, r.Keys.Max = entries[0].key, entries[n-1].key
	}
	names := func(es []checkEntry) []string {
		var s []string
		for _, e := range es {
			s = append(s, incs[holders[e.holder].inc].Name)
		}
		slices.Sort(s)
		return slices.Compact(s)
	}
	// holderNames names the holders of es: "g1.1 e3, g1.1 e5".
	holderNames := func(es []checkEntry) string {
		var s []string
		for _, e := range es {
			h := holders[e.holder]
			name := incs[h.inc].Name
			if h.epoch != record.EpochUnknown {
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
func checkDisjoint(r *Report, incs []*record.Incarnation, windows *checkWindows) {
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
				x, y := incs[a.inc].Name, incs[b.inc].Name
				v.Examples = append(v.Examples, Violation{Worker: int64(w), Millis: b.floor + 1,
					Incarnations: slices.Compact([]string{x, y}),
					Detail: fmt.Sprintf("windows %s e%d (%d, %d] and %s e%d (%d, %d]",
						x, a.epoch, a.floor, a.end, y, b.epoch, b.floor, b.end)})
			}
		}
	}
}
