package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Instance is one compute node as the registry shows it
// (SHOW COMPUTE NODES).
type Instance struct {
	ID           string
	Type         string // TypeProxy or TypeJDBC
	Host         string
	Port         int // 0 for JDBC
	Status       string
	WorkerID     int // -1 when none is published
	DatabaseName string
	Version      string
	Labels       []string
}

// onlineValue is the YAML of an online node, fields in ShardingSphere's
// (alphabetical) order.
type onlineValue struct {
	Attribute    string `yaml:"attribute"`
	DatabaseName string `yaml:"databaseName"`
	Version      string `yaml:"version"`
}

func encodeOnline(c Config) []byte {
	attr := c.Host
	if c.Type == TypeProxy {
		attr = c.Host + "@" + strconv.Itoa(c.Port)
	}
	b, _ := yaml.Marshal(onlineValue{Attribute: attr, DatabaseName: c.DatabaseName, Version: Version})
	return b
}

// decodeOnline parses an online node value into inst.
func decodeOnline(typ string, value []byte, inst *Instance) error {
	var v onlineValue
	if err := yaml.Unmarshal(value, &v); err != nil {
		return fmt.Errorf("corrupt online value: %w", err)
	}
	inst.DatabaseName, inst.Version, inst.Host, inst.Port = v.DatabaseName, v.Version, v.Attribute, 0
	if typ == TypeProxy {
		host, port, ok := strings.Cut(v.Attribute, "@")
		p, err := strconv.Atoi(port)
		if !ok || err != nil {
			return fmt.Errorf("corrupt online value: attribute %q is not ip@port", v.Attribute)
		}
		inst.Host, inst.Port = host, p
	}
	return nil
}

// members keeps the live membership view from one watch on
// /nodes/compute_nodes. Readers get an immutable snapshot without locking.
type members struct {
	log      *slog.Logger
	mu       sync.Mutex // serialises apply
	byID     map[string]*Instance
	online   map[string]bool // instances with an online node
	snapshot atomic.Pointer[[]Instance]
	changed  chan struct{} // closed and replaced on every change
	corrupt  atomic.Int64
}

func newMembers(log *slog.Logger) *members {
	m := &members{log: log, byID: map[string]*Instance{}, online: map[string]bool{}, changed: make(chan struct{})}
	empty := []Instance{}
	m.snapshot.Store(&empty)
	return m
}

// load reads the membership with one List and publishes it whole, so that
// the view is complete before the watch starts: applied one key at a time,
// in key order (online before status and worker_id), it would show
// instances online without their status and worker id for a moment. It
// returns the versions read, for run. ctx bounds the read.
func (m *members) load(ctx context.Context, repo registry.Repository) (map[string]registry.Version, error) {
	kvs, err := repo.List(ctx, paths.ComputeNodes)
	if err != nil {
		return nil, err
	}
	known := make(map[string]registry.Version, len(kvs))
	for _, kv := range kvs {
		known[kv.Key] = kv.Version
	}
	m.applyAll(kvs)
	return known, nil
}

// run follows the registry from what load read (known) until ctx ends: its
// first watch applies only what changed since.
func (m *members) run(ctx context.Context, repo registry.Repository, known map[string]registry.Version) {
	_ = registry.FollowFrom(ctx, repo, paths.ComputeNodes, known, m.apply)
}

// applyAll applies kvs as puts and publishes the result once.
func (m *members) applyAll(kvs []registry.KV) {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for _, kv := range kvs {
		changed = m.applyLocked(registry.Event{Type: registry.EventPut, KV: kv}) || changed
	}
	if changed {
		m.publish()
	}
}

func (m *members) apply(ev registry.Event) {
	if ev.Err != nil {
		m.log.Warn("membership watch lost; resyncing", "err", ev.Err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.applyLocked(ev) {
		m.publish()
	}
}

// applyLocked applies one event to byID and online, called with m.mu, and
// reports whether it changed them.
func (m *members) applyLocked(ev registry.Event) bool {
	kind, id, typ, ok := paths.InstanceIDFrom(ev.KV.Key)
	if !ok {
		return false
	}
	inst := m.byID[id]
	if inst == nil {
		inst = &Instance{ID: id, WorkerID: -1}
	}
	next := *inst
	if ev.Type == registry.EventDelete {
		switch kind {
		case "online":
			delete(m.online, id)
		case "status":
			next.Status = ""
		case "worker_id":
			next.WorkerID = -1
		case "labels":
			next.Labels = nil
		}
	} else if err := decodeInto(&next, kind, string(typ), ev.KV.Value); err != nil {
		m.corrupt.Add(1)
		m.log.Warn("skipping corrupt registry value", "key", ev.KV.Key, "err", err)
		return false
	} else if kind == "online" {
		m.online[id] = true
	}
	if next.Status == "" && next.WorkerID < 0 && !m.online[id] && next.Labels == nil {
		delete(m.byID, id)
	} else {
		m.byID[id] = &next
	}
	return true
}

func decodeInto(inst *Instance, kind, typ string, value []byte) error {
	switch kind {
	case "online":
		inst.Type = typ
		return decodeOnline(typ, value, inst)
	case "status":
		s := string(value)
		if s != "OK" && s != "CIRCUIT_BREAK" {
			return fmt.Errorf("status %q is not OK or CIRCUIT_BREAK", s)
		}
		inst.Status = s
	case "worker_id":
		id, err := paths.ParseWorkerID(strings.TrimSpace(string(value)))
		if err != nil {
			return err
		}
		inst.WorkerID = id
	case "labels":
		var labels []string
		if err := yaml.Unmarshal(value, &labels); err != nil {
			return fmt.Errorf("labels: %w", err)
		}
		inst.Labels = labels
	}
	return nil
}

// publish swaps in a new snapshot of online instances; called with m.mu.
func (m *members) publish() {
	list := make([]Instance, 0, len(m.online))
	for id := range m.online {
		if inst := m.byID[id]; inst != nil {
			list = append(list, *inst)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	m.snapshot.Store(&list)
	close(m.changed)
	m.changed = make(chan struct{})
}

// view returns the current snapshot and a channel closed at the next change.
func (m *members) view() ([]Instance, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return *m.snapshot.Load(), m.changed
}

// LoadInstances reads the online compute nodes from the registry with one
// List, decoded as a Node's membership view decodes them (corrupt values
// are logged to log, or slog.Default(), and skipped), sorted by id.
func LoadInstances(ctx context.Context, repo registry.Repository, log *slog.Logger) ([]Instance, error) {
	kvs, err := repo.List(ctx, paths.ComputeNodes)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	m := newMembers(log)
	m.applyAll(kvs)
	list, _ := m.view()
	return list, nil
}
