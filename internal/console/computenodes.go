package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"slices"
	"strconv"
	"strings"

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

// 5.5.4 (master) dropped the labels column of both (#39006) and LABEL,
// RELABEL and UNLABEL COMPUTE NODE (#39012): a node writing the 5.5.4
// layout shows and runs them as 5.5.4 does.
var (
	computeNodesColumns554    = withoutLabels(computeNodesColumns)
	computeNodeInfoColumns554 = withoutLabels(computeNodeInfoColumns)
)

func withoutLabels(cols []Column) []Column {
	return slices.DeleteFunc(slices.Clone(cols), func(c Column) bool { return c.Name == "labels" })
}

// noLabels reports whether the node writes the 5.5.4 layout, which has no
// compute node labels.
func (e *Engine) noLabels() bool { return e.layoutNow(e.d.Mode.Repository.Layout) == paths.Layout554 }

// dropLabels removes the labels cell (at index i) from a row.
func dropLabels(row []*string, i int) []*string {
	return slices.Delete(slices.Clone(row), i, i+1)
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
	cols := computeNodesColumns
	if e.noLabels() {
		cols = computeNodesColumns554
	}
	if c := e.nodeRows.Load(); c != nil {
		select {
		case <-c.changed:
		default:
			return &Result{Columns: cols, Rows: c.rows, Shared: true}, nil
		}
	}
	list, changed := e.d.Node.InstancesChanged()
	rows := make([][]*string, 0, len(list))
	for _, inst := range list {
		r := computenode.RowOf(inst, e.d.ModeType)
		row := strs(r.InstanceID, r.InstanceType, r.Host, strconv.Itoa(r.Port), r.Status,
			r.ModeType, strconv.Itoa(r.WorkerID), strings.Join(r.Labels, ","), r.Version, r.DatabaseName)
		if e.noLabels() {
			row = dropLabels(row, 7)
		}
		rows = append(rows, row)
	}
	e.nodeRows.Store(&nodeRows{rows: rows, changed: changed})
	return &Result{Columns: cols, Rows: rows, Shared: true}, nil
}

// self is this node's row (cluster.Node.Self).
func (e *Engine) self() computenode.Row { return computenode.RowOf(e.d.Node.Self(), e.d.ModeType) }

func (e *Engine) showComputeNodeInfo(_ context.Context, _ *Session, _ *distsql.ShowComputeNodeInfo) (*Result, error) {
	r := e.self()
	row := []*string{
		str(r.InstanceID), str(r.Host), str(strconv.Itoa(r.Port)), str(r.Status), str(r.ModeType),
		str(strconv.Itoa(r.WorkerID)), str(strings.Join(r.Labels, ",")), str(r.Version),
	}
	if e.noLabels() {
		return &Result{Columns: computeNodeInfoColumns554, Rows: [][]*string{dropLabels(row, 6)}}, nil
	}
	return &Result{Columns: computeNodeInfoColumns, Rows: [][]*string{row}}, nil
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
	if r.Layout != paths.DefaultLayout {
		props["layoutVersion"] = r.Layout.String()
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
	if e.noLabels() {
		return nil, labelsRemoved(st.Relabel)
	}
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
	if e.noLabels() {
		return nil, unsupported("UNLABEL COMPUTE NODE, which ShardingSphere 5.5.4 removed (layoutVersion 5.5.4)")
	}
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

// labelsRemoved refuses LABEL or RELABEL COMPUTE NODE for the 5.5.4
// layout, changing nothing.
func labelsRemoved(relabel bool) error {
	what := "LABEL"
	if relabel {
		what = "RELABEL"
	}
	return unsupported(what + " COMPUTE NODE, which ShardingSphere 5.5.4 removed (layoutVersion 5.5.4)")
}

// maxLabels bounds the labels of one node, and of one LABEL, RELABEL or
// UNLABEL statement.
const maxLabels = 64

func tooManyLabels() *sqlerr.Error {
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
				return nil, unsupported(fmt.Sprintf("invalid label %q (1 to 128 characters, no comma or line break)", l))
			}
		}
		value := []byte("[]\n")
		if len(labels) > 0 {
			value, _ = yaml.Marshal(labels)
		}
		sess, err := e.labelSession()
		if err != nil {
			return nil, err
		}
		_, err = sess.Commit(ctx, registry.Txn{
			Conds: []registry.Cond{{Key: key, Version: version}},
			Ops:   []registry.Op{{Key: key, Value: value, Ephemeral: version == 0}},
		})
		if errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrExists) || errors.Is(err, registry.ErrNotFound) {
			continue // changed meanwhile: read again
		}
		if err != nil {
			return nil, err
		}
		return &Result{}, nil
	}
	return nil, unsupported(fmt.Sprintf("the labels of compute node %s kept changing; retry", id))
}

// labelSession returns the session to commit a labels change with: the
// node's own (cluster.Node.Session), so that a labels node LABEL creates
// goes with the node as the node's own registration does.
func (e *Engine) labelSession() (registry.Session, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, errors.New("console: engine closed")
	}
	sess := e.d.Node.Session()
	if sess == nil {
		return nil, unsupported("this compute node holds no registry session now (it is re-acquiring its worker id); retry")
	}
	return sess, nil
}
