package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/computenode"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

func (s *Server) row(inst cluster.Instance) computenode.Row {
	return computenode.RowOf(inst, s.cfg.ModeType)
}

// selfRow is this node's row (cluster.Node.Self), disabled as this
// server last saw it before its registration has come back through the
// watch.
func (s *Server) selfRow() computenode.Row {
	inst := s.cfg.Node.Self()
	if inst.Status == "" && s.disabled.Load() {
		inst.Status = "CIRCUIT_BREAK"
	}
	return s.row(inst)
}

func (s *Server) rows() []computenode.Row {
	list := s.cfg.Node.Instances()
	rows := make([]computenode.Row, 0, len(list))
	for _, inst := range list {
		rows = append(rows, s.row(inst))
	}
	return rows
}

func (s *Server) handleNodes(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, struct {
		Nodes []computenode.Row `json:"nodes"`
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
	s.writeError(w, refuse(sqlerr.NotFound, "compute node %s is not online", quote(id)))
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
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	want, err := computenode.SetState(ctx, s.cfg.Repo, id, state == "ENABLE", s.cfg.Node.InstanceID())
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.log.Info("compute node state set", "target", id, "state", state, "status", want)
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
		s.writeError(w, refuse(sqlerr.Conflict, "compute node %s left meanwhile", quote(id)))
		return
	}
}
