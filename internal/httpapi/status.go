package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/computenode"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/version"
	"github.com/shardkeeper/shardkeeper/internal/workerid"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Worker-id cell states on the status page.
const (
	CellHeld        = "held"        // reserved by a live holder
	CellQuarantined = "quarantined" // free, but its fence reserves time in the future: a new holder waits for it
	CellFree        = "free"        // free; its last holder's time is past
	CellCorrupt     = "corrupt"     // the fence record is unreadable: its floor is unknown, claimed only when no id with a known floor is free
)

// workerCell is one worker id of the map. Ids absent from the list are
// free and were never fenced.
type workerCell struct {
	WorkerID      int    `json:"workerId"`
	State         string `json:"state"`
	Holder        string `json:"holder,omitempty"`      // the reservation's instance id
	FenceHolder   string `json:"fenceHolder,omitempty"` // the fence's last writer
	Epoch         int64  `json:"epoch,omitempty"`
	ReservedUntil int64  `json:"reservedUntil,omitempty"` // unix ms
}

// workerCache keeps the last worker-id map briefly, so that pages and
// streams polling it cost one registry listing per second at most.
type workerCache struct {
	mu    sync.Mutex
	at    time.Time
	cells []workerCell
	err   error
}

const workerCacheTTL = time.Second

func (s *Server) workerMap(ctx context.Context) ([]workerCell, error) {
	c := &s.workers
	c.mu.Lock()
	defer c.mu.Unlock()
	now := s.cfg.Now()
	if !c.at.IsZero() && now.Sub(c.at) < workerCacheTTL {
		return c.cells, c.err
	}
	// Two nodes per worker id (reservation and fence) and their parents;
	// fences are a few dozen bytes, so what a co-tenant adds is cut.
	kvs, _, err := registry.ListLimited(ctx, s.cfg.Repo, "/reservation", registry.Limits{Rows: 4*workerid.Count + 64, Bytes: 4 << 20})
	c.at, c.err = now, err
	if err == nil {
		c.cells = buildWorkerMap(kvs, now.UnixMilli())
	}
	return c.cells, c.err
}

// buildWorkerMap reads the reservation and fence nodes into cells, sorted
// by worker id, for the ids that have either.
func buildWorkerMap(kvs []registry.KV, nowMs int64) []workerCell {
	var cells [workerid.Count]*workerCell
	cell := func(id int) *workerCell {
		if cells[id] == nil {
			cells[id] = &workerCell{WorkerID: id, State: CellFree}
		}
		return cells[id]
	}
	for _, kv := range kvs {
		i := strings.LastIndexByte(kv.Key, '/')
		parent, name := kv.Key[:i], kv.Key[i+1:]
		id, err := paths.ParseWorkerID(name)
		if err != nil {
			continue
		}
		switch parent {
		case paths.ReservationRoot:
			cell(id).Holder = strings.TrimSpace(string(kv.Value))
		case paths.FenceRoot:
			c := cell(id)
			f, err := workerid.DecodeFence(kv.Value)
			if err != nil {
				c.State = CellCorrupt
				continue
			}
			c.FenceHolder, c.Epoch, c.ReservedUntil = f.Holder, f.Epoch, f.ReservedUntil
		}
	}
	out := make([]workerCell, 0, 16)
	for _, c := range cells {
		if c == nil || (c.State == CellFree && c.Holder == "" && c.Epoch == 0 && c.ReservedUntil == 0) {
			continue // never claimed (a blank fence made with the ledger)
		}
		switch {
		case c.State == CellCorrupt:
		case c.Holder != "":
			c.State = CellHeld
		case c.ReservedUntil >= nowMs:
			c.State = CellQuarantined
		}
		out = append(out, *c)
	}
	return out
}

// status is everything the status page shows, in one document.
type status struct {
	Now          int64             `json:"now"` // unix ms
	InstanceID   string            `json:"instanceId"`
	WorkerID     int               `json:"workerId"`
	Issuing      bool              `json:"issuing"`
	Ready        bool              `json:"ready"`
	NotReady     string            `json:"notReady,omitempty"`
	ModeType     string            `json:"modeType"`
	ClusterState string            `json:"clusterState"`
	Layout       layoutStatus      `json:"layout"`
	Self         computenode.Row   `json:"self"`
	Nodes        []computenode.Row `json:"nodes"`
	WorkerIDs    int               `json:"workerIds"` // size of the map: 1024
	Workers      []workerCell      `json:"workers"`
	WorkersError string            `json:"workersError,omitempty"`
	MetadataSeq  uint64            `json:"metadataSeq"`
	Databases    []dbSummary       `json:"databases"`
	DataSources  []dataSourceState `json:"dataSources"` // readwrite-splitting read data sources and their states
	KeysIssued   int64             `json:"keysIssued"`
	Renewals     int64             `json:"fenceRenewals"`
	Stalls       int64             `json:"fenceStalls"`
	Losses       int64             `json:"workerIdLosses"`
	Problems     []string          `json:"problems,omitempty"`
	Version      version.Info      `json:"version"`
	Ports        map[string]string `json:"ports"`   // bound address by service: http, mysql, postgresql, resp, udp
	Started      int64             `json:"started"` // unix ms
	Uptime       float64           `json:"uptimeSeconds"`
}

func (s *Server) status(ctx context.Context) status {
	snap := s.cfg.Store.Current()
	st := s.cfg.Node.Stats()
	ready, why := s.ready()
	out := status{
		Now: s.cfg.Now().UnixMilli(), InstanceID: s.cfg.Node.InstanceID(), WorkerID: st.WorkerID, Issuing: st.Issuing,
		Ready: ready, NotReady: why, ModeType: s.cfg.ModeType, ClusterState: snap.ClusterState,
		Self: s.selfRow(), Nodes: s.rows(), WorkerIDs: workerid.Count, MetadataSeq: snap.Seq,
		Databases: s.summaries(ctx, snap), DataSources: dataSourceStates(snap), KeysIssued: st.Keys, Renewals: st.Renewals, Stalls: st.Stalls, Losses: st.Losses,
		Version: s.cfg.Build, Ports: s.cfg.Ports, Started: s.cfg.Started.UnixMilli(), Uptime: s.cfg.Now().Sub(s.cfg.Started).Seconds(),
	}
	out.Layout = s.layoutStatus()
	if out.Ports == nil {
		out.Ports = map[string]string{}
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	cells, err := s.workerMap(lctx)
	cancel()
	out.Workers = cells
	if out.Workers == nil {
		out.Workers = []workerCell{}
	}
	if err != nil {
		out.WorkersError = err.Error()
	}
	for _, p := range s.cfg.Store.Problems() {
		out.Problems = append(out.Problems, p.Error())
	}
	return out
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, s.status(r.Context()))
}

// minEventGap and maxEventGap bound how often the event stream sends:
// at most 4 times a second, at least every 2 seconds (fences move).
const (
	minEventGap = 250 * time.Millisecond
	maxEventGap = 2 * time.Second
)

// handleEvents is a Server-Sent Events stream of the status document
// ("event: status"), sent at once, then on every change and every 2 s.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		s.writeStatus(w, http.StatusInternalServerError, 0, "streaming unsupported")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h["Cache-Control"] = noStore
	h.Set("X-Accel-Buffering", "no")
	ctx := r.Context()
	tick := time.NewTicker(maxEventGap)
	defer tick.Stop()
	for {
		changed := s.changes()
		b, err := json.Marshal(s.status(ctx))
		if err != nil {
			return
		}
		if _, err := w.Write([]byte("event: status\ndata: ")); err != nil {
			return
		}
		_, _ = w.Write(b)
		if _, err := w.Write([]byte("\n\n")); err != nil {
			return
		}
		fl.Flush()
		select {
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			return
		case <-time.After(minEventGap):
		}
		select {
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

func (s *Server) handleLivez(w http.ResponseWriter, r *http.Request) {
	w.Header()["Cache-Control"] = noStore
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// handleReadyz answers 200 only while the node can issue keys.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	w.Header()["Cache-Control"] = noStore
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if ok, why := s.ready(); !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: " + why + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// layoutStatus is the registry layout the node writes, and which
// registered ShardingSphere nodes load it.
type layoutStatus struct {
	Writes string `json:"writes"` // the release whose layout the node writes: "5.5.3"
	// Reason is why: "layoutVersion", "tree", "readers" or "default"
	// (metadata.LayoutChoice), or "migration" once a migration of the tree
	// moved it.
	Reason string `json:"reason"`
	// TreeAtStart are the layouts the registry's tree was written in when
	// the node started (empty: it mixed layouts).
	TreeAtStart []string `json:"treeAtStart"`
	// Readers are the registered ShardingSphere nodes, followed as they
	// join and leave.
	Readers []readerStatus `json:"readers"`
}

// readerStatus is a registered ShardingSphere node.
type readerStatus struct {
	InstanceID string `json:"instanceId"`
	Version    string `json:"version"`
	Layout     string `json:"layout,omitempty"` // the layout it loads; empty when its version names no 5.5.x release
	// ReadsAll is true when it loads every rule the node writes; when
	// false, rule changes it could not load are refused.
	ReadsAll bool `json:"readsAll"`
}

func (s *Server) layoutStatus() layoutStatus {
	out := layoutStatus{Writes: s.layout().String(), Reason: s.cfg.LayoutReason, TreeAtStart: []string{}, Readers: []readerStatus{}}
	if s.layout() != s.cfg.Layout {
		out.Reason = "migration"
	}
	for _, l := range s.cfg.TreeLayouts {
		out.TreeAtStart = append(out.TreeAtStart, l.String())
	}
	for _, r := range computenode.Readers(s.cfg.Node.Instances()) {
		rs := readerStatus{InstanceID: r.InstanceID, Version: r.Version, ReadsAll: r.Known && r.Layout == s.layout()}
		if r.Known {
			rs.Layout = r.Layout.String()
		}
		out.Readers = append(out.Readers, rs)
	}
	return out
}
