// Package process answers ShardingSphere's cluster-wide SHOW PROCESSLIST
// and KILL protocols over the registry, in both directions.
//
// ShardingSphere asks every online instance for its processes by writing the
// persistent trigger
// /nodes/compute_nodes/show_process_list_trigger/{instanceId}:{taskId}
// (value ""); the instance writes its processes as a YAML process list under
// /execution_nodes/{taskId}/{instanceId} (only when it has any) and then
// deletes the trigger. The asker waits until every trigger is gone, at most
// 5 seconds, reads the lists and deletes /execution_nodes/{taskId}. KILL is
// the same with /nodes/compute_nodes/kill_process_trigger/{instanceId}:{processId}:
// the owner kills the process, then deletes the trigger.
//
// A Responder is the answering side of one instance, Collect and Kill the
// asking side. A node's processes live in a Table.
package process

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// Process is one process as ShardingSphere's YamlProcess writes it. Empty
// strings and a zero StartMillis are left out of the YAML, as upstream
// leaves out null properties.
type Process struct {
	CompletedUnitCount int    `yaml:"completedUnitCount"`
	DatabaseName       string `yaml:"databaseName,omitempty"`
	Hostname           string `yaml:"hostname,omitempty"`
	ID                 string `yaml:"id,omitempty"`
	Idle               bool   `yaml:"idle"`
	Interrupted        bool   `yaml:"interrupted"`
	SQL                string `yaml:"sql,omitempty"`
	StartMillis        int64  `yaml:"startMillis,omitempty"`
	TotalUnitCount     int    `yaml:"totalUnitCount"`
	Username           string `yaml:"username,omitempty"`
}

// List is ShardingSphere's YamlProcessList, the value of an execution node.
type List struct {
	Processes []Process `yaml:"processes,omitempty"`
}

// Marshal returns l as ShardingSphere's YamlEngine writes it (SnakeYAML's
// dumpAsMap): block style, properties in alphabetical order, the list's
// items at the indentation of their key. An empty list is "{}".
func (l List) Marshal() []byte {
	if len(l.Processes) == 0 {
		return []byte("{}\n")
	}
	var b bytes.Buffer
	b.WriteString("processes:\n")
	for _, p := range l.Processes {
		var item bytes.Buffer
		enc := yaml.NewEncoder(&item)
		enc.SetIndent(2)
		if err := enc.Encode(p); err != nil {
			panic(fmt.Sprintf("process: marshal a process: %v", err)) // a plain struct always encodes
		}
		_ = enc.Close()
		prefix := "- "
		for line := range strings.Lines(item.String()) {
			b.WriteString(prefix)
			b.WriteString(line)
			prefix = "  "
		}
	}
	return b.Bytes()
}

// ParseList decodes an execution node's value. Properties it does not know
// are ignored, so lists written by other releases load.
func ParseList(data []byte) (List, error) {
	var l List
	if err := yaml.Unmarshal(data, &l); err != nil {
		return List{}, fmt.Errorf("process list: %w", err)
	}
	return l, nil
}

// Table is one node's processes: the sessions a front end registers while
// they run. The zero value is not usable; use NewTable. It is safe for
// concurrent use.
type Table struct {
	mu    sync.Mutex
	procs map[string]*entry
}

type entry struct {
	p      Process
	kill   func()
	cancel func()
	once   sync.Once
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{procs: map[string]*entry{}} }

// Add registers p under p.ID, replacing a process with the same id. kill
// is called at most once, outside the table's lock, when a KILL for p.ID
// arrives; it must make the session stop and may be nil. cancel is called,
// outside the lock, for each KILL QUERY; it must cancel the statement the
// session runs, if any, and leave the session open; nil means KILL QUERY
// finds nothing to cancel. The returned function removes p again (not a
// process that replaced it); calling it twice is harmless.
func (t *Table) Add(p Process, kill, cancel func()) (remove func()) {
	e := &entry{p: p, kill: kill, cancel: cancel}
	t.mu.Lock()
	t.procs[p.ID] = e
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.procs[p.ID] == e {
			delete(t.procs, p.ID)
		}
	}
}

// Update changes the registered process id in place (a session's current
// statement, its idle flag) and reports whether the table had it.
func (t *Table) Update(id string, change func(*Process)) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.procs[id]
	if ok {
		change(&e.p)
		e.p.ID = id
	}
	return ok
}

// List returns a copy of the processes, sorted by id.
func (t *Table) List() []Process {
	t.mu.Lock()
	out := make([]Process, 0, len(t.procs))
	for _, e := range t.procs {
		out = append(out, e.p)
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b Process) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Kill marks the process id interrupted and calls its kill function. id
// is a process id or its Number in decimal (MySQL's KILL of a
// CONNECTION_ID()). It reports whether the table had the process; an
// unknown id is no error (the process may have ended meanwhile).
func (t *Table) Kill(id string) bool {
	t.mu.Lock()
	e := t.lookup(id)
	if e != nil {
		e.p.Interrupted = true
	}
	t.mu.Unlock()
	if e != nil && e.kill != nil {
		e.once.Do(e.kill)
	}
	return e != nil
}

// Cancel cancels the running statement of process id (KILL QUERY), which
// is a process id or its Number in decimal, and leaves the session open.
// It reports whether the table had the process.
func (t *Table) Cancel(id string) bool {
	t.mu.Lock()
	e := t.lookup(id)
	t.mu.Unlock()
	if e != nil && e.cancel != nil {
		e.cancel()
	}
	return e != nil
}

// lookup finds the entry of a process id or of its decimal Number; nil
// when there is none. The caller holds t.mu.
func (t *Table) lookup(id string) *entry {
	if e, ok := t.procs[id]; ok {
		return e
	}
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil || n == 0 {
		return nil
	}
	for pid, e := range t.procs {
		if Number(pid) == uint32(n) {
			return e
		}
	}
	return nil
}

// Number is the number a process id stands for where a protocol needs a
// number (MySQL's CONNECTION_ID() and handshake connection id,
// PostgreSQL's process id): the value of its first 8 hex digits, 0 when
// it has none. For ShardingSphere's random process ids numbers of
// different sessions collide with a chance of 2^-32 per pair.
func Number(id string) uint32 {
	if len(id) > 8 {
		id = id[:8]
	}
	n, _ := strconv.ParseUint(id, 16, 32)
	return uint32(n)
}
