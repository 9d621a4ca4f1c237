package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// nodeRow is one row of SHOW COMPUTE NODES.
type nodeRow struct {
	InstanceID   string   `json:"instance_id"`
	InstanceType string   `json:"instance_type"`
	Host         string   `json:"host"`
	Port         int      `json:"port"`
	Status       string   `json:"status"`
	ModeType     string   `json:"mode_type"`
	WorkerID     int      `json:"worker_id"`
	Version      string   `json:"version"`
	DatabaseName string   `json:"database_name"`
	Labels       []string `json:"labels,omitempty"`
}

func (s *Server) row(inst cluster.Instance) nodeRow {
	row := nodeRow{
		InstanceID: inst.ID, InstanceType: strings.ToUpper(inst.Type), Host: inst.Host, Port: inst.Port,
		Status: inst.Status, ModeType: s.cfg.ModeType, WorkerID: inst.WorkerID, Version: inst.Version,
		DatabaseName: inst.DatabaseName, Labels: inst.Labels,
	}
	if row.Status == "" {
		row.Status = "OK" // ShardingSphere's initial instance state
	}
	if inst.Type == cluster.TypeJDBC {
		row.Port = -1
	}
	return row
}

// selfRow is this node's row: from the membership view, or built from its
// configuration before its registration has come back through the watch.
func (s *Server) selfRow() nodeRow {
	id := s.cfg.Node.InstanceID()
	for _, inst := range s.cfg.Node.Instances() {
		if inst.ID == id {
			return s.row(inst)
		}
	}
	c := s.cfg.NodeConfig
	inst := cluster.Instance{ID: id, Type: c.Type, Host: c.Host, Port: c.Port, WorkerID: s.cfg.Node.WorkerID(),
		DatabaseName: c.DatabaseName, Version: cluster.Version, Labels: c.Labels}
	if inst.Type == "" {
		inst.Type = cluster.TypeProxy
	}
	if inst.Host == "" {
		inst.Host = "127.0.0.1"
	}
	if s.disabled.Load() {
		inst.Status = "CIRCUIT_BREAK"
	}
	return s.row(inst)
}

func (s *Server) rows() []nodeRow {
	list := s.cfg.Node.Instances()
	rows := make([]nodeRow, 0, len(list))
	for _, inst := range list {
		rows = append(rows, s.row(inst))
	}
	return rows
}

func (s *Server) handleNodes(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, struct {
		Nodes []nodeRow `json:"nodes"`
	}{s.rows()})
}

func (s *Server) handleSelf(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, s.selfRow())
}

func (s *Server) handleNode(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	for _, inst := range s.cfg.Node.Instances() {
		if inst.ID == id {
			s.writeJSON(w, s.row(inst))
			return
		}
	}
	if id == s.cfg.Node.InstanceID() {
		s.writeJSON(w, s.selfRow())
		return
	}
	s.writeError(w, errorf(http.StatusNotFound, CodeNone, "compute node %s is not online", quote(id)))
}

// handleState is PUT /api/v1/nodes/{id}/state, ENABLE / DISABLE COMPUTE
// NODE with ShardingSphere's checks: the instance must be online; DISABLE
// refuses this node itself and a node already disabled. The status node
// stays an ephemeral of the target's session (a conditional write that
// keeps its owner), so it still vanishes with the target.
func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, perr := readBody(w, r)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	state, perr := parseStateBody(body)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	if err := registry.ValidateName(id); err != nil {
		s.writeError(w, unsupportedOperation(http.StatusNotFound, "`"+id+"` does not exist"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	online, err := s.isOnline(ctx, id)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if !online {
		s.writeError(w, unsupportedOperation(http.StatusNotFound, "`"+id+"` does not exist"))
		return
	}
	statusKey, _ := paths.Status(id)
	cur, err := s.cfg.Repo.Get(ctx, statusKey)
	if errors.Is(err, registry.ErrNotFound) {
		s.writeError(w, errorf(http.StatusConflict, CodeNone, "compute node %s has no status node yet; retry in a moment", quote(id)))
		return
	} else if err != nil {
		s.writeError(w, err)
		return
	}
	want := "OK"
	if state == "DISABLE" {
		if id == s.cfg.Node.InstanceID() {
			s.writeError(w, unsupportedOperation(http.StatusBadRequest, "`"+id+"` is the currently in use instance and cannot be disabled"))
			return
		}
		if string(cur.Value) == "CIRCUIT_BREAK" {
			s.writeError(w, unsupportedOperation(http.StatusConflict, "`"+id+"` compute node has been disabled"))
			return
		}
		want = "CIRCUIT_BREAK"
	}
	if string(cur.Value) != want {
		sess, err := s.session(ctx)
		if err != nil {
			s.writeError(w, err)
			return
		}
		_, err = sess.Commit(ctx, registry.Txn{
			Conds: []registry.Cond{{Key: statusKey, Version: cur.Version}},
			Ops:   []registry.Op{{Key: statusKey, Value: []byte(want)}},
		})
		if errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrNotFound) {
			s.writeError(w, errorf(http.StatusConflict, CodeNone, "the status of compute node %s changed meanwhile (or it left); retry", quote(id)))
			return
		} else if err != nil {
			s.writeError(w, err)
			return
		}
		s.log.Info("compute node state changed", "target", id, "state", state, "status", want)
	}
	// Answer with the row once this node's view has it (bounded).
	deadline := time.NewTimer(3 * time.Second)
	defer deadline.Stop()
	for {
		list, ch := s.cfg.Node.InstancesChanged()
		for _, inst := range list {
			if inst.ID == id && inst.Status == want {
				s.writeJSON(w, s.row(inst))
				return
			}
		}
		select {
		case <-ch:
			continue
		case <-ctx.Done():
		case <-deadline.C:
		}
		for _, inst := range list {
			if inst.ID == id {
				inst.Status = want
				s.writeJSON(w, s.row(inst))
				return
			}
		}
		s.writeError(w, errorf(http.StatusConflict, CodeNone, "compute node %s left meanwhile", quote(id)))
		return
	}
}

// isOnline reads the registry: does id have an online node (proxy or
// jdbc)?
func (s *Server) isOnline(ctx context.Context, id string) (bool, error) {
	for _, typ := range []paths.InstanceType{paths.Proxy, paths.JDBC} {
		key, err := paths.Online(typ, id)
		if err != nil {
			return false, nil
		}
		ok, err := registry.Exists(ctx, s.cfg.Repo, key)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}
