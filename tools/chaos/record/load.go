package record

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Run is a run directory as read by Load: its parameters, its fault and
// process records and every incarnation's events. Keys files are not read;
// KeysPath names them for ReadKeys.
//
// Times of events and faults are real wall time (unix ns). An
// incarnation's life runs from its process record's Start (or its first
// event) to the record's End; without a record or with End 0, to its
// EventExit, or else to the run's end; never before its last event. The
// run's end is RunInfo.End, or the last recorded event or fault when End
// is 0.
type Run struct {
	Dir  string
	Info RunInfo
	// End is the run's end, unix ns.
	End int64
	// Duration is End - Info.Start.
	Duration time.Duration
	// Incarnations are the incarnations found under nodes/ (every name
	// with an .events or a .keys file), sorted by node then name.
	Incarnations []*Incarnation
	// Faults are faults.jsonl's records, as read.
	Faults []FaultRecord
	// Warnings lists problems with the records that did not stop Load (a
	// corrupt events line, a missing faults or processes file, a run that
	// did not finish).
	Warnings []string
}

// Incarnation is what a run directory records of one incarnation.
type Incarnation struct {
	Name, Node string
	Events     []Event
	Process    *ProcessRecord // nil when the harness recorded no end
	Counted    int64          // the last Keys counter of its events
	Writes     int64          // the last Writes counter of its events
	Start, End int64          // unix ns of the process life
}

// KeysPath is the path of x's keys file.
func (r *Run) KeysPath(x *Incarnation) string {
	return filepath.Join(r.Dir, "nodes", x.Node, KeyFileName(x.Name))
}

// Load reads the run directory dir, which it does not modify. It returns
// an error only when run.json or the nodes directory cannot be read, or
// run.json names no known variant; a corrupt events line or a missing or
// corrupt faults or processes file is listed in Run.Warnings and Load goes
// on with what could be read.
func Load(dir string) (*Run, error) {
	r := &Run{Dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &r.Info); err != nil {
		return nil, fmt.Errorf("run.json: %w", err)
	}
	if _, err := ParseVariant(string(r.Info.Variant)); err != nil {
		return nil, fmt.Errorf("run.json: %w", err)
	}
	names, err := incarnations(dir)
	if err != nil {
		return nil, err
	}
	r.Faults = readLines[FaultRecord](r, filepath.Join(dir, "faults.jsonl"))
	procs := map[string]*ProcessRecord{}
	for _, p := range readLines[ProcessRecord](r, filepath.Join(dir, "processes.jsonl")) {
		procs[p.Incarnation] = &p
	}

	var last int64 // latest event or fault, unix ns
	for _, n := range names {
		x := &Incarnation{Name: n[1], Node: n[0], Process: procs[n[1]]}
		r.Incarnations = append(r.Incarnations, x)
		path := filepath.Join(dir, "nodes", x.Node, EventFileName(x.Name))
		evs, err := ReadJSONLines[Event](path)
		if err != nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("events of %s: %v (checked the %d events before it)", x.Name, err, len(evs)))
		}
		x.Events = evs
		for _, e := range evs {
			last = max(last, e.T)
			if e.Kind == EventProgress || e.Kind == EventExit {
				x.Counted = max(x.Counted, e.Keys)
			}
			x.Writes = max(x.Writes, e.Writes)
		}
	}
	for _, f := range r.Faults {
		last = max(last, f.Start, f.End)
	}
	r.End = r.Info.End
	if r.End == 0 {
		r.End = max(last, r.Info.Start)
		r.Warnings = append(r.Warnings, "run.json has no end: the run did not finish; duration is up to the last record")
	}
	r.Duration = time.Duration(r.End - r.Info.Start)
	for _, x := range r.Incarnations {
		x.Start, x.End = life(x, r.End)
	}
	return r, nil
}

// readLines reads a JSON-lines file of the run; a missing or corrupt file
// is a warning.
func readLines[T any](r *Run, path string) []T {
	v, err := ReadJSONLines[T](path)
	if err != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %v (used the %d records before it)", filepath.Base(path), err, len(v)))
	}
	return v
}

// incarnations lists the incarnations under dir/nodes as (node,
// incarnation) pairs sorted by node then incarnation: every name with an
// .events or a .keys file.
func incarnations(dir string) ([][2]string, error) {
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
	return out, nil
}

// life returns an incarnation's process life, unix ns: from the process
// record's Start (or the first event) to its End; without a record or with
// End 0, to its exit event, or else the run's end, and never before its
// last event.
func life(x *Incarnation, runEnd int64) (start, end int64) {
	var first, last, exit int64
	for i, e := range x.Events {
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
	if x.Process != nil {
		if x.Process.Start != 0 {
			start = x.Process.Start
		}
		if x.Process.End != 0 {
			end = x.Process.End
		}
	}
	return start, max(end, last)
}
