package linear

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
)

// Where a run directory keeps its DistSQL history: one file per client,
// HistoryDir/<client>.jsonl, and, after a failed check, the visualisation
// HTMLName beside the report.
const (
	HistoryDir = "distsql"
	HTMLName   = "distsql.html"
)

// entry is one line of a history file: an operation's invocation (Outcome
// Unknown, no Return) or, later, its completion, under the same ID.
type entry struct {
	ID int `json:"id"`
	Op
}

// Recorder appends one client's operations to its history file, each
// invocation before the request is sent and each completion after the
// answer, so that an operation whose client is killed in between is read
// back as Unknown. It is safe for concurrent use; each write is one
// O_APPEND write(2), whole even if the process is killed.
type Recorder struct {
	path string
	mu   sync.Mutex
	next int
}

// NewRecorder returns a Recorder appending to path (created on the first
// write).
func NewRecorder(path string) *Recorder { return &Recorder{path: path} }

// Invoke records op as invoked at its Call time and returns its id for
// Complete. The outcome and return time it is given are ignored.
func (r *Recorder) Invoke(op Op) (int, error) {
	r.mu.Lock()
	id := r.next
	r.next++
	r.mu.Unlock()
	op.Outcome, op.Return = Unknown, 0
	return id, record.AppendJSONLine(r.path, entry{ID: id, Op: op})
}

// Complete records the result of the operation Invoke numbered id: op as
// it completed (Outcome, Return and, for a read, Present and Value).
func (r *Recorder) Complete(id int, op Op) error {
	return record.AppendJSONLine(r.path, entry{ID: id, Op: op})
}

// Load reads the history files in dir (HistoryDir of a run directory): each
// operation as last recorded, an operation invoked and never completed as
// Unknown. It returns os.ErrNotExist (wrapped) when dir does not exist, and
// the operations read so far with the error of a corrupt file.
func Load(dir string) ([]Op, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, err
		}
	}
	sort.Strings(files)
	var ops []Op
	var errs []error
	for _, f := range files {
		entries, err := record.ReadJSONLines[entry](f)
		errs = append(errs, err)
		byID := map[int]int{}
		for _, e := range entries {
			if i, ok := byID[e.ID]; ok {
				ops[i] = e.Op
				continue
			}
			byID[e.ID] = len(ops)
			ops = append(ops, e.Op)
		}
	}
	return ops, errors.Join(errs...)
}

// RegistryView is the Op.Node of observations of the registry itself.
const RegistryView = "registry"

// CheckRun checks the DistSQL history of the run directory dir (see Load
// and Check), writing HTMLName there when it is not linearizable. With
// the run's online samples (OnlineName), only the observations of nodes
// the registry listed online are checked (see Online; Result.Offline
// counts the others). found is
// false, with no error, when the run recorded no DistSQL history.
func CheckRun(dir string, timeout time.Duration) (res Result, found bool, err error) {
	ops, err := Load(filepath.Join(dir, HistoryDir))
	if errors.Is(err, os.ErrNotExist) {
		return res, false, nil
	}
	if err != nil {
		return res, true, fmt.Errorf("reading the DistSQL history: %w", err)
	}
	samples, err := record.ReadJSONLines[OnlineSample](filepath.Join(dir, OnlineName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, true, fmt.Errorf("reading the online samples: %w", err)
	}
	ops, offline := Online(ops, samples, RegistryView)
	res, err = Check(ops, timeout, filepath.Join(dir, HTMLName))
	res.Offline = offline
	return res, true, err
}

// OnlineName is the file, in a run directory, of the samples of which
// nodes the registry listed online while the workload ran (OnlineSample,
// one JSON line each, in time order).
const OnlineName = "distsql-online.jsonl"

// OnlineSample is one reading of the nodes the registry listed online:
// the views (Op.Node) of those nodes, read at some moment between From
// and To (unix ns).
type OnlineSample struct {
	From  int64    `json:"from"`
	To    int64    `json:"to"`
	Views []string `json:"views"`
}

// Online filters ops by samples (in time order): it drops the reads and
// refusals of a node's view (Op.Node other than "" and skip) that were not
// made while the registry listed the node online: those for which the
// last sample that ended before the call, the first that started after
// the return, and every sample between them do not all list the node.
// Changes and the observations of the view skip are kept. It returns the
// ops kept and how many were dropped. With no samples it keeps every op.
func Online(ops []Op, samples []OnlineSample, skip string) ([]Op, int) {
	if len(samples) == 0 {
		return ops, 0
	}
	kept := make([]Op, 0, len(ops))
	dropped := 0
	for _, o := range ops {
		if (o.Kind != Read && o.Outcome != Refused) || o.Node == "" || o.Node == skip || o.Outcome == Unknown {
			kept = append(kept, o)
			continue
		}
		first := sort.Search(len(samples), func(i int) bool { return samples[i].To >= o.Call }) - 1
		last := sort.Search(len(samples), func(i int) bool { return samples[i].From > o.Return })
		online := first >= 0 && last < len(samples)
		for i := max(first, 0); online && i <= last; i++ {
			online = slices.Contains(samples[i].Views, o.Node)
		}
		if online {
			kept = append(kept, o)
		} else {
			dropped++
		}
	}
	return kept, dropped
}
