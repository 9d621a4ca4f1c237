package httpapi

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/clusterlock"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/statistics"
	"github.com/shardkeeper/shardkeeper/registry"
)

// dataSourceState is one row of GET /api/v1/readwrite-splitting/states.
type dataSourceState = metadata.DataSourceStateRow

// dataSourceStates lists the read data sources and their states.
func dataSourceStates(snap *metadata.Snapshot) []dataSourceState {
	return metadata.DataSourceStateRows(snap)
}

func (s *Server) handleDataSourceStates(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, struct {
		DataSources []dataSourceState `json:"dataSources"`
	}{dataSourceStates(s.cfg.Store.Current())})
}

// handleSetDataSourceState is PUT
// /api/v1/readwrite-splitting/{db}/{group}/{unit}/state with
// {"state":"ENABLE"|"DISABLE"}: ShardingSphere's ALTER READWRITE_SPLITTING
// RULE group ENABLE|DISABLE unit FROM db, with its checks, messages and
// codes, made against this node's view. It writes
// /nodes/qualified_data_sources/{db}.{group}.{unit} as ShardingSphere
// does and answers with the row once this node applied it (at most 3 s).
func (s *Server) handleSetDataSourceState(w http.ResponseWriter, r *http.Request) {
	db, group, unit := r.PathValue("db"), r.PathValue("group"), r.PathValue("unit")
	body, perr := readBody(w, r)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	action, perr := parseStateBody(body)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	enable := action == "ENABLE"
	q, err := metadata.CheckDataSourceState(s.cfg.Store.Current(), db, group, unit, enable)
	if err != nil {
		s.writeError(w, err)
		return
	}
	state := metadata.StateDisabled
	if enable {
		state = metadata.StateEnabled
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := metadata.SetDataSourceState(ctx, s.cfg.Repo, q, state); err != nil {
		if errors.Is(err, registry.ErrBadKey) {
			s.writeError(w, badRequest("%v", err))
			return
		}
		s.writeError(w, err)
		return
	}
	s.log.Info("data source state set", "data_source", q.String(), "state", state)
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	defer wcancel()
	_, _ = s.cfg.Store.Wait(wctx, func(snap *metadata.Snapshot) bool {
		return cmp.Or(snap.DataSourceStates[q], metadata.StateEnabled) == state
	})
	s.writeJSON(w, dataSourceState{Database: q.Database, Group: q.Group, StorageUnit: q.Unit, State: state, Configured: true})
}

// handleCreateDatabase is POST /api/v1/databases with {"name": db}:
// CREATE DATABASE. The empty database is announced on the database
// listener coordinator as ShardingSphere announces it (see
// metadata.Coordinator); the answer comes once this node applied it (at
// most 3 s).
func (s *Server) handleCreateDatabase(w http.ResponseWriter, r *http.Request) {
	body, perr := readBody(w, r)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	var v struct {
		Name string `json:"name"`
	}
	if perr := decodeObject(body, &v, `{"name":"database"}`); perr != nil {
		s.writeError(w, perr)
		return
	}
	if v.Name == "" {
		s.writeError(w, badRequest(`missing field name: want {"name":"database"}`))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	c, err := s.coordinator(ctx)
	if err != nil {
		s.writeError(w, err)
		return
	}
	err = c.CreateDatabase(ctx, config.Database{Name: v.Name})
	switch {
	case errors.Is(err, registry.ErrExists):
		s.writeError(w, refuse(sqlerr.Conflict, "Database '%s' already exists.", v.Name))
		return
	case errors.Is(err, registry.ErrBadKey):
		s.writeError(w, badRequest("database name %s: %v", quote(v.Name), err))
		return
	case err != nil:
		s.writeError(w, err)
		return
	}
	s.log.Info("database created", "database", v.Name)
	s.waitDatabase(ctx, v.Name, true)
	s.writeJSONStatus(w, http.StatusCreated, struct {
		Name string `json:"name"`
	}{v.Name})
}

// handleDropDatabase is DELETE /api/v1/databases/{db}: DROP DATABASE,
// announced as ShardingSphere announces it.
func (s *Server) handleDropDatabase(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("db")
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	c, err := s.coordinator(ctx)
	if err != nil {
		s.writeError(w, err)
		return
	}
	err = c.DropDatabase(ctx, name)
	switch {
	case errors.Is(err, metadata.ErrNoDatabase):
		s.writeError(w, refuse(sqlerr.NotFound, "Unknown database '%s'.", name))
		return
	case errors.Is(err, registry.ErrBadKey):
		s.writeError(w, badRequest("database name %s: %v", quote(name), err))
		return
	case err != nil:
		s.writeError(w, err)
		return
	}
	s.log.Info("database dropped", "database", name)
	s.waitDatabase(ctx, name, false)
	s.writeJSON(w, struct {
		Dropped string `json:"dropped"`
	}{name})
}

// coordinator returns a metadata.Coordinator on the server's session.
func (s *Server) coordinator(ctx context.Context) (metadata.Coordinator, error) {
	sess, err := s.session(ctx)
	if err != nil {
		return metadata.Coordinator{}, err
	}
	return metadata.Coordinator{Repo: s.cfg.Repo, Session: sess, Layout: s.layout()}, nil
}

// waitDatabase waits (at most 3 s) until this node's view has database
// name (exists) or not.
func (s *Server) waitDatabase(ctx context.Context, name string, exists bool) {
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, _ = s.cfg.Store.Wait(wctx, func(snap *metadata.Snapshot) bool { return (snap.Databases[name] != nil) == exists })
}

// maxStatsReads bounds the statistics requests served at once: with
// statistics.MaxBytes each, 16 MiB of registry values in memory.
const maxStatsReads = 2

// handleStatistics is GET /api/v1/statistics[?database=db]: the
// statistics ShardingSphere nodes collected into the registry
// (/statistics/databases), read on each call, at most
// statistics.DefaultMaxRows rows and statistics.MaxBytes (truncated says
// more exist), at most maxStatsReads requests reading at once (the others
// wait, up to the request's 10 s); values that cannot be read are named in
// problems.
func (s *Server) handleStatistics(w http.ResponseWriter, r *http.Request) {
	db := r.URL.Query().Get("database")
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	select {
	case s.statsReads <- struct{}{}:
		defer func() { <-s.statsReads }()
	case <-ctx.Done():
		s.writeError(w, ctx.Err())
		return
	}
	st, err := statistics.Load(ctx, s.cfg.Repo, db, 0)
	if errors.Is(err, registry.ErrBadKey) {
		s.writeError(w, badRequest("database %s: %v", quote(db), err))
		return
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, st)
}

// handleClusterState is GET /api/v1/cluster/state: the cluster state in
// this node's view.
func (s *Server) handleClusterState(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, struct {
		State string `json:"state"`
	}{s.cfg.Store.Current().ClusterState})
}

// handleLock is PUT /api/v1/cluster/lock with
// {"strategy":"WRITE"|"READ_WRITE","timeoutMillis":N}: LOCK CLUSTER
// (clusterlock.Lock).
func (s *Server) handleLock(w http.ResponseWriter, r *http.Request) { s.changeClusterState(w, r, true) }

// handleUnlock is PUT /api/v1/cluster/unlock with an optional
// {"timeoutMillis":N}: UNLOCK CLUSTER (clusterlock.Unlock).
func (s *Server) handleUnlock(w http.ResponseWriter, r *http.Request) {
	s.changeClusterState(w, r, false)
}

// changeClusterState runs LOCK CLUSTER (lock) or UNLOCK CLUSTER as the
// body asks, on the server's session, under the cluster lock of the
// configured layout, and answers with the state it wrote once this node
// applied it (at most 3 s). A Standalone node refuses LOCK (17000) and
// accepts UNLOCK, as the consoles do.
func (s *Server) changeClusterState(w http.ResponseWriter, r *http.Request, lock bool) {
	body, perr := readBody(w, r)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	var req lockRequest
	if lock {
		req, perr = parseLockBody(body)
	} else {
		req.Timeout, perr = parseUnlockBody(body)
	}
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), req.Timeout+10*time.Second)
	defer cancel()
	sess, err := s.session(ctx)
	if err != nil {
		s.writeError(w, err)
		return
	}
	op := clusterlock.Op{Layout: s.layout(), Session: sess, Timeout: req.Timeout, Standalone: s.cfg.ModeType == config.ModeStandalone}
	next := clusterlock.StateOK
	if lock {
		next, err = clusterlock.Lock(ctx, s.cfg.Repo, req.Strategy, op)
	} else {
		err = clusterlock.Unlock(ctx, s.cfg.Repo, op)
	}
	if err != nil {
		s.writeError(w, lockError(err))
		return
	}
	s.log.Info("cluster state changed", "to", next)
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	defer wcancel()
	_, _ = s.cfg.Store.Wait(wctx, func(snap *metadata.Snapshot) bool { return snap.ClusterState == next })
	s.writeJSON(w, struct {
		State string `json:"state"`
	}{next})
}

// lockError maps a cluster lock held past the timeout onto 409; the
// refusals with a code (15030 already locked, 15031 not locked, an
// unknown strategy) are writeError's.
func lockError(err error) error {
	var busy *clusterlock.BusyError
	if errors.As(err, &busy) {
		return refuse(sqlerr.Conflict, "%s", busy.Error())
	}
	return err
}
