package console

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/computenode"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/paths"
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

func (e *Engine) showComputeNodes(_ context.Context, _ *Session, _ *distsql.ShowComputeNodes) (*Result, error) {
	list := e.d.Node.Instances()
	res := &Result{Columns: computeNodesColumns, Rows: make([][]*string, 0, len(list))}
	for _, inst := range list {
		r := computenode.RowOf(inst, e.d.ModeType)
		res.Rows = append(res.Rows, []*string{
			str(r.InstanceID), str(r.InstanceType), str(r.Host), str(strconv.Itoa(r.Port)), str(r.Status),
			str(r.ModeType), str(strconv.Itoa(r.WorkerID)), str(strings.Join(r.Labels, ",")), str(r.Version), str(r.DatabaseName),
		})
	}
	return res, nil
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

func (e *Engine) labelComputeNode(ctx context.Context, s *Session, st *distsql.LabelComputeNode) (*Result, error) {
	return nil, notYet("LABEL COMPUTE NODE")
}

func (e *Engine) unlabelComputeNode(ctx context.Context, s *Session, st *distsql.UnlabelComputeNode) (*Result, error) {
	return nil, notYet("UNLABEL COMPUTE NODE")
}

func (e *Engine) setComputeNodeState(ctx context.Context, id string, enable bool) (*Result, error) {
	return nil, notYet("ENABLE / DISABLE COMPUTE NODE")
}
