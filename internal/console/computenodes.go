package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/computenode"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
	"gopkg.in/yaml.v3"
)

// SHOW COMPUTE NODES / NODE INFO / NODE MODE, ENABLE / DISABLE and
// LABEL / RELABEL / UNLABEL COMPUTE NODE.

// computeNodesColumns are ShardingSphere 5.5.x's SHOW COMPUTE NODES columns.
var computeNodesColumns = []Column{
	{Name: "instance_id"}, {Name: "instance_type"}, {Name: "host"}, {Name: "port", Type: Int64}, {Name: "status"},
	{Name: "mode_type"}, {Name: "worker_id", Type: Int64}, {Name: "labels"}, {Name: "version"}, {Name: "database_name"},
}

// computeNodeInfoColumns are 5.5.x's SHOW COMPUTE NODE INFO columns.
var computeNodeInfoColumns = []Column{
	{Name: "instance_id"}, {Name: "host"}, {Name: "port", Type: Int64}, {Name: "status"}, {Name: "mode_type"},
	{Name: "worker_id", Type: Int64}, {Name: "labels"}, {Name: "version"},
}

// nodeRows are SHOW COMPUTE NODES' rows for one membership view; changed
// is closed when the view changes.
type nodeRows struct {
	rows    [][]*string
	changed <-chan struct{}
}

// showComputeNodes lists the node's membership view. The rows are built
// once per view and shared by every statement until the view changes
// (front ends only read them).
func (e *Engine) showComputeNodes(_ context.Context, _ *Session, _ *distsql.ShowComputeNodes) (*Result, error) {
	if c := e.nodeRows.Load(); c != nil {
		select {
		case <-c.changed:
		default:
			return &Result{Columns: computeNodesColumns, Rows: c.rows, Shared: true}, nil
		}
	}
	list, changed := e.d.Node.InstancesChanged()
	rows := make([][]*string, 0, len(list))
	for _, inst := range list {
		r := computenode.RowOf(inst, e.d.ModeType)
		rows = append(rows, strs(r.InstanceID, r.InstanceType, r.Host, strconv.Itoa(r.Port), r.Status,
			r.ModeType, strconv.Itoa(r.WorkerID), strings.Join(r.Labels, ","), r.Version, r.DatabaseName))
	}
	e.nodeRows.Store(&nodeRows{rows: rows, changed: changed})
	return &Result{Columns: computeNodesColumns, Rows: rows, Shared: true}, nil
}

// self is this node's row: from the membership view, or built from its
// configuration before its registration has come back through the watch.
func (e *Engine) self() computenode.Row {
	id := e.d.Node.InstanceID()
	for _, inst := range e.d.Node.Instances() {
		if inst.ID == id {
			return computenode.RowOf(inst, e.d.ModeType)
		}
	}
	c := e.d.NodeConfig
	inst := cluster.Instance{ID: id, Type: c.Type, Host: c.Host, Port: c.Port, WorkerID: e.d.Node.WorkerID(),
		DatabaseName: c.DatabaseName, Version: cluster.Version, Labels: c.Labels}
	if inst.Type == "" {
		inst.Type = cluster.TypeProxy
	}
	if inst.Host == "" {
		inst.Host = "127.0.0.1"
	}
	return computenode.RowOf(inst, e.d.ModeType)
}

func (e *Engine) showComputeNodeInfo(_ context.Context, _ *Session, _ *distsql.ShowComputeNodeInfo) (*Result, error) {
	r := e.self()
	return &Result{Columns: computeNodeInfoColumns, Rows: [][]*string{{
		str(r.InstanceID), str(r.Host), str(strconv.Itoa(r.Port)), str(r.Status), str(r.ModeType),
		str(strconv.Itoa(r.WorkerID)), str(strings.Join(r.Labels, ",")), str(r.Version),
	}}}, nil
}

// showComputeNodeMode is the node's `mode:` as ShardingSphere shows it:
// type, repository type and the repository props as JSON, with
// ShardingSphere's prop names. Credentials are never shown.
func (e *Engine) showComputeNodeMode(_ context.Context, _ *Session, _ *distsql.ShowComputeNodeMode) (*Result, error) {
	m := e.d.Mode
	r := m.Repository
	props := map[string]any{}
	if r.Namespace != "" {
		props["namespace"] = r.Namespace
	}
	if len(r.ServerLists) > 0 {
		props["server-lists"] = strings.Join(r.ServerLists, ",")
	}
	if r.TimeToLive > 0 {
		props["timeToLiveSeconds"] = int64(r.TimeToLive.Seconds())
	}
	if r.RetryInterval > 0 {
		props["retryIntervalMilliseconds"] = r.RetryInterval.Milliseconds()
	}
	if r.MaxRetries > 0 {
		props["maxRetries"] = r.MaxRetries
	}
	if r.OperationTimeout > 0 {
		props["operationTimeoutMilliseconds"] = r.OperationTimeout.Milliseconds()
	}
	if r.ConnectTimeout > 0 {
		props["connectTimeoutMilliseconds"] = r.ConnectTimeout.Milliseconds()
	}
	if r.Username != "" {
		props["username"] = r.Username
	}
	if r.Layout == paths.Layout552 {
		props["layoutVersion"] = "5.5.2"
	}
	js, err := json.Marshal(props)
	if err != nil {
		return nil, err
	}
	typ := m.Type
	if typ == "" {
		typ = e.d.ModeType
	}
	return &Result{Columns: textColumns("type", "repository", "props"),
		Rows: [][]*string{{str(typ), str(r.Type), str(string(js))}}}, nil
}

// setComputeNodeState is ENABLE / DISABLE COMPUTE NODE with
// ShardingSphere's checks (computenode.SetState): the node must be online,
// and the node the session is connected to cannot be disabled.
func (e *Engine) setComputeNodeState(ctx context.Context, id string, enable bool) (*Result, error) {
	if _, err := computenode.SetState(ctx, e.d.Repo, id, enable, e.d.Node.InstanceID()); err != nil {
		return nil, opError(nil, err)
	}
	return &Result{}, nil
}

// labelComputeNode is LABEL (merge: the given labels first, then the
// node's others) or RELABEL (replace) COMPUTE NODE.
// More than maxLabels given labels are refused before anything else (the
// registry is not read), so the work is linear in the statement.
func (e *Engine) labelComputeNode(ctx context.Context, _ *Session, st *distsql.LabelComputeNode) (*Result, error) {
	if len(st.Labels) > maxLabels {
		return nil, tooManyLabels()
	}
	return e.relabel(ctx, st.InstanceID, func(old []string) []string {
		if st.Relabel {
			return dedupe(st.Labels)
		}
		return dedupe(append(slices.Clip(st.Labels), old...))
	})
}

// unlabelComputeNode is UNLABEL COMPUTE NODE: without labels it removes
// them all.
func (e *Engine) unlabelComputeNode(ctx context.Context, _ *Session, st *distsql.UnlabelComputeNode) (*Result, error) {
	if len(st.Labels) > maxLabels {
		return nil, tooManyLabels()
	}
	drop := make(map[string]bool, len(st.Labels))
	for _, l := range st.Labels {
		drop[l] = true
	}
	return e.relabel(ctx, st.InstanceID, func(old []string) []string {
		out := []string{}
		if len(st.Labels) > 0 {
			for _, l := range old {
				if !drop[l] {
					out = append(out, l)
				}
			}
		}
		return out
	})
}

// maxLabels bounds the labels of one node, and of one LABEL, RELABEL or
// UNLABEL statement.
const maxLabels = 64

func tooManyLabels() *Error {
	return unsupported(fmt.Sprintf("a compute node has at most %d labels", maxLabels))
}

// dedupe returns labels without repeats, in first-seen order, in linear
// time.
func dedupe(labels []string) []string {
	out := make([]string, 0, len(labels))
	seen := make(map[string]bool, len(labels))
	for _, l := range labels {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// relabel rewrites the labels node of online compute node id as change
// makes it from the current labels, with a compare-and-set. An existing
// labels node keeps its owner (it goes with the node that published it);
// a node that published none gets one owned by this engine's registry
// session, as a ShardingSphere node writes it with its own.
func (e *Engine) relabel(ctx context.Context, id string, change func(old []string) []string) (*Result, error) {
	notOnline := unsupported(fmt.Sprintf("`%s` does not exist", id))
	if registry.ValidateName(id) != nil {
		return nil, notOnline
	}
	online := false
	for _, inst := range e.d.Node.Instances() {
		online = online || inst.ID == id
	}
	if !online {
		return nil, notOnline
	}
	key, _ := paths.Labels(id)
	for attempt := 0; attempt < 10; attempt++ {
		var old []string
		var version registry.Version
		kv, err := e.d.Repo.Get(ctx, key)
		switch {
		case err == nil:
			version = kv.Version
			if err := yaml.Unmarshal(kv.Value, &old); err != nil {
				e.log.Warn("labels node is not a YAML list; replacing it", "key", key, "error", err)
				old = nil
			}
		case !errors.Is(err, registry.ErrNotFound):
			return nil, err
		}
		labels := change(old)
		if len(labels) > maxLabels {
			return nil, unsupported(fmt.Sprintf("a compute node has at most %d labels", maxLabels))
		}
		for _, l := range labels {
			if l == "" || len(l) > 128 || strings.ContainsAny(l, ",\n") {
				return nil, &Error{Code: computenode.StateCode, SQLState: "0A000", Message: fmt.Sprintf("Unsupported SQL operation: invalid label %q (1 to 128 characters, no comma or line break).", l)}
			}
		}
		value := []byte("[]\n")
		if len(labels) > 0 {
			value, _ = yaml.Marshal(labels)
		}
		sess, owned, err := e.labelSession(ctx, version != 0)
		if err != nil {
			return nil, err
		}
		_, err = sess.Commit(ctx, registry.Txn{
			Conds: []registry.Cond{{Key: key, Version: version}},
			Ops:   []registry.Op{{Key: key, Value: value, Ephemeral: version == 0}},
		})
		if !owned {
			_ = sess.Close(context.WithoutCancel(ctx))
		}
		if errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrExists) || errors.Is(err, registry.ErrNotFound) {
			continue // changed meanwhile: read again
		}
		if err != nil {
			return nil, err
		}
		return &Result{}, nil
	}
	return nil, &Error{Code: computenode.StateCode, SQLState: "0A000", Message: fmt.Sprintf("Unsupported SQL operation: the labels of compute node %s kept changing; retry.", id)}
}

// labelSession returns the session to commit a labels change with: a
// short one when the key exists (the write keeps the key's owner), the
// engine's own long-lived one (owned true) to create a key.
func (e *Engine) labelSession(ctx context.Context, exists bool) (sess registry.Session, owned bool, err error) {
	if exists {
		sess, err = e.d.Repo.NewSession(ctx, registry.SessionOptions{})
		return sess, false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sess != nil {
		select {
		case <-e.sess.Done():
			e.sess = nil
		default:
			return e.sess, true, nil
		}
	}
	if e.closed {
		return nil, false, errors.New("console: engine closed")
	}
	e.sess, err = e.d.Repo.NewSession(ctx, registry.SessionOptions{})
	return e.sess, true, err
}
