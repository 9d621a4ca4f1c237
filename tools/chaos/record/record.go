// Package record is the format of a chaos run's directory: what the harness
// and the node processes write while a run goes on, and what the checker
// reads afterwards.
//
// A run directory holds:
//
//	run.json                      the run's parameters (RunInfo)
//	faults.jsonl                  one FaultRecord per injected fault
//	processes.jsonl               one ProcessRecord per node process that ended
//	nodes/<node>/<incarnation>.keys    the keys an incarnation issued, in issue order:
//	                                   little-endian uint64s, appended before a key counts as issued,
//	                                   each run of keys of one epoch after an epoch marker
//	nodes/<node>/<incarnation>.events  the incarnation's Events, one JSON object a line
//
// An incarnation is one start of a node process ("g3.7": node g3, seventh
// start); its files are written only by that process.
package record

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Event kinds written by a node process.
const (
	// EventStart: the process started (Offset is its clock offset:
	// node.Config.ClockOffset).
	EventStart = "start"
	// EventAcquired: the node claimed Worker at Epoch; it stamps keys > Floor.
	EventAcquired = "acquired"
	// EventReserved: a reservation up to Until (unix ms of the node's
	// clock) for Worker at Epoch was committed.
	EventReserved = "reserved"
	// EventLost: the node stopped issuing on Worker at Epoch (Reason says
	// why).
	EventLost = "lost"
	// EventReleased: graceful release; the fence was lowered to Until.
	EventReleased = "released"
	// EventStall: key requests started failing (Reason: the error class).
	EventStall = "stall"
	// EventResume: a key request succeeded again after a stall.
	EventResume = "resume"
	// EventProgress: periodic counters (Keys, Writes).
	EventProgress = "progress"
	// EventClock: the node's clock offset changed to Offset (ns).
	EventClock = "clock"
	// EventExit: the process is exiting normally (Keys is the total).
	EventExit = "exit"
)

// Event is one line of an incarnation's events file. T is the real wall
// time (unix ns, never the injected clock), so events of all processes and
// the harness's faults share one time line.
type Event struct {
	T      int64  `json:"t"`
	Kind   string `json:"kind"`
	Worker int    `json:"worker,omitempty"`
	Epoch  int64  `json:"epoch,omitempty"`
	Floor  int64  `json:"floor,omitempty"`  // unix ms (node clock)
	Until  int64  `json:"until,omitempty"`  // unix ms (node clock)
	Keys   int64  `json:"keys,omitempty"`   // keys issued so far by this incarnation
	Writes int64  `json:"writes,omitempty"` // registry writes so far by this incarnation
	Offset int64  `json:"offset,omitempty"` // injected clock offset, ns
	Reason string `json:"reason,omitempty"`
}

// RunInfo describes a run; it is written before the nodes start.
type RunInfo struct {
	Seed        int64         `json:"seed"`
	Registry    string        `json:"registry"` // "etcd" or "zookeeper"
	Versions    []string      `json:"versions"` // registry server, Go
	Nodes       int           `json:"nodes"`
	Pool        int           `json:"pool"` // free worker ids
	SessionTTL  time.Duration `json:"sessionTtl"`
	Reservation time.Duration `json:"reservation"`        // W
	Variant     Variant       `json:"variant"`            // the fenced run or a negative control
	Workload    string        `json:"workload,omitempty"` // WorkloadKeys ("") or WorkloadDistSQL
	EpochMillis int64         `json:"epochMillis"`        // the keys' Snowflake epoch, unix ms
	Start       int64         `json:"start"`              // unix ns
	End         int64         `json:"end"`                // unix ns, 0 while running
}

// Variant says how a run's nodes keep their worker ids: with the fence, or
// as one of the three negative controls, which run the same fault schedule
// with a safety measure taken out and must find duplicates or overlaps
// (otherwise the faults are not biting).
type Variant string

// Variants.
const (
	// VariantFenced: the fence and the floor, as shipped.
	VariantFenced Variant = "fenced"
	// VariantLeaseOnly: negative control (i), no fence at all
	// (cluster.Config's UnsafeLeaseOnly).
	VariantLeaseOnly Variant = "lease-only"
	// VariantIgnoreFloor: negative control (ii), the fence and reservations
	// on but the previous holder's reservation, the floor, ignored
	// (cluster.Config's UnsafeIgnoreFloor).
	VariantIgnoreFloor Variant = "ignore-floor"
	// VariantTrustAbsentFence: negative control (iii), the fence on but a
	// missing fence read as a worker id never used, floor 0
	// (cluster.Config's UnsafeTrustAbsentFence): after an operator deleted a
	// fence, its next holder stamps keys its previous holders may have
	// stamped.
	VariantTrustAbsentFence Variant = "trust-absent-fence"
	// VariantUnconditional: a DistSQL negative control, rule changes
	// committed without their conditions, as plain overwrites (the nodes'
	// config.UnsafeUnconditionalWrites).
	VariantUnconditional Variant = "unconditional-writes"
	// VariantAckBeforeCommit: a DistSQL negative control, a change
	// answered once its transaction is sent, before the registry confirms
	// the commit and before any node's digest (the nodes'
	// config.UnsafeAckBeforeCommit).
	VariantAckBeforeCommit Variant = "ack-before-commit"
)

// Variants lists the variants: the fenced run, then the controls of the
// key workload, then those of the DistSQL workload.
var Variants = []Variant{VariantFenced, VariantLeaseOnly, VariantIgnoreFloor, VariantTrustAbsentFence,
	VariantUnconditional, VariantAckBeforeCommit}

// The workloads of a run (RunInfo.Workload).
const (
	// WorkloadKeys: key-issuing nodes (chaos node); "" in RunInfo means it.
	WorkloadKeys = "keys"
	// WorkloadDistSQL: shardkeeper nodes (serve) and DistSQL clients
	// (package tools/chaos/distsql).
	WorkloadDistSQL = "distsql"
)

// Control reports whether v is a negative control.
func (v Variant) Control() bool { return v != VariantFenced }

// Fenced reports whether v's nodes keep a fence (every variant but the
// lease-only control), so that their events carry fence windows.
func (v Variant) Fenced() bool { return v != VariantLeaseOnly }

// Label describes v for reports: "fenced", "negative control (lease only,
// no fence)", "negative control (fence on, floor ignored)" or "negative
// control (fence on, a deleted fence read as floor 0)".
func (v Variant) Label() string {
	switch v {
	case VariantLeaseOnly:
		return "negative control (lease only, no fence)"
	case VariantIgnoreFloor:
		return "negative control (fence on, floor ignored)"
	case VariantTrustAbsentFence:
		return "negative control (fence on, a deleted fence read as floor 0)"
	case VariantUnconditional:
		return "negative control (rule changes written without their conditions)"
	case VariantAckBeforeCommit:
		return "negative control (changes answered before their commit is confirmed)"
	}
	return string(v)
}

// ParseVariant returns the variant named s (see Variants).
func ParseVariant(s string) (Variant, error) {
	for _, v := range Variants {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("variant %q: want %s, %s, %s, %s, %s or %s", s, VariantFenced, VariantLeaseOnly, VariantIgnoreFloor,
		VariantTrustAbsentFence, VariantUnconditional, VariantAckBeforeCommit)
}

// FaultRecord is one injected fault. End is zero for instantaneous faults
// (a kill, a clock step).
type FaultRecord struct {
	Kind   string `json:"kind"`   // one of the Fault* constants
	Target string `json:"target"` // node or registry member
	Start  int64  `json:"start"`  // unix ns
	End    int64  `json:"end,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Fault kinds.
const (
	FaultPartition   = "partition"    // node <-> every registry member, both ways
	FaultOneWay      = "one-way-loss" // registry replies to the node lost
	FaultPause       = "pause"        // SIGSTOP ... SIGCONT of a node
	FaultKill        = "kill"         // SIGKILL of a node and a quick restart
	FaultLeaderKill  = "leader-kill"  // SIGKILL of the registry leader, restart later
	FaultLeaderPause = "leader-pause" // SIGSTOP of the registry leader
	FaultClockStep   = "clock-step"   // the node's clock jumps
	FaultClockSkew   = "clock-skew"   // the node's clock runs fast or slow
	// FaultFenceDelete: an operator deletes the reservations and fences of
	// worker ids in use, in one transaction.
	FaultFenceDelete = "fence-delete"
)

// FaultKinds lists the Fault* constants in declaration order.
var FaultKinds = []string{
	FaultPartition, FaultOneWay, FaultPause, FaultKill, FaultLeaderKill,
	FaultLeaderPause, FaultClockStep, FaultClockSkew, FaultFenceDelete,
}

// ProcessRecord is one node process's life, as the harness saw it.
type ProcessRecord struct {
	Incarnation string `json:"incarnation"`
	Node        string `json:"node"`
	PID         int    `json:"pid"`
	Start       int64  `json:"start"` // unix ns
	End         int64  `json:"end"`   // unix ns
	Exit        string `json:"exit"`  // "exit 0", "killed", ...
}

// KeyFileName and EventFileName name an incarnation's files in its node's
// directory.
func KeyFileName(incarnation string) string   { return incarnation + ".keys" }
func EventFileName(incarnation string) string { return incarnation + ".events" }

// IncarnationName names the k-th start of node.
func IncarnationName(node string, k int) string { return fmt.Sprintf("%s.%d", node, k) }

// AppendJSONLine appends v as one JSON line to the file at path, creating
// it. Each call is one write(2) with O_APPEND, so lines of a process killed
// with SIGKILL are whole.
func AppendJSONLine(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return errors.Join(err, f.Close())
}

// ReadJSONLines reads every line of path into a T; a truncated or corrupt
// last line (a crash mid-write cannot produce one, but a full disk can) is
// reported, not fatal: it returns the lines before it and the error.
func ReadJSONLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return out, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// WriteRunInfo writes info to dir/run.json, indented, replacing the file.
func WriteRunInfo(dir string, info RunInfo) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "run.json"), append(b, '\n'), 0o644)
}
