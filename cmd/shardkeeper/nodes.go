package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// computeNode is one row of SHOW COMPUTE NODES; the JSON names are the
// column names (and the HTTP API's).
type computeNode struct {
	InstanceID   string `json:"instance_id"`
	InstanceType string `json:"instance_type"`
	Host         string `json:"host"`
	Port         int    `json:"port"`
	Status       string `json:"status"`
	ModeType     string `json:"mode_type"`
	WorkerID     int    `json:"worker_id"`
	Version      string `json:"version"`
	DatabaseName string `json:"database_name"`
}

var computeNodeColumns = []string{"instance_id", "instance_type", "host", "port", "status", "mode_type", "worker_id", "version", "database_name"}

func nodesTable(nodes []computeNode) table {
	t := table{header: computeNodeColumns}
	for _, n := range nodes {
		t.rows = append(t.rows, []string{n.InstanceID, n.InstanceType, n.Host, strconv.Itoa(n.Port), n.Status, n.ModeType,
			strconv.Itoa(n.WorkerID), n.Version, n.DatabaseName})
	}
	return t
}

// Messages of ShardingSphere's SetComputeNodeStateExecutor
// (UnsupportedSQLOperationException, code 30001).
const codeUnsupportedOperation = 30001

func unsupported(format string, args ...any) error {
	return fmt.Errorf("Unsupported SQL operation: %s. (code %d)", fmt.Sprintf(format, args...), codeUnsupportedOperation)
}

func newNodesCommand() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "Compute nodes: list, show, enable, disable (SHOW COMPUTE NODES, ENABLE/DISABLE COMPUTE NODE)",
		Long: `Compute nodes as the registry shows them, with SHOW COMPUTE NODES' columns.

Talk to a running node with --server URL (and --token for enable/disable), or
read the registry directly with --conf DIR or the registry flags.`,
		Example: `  shardkeeper nodes list --conf ./conf
  shardkeeper nodes list --server http://127.0.0.1:8080 -o json
  shardkeeper nodes disable 3a1f... --repository-type etcd --server-lists http://127.0.0.1:2379`,
	}
	t.register(cmd)
	complete := func(cmd *cobra.Command, a []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(a) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		nodes, err := listNodes(cmd.Context(), t)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ids := make([]string, 0, len(nodes))
		for _, n := range nodes {
			ids = append(ids, n.InstanceID+"\t"+n.InstanceType+" "+n.Host+" worker "+strconv.Itoa(n.WorkerID))
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
	cmd.AddCommand(
		&cobra.Command{
			Use: "list", Aliases: []string{"ls"}, Short: "List the online compute nodes", Args: args(0, 0, ""),
			RunE: func(cmd *cobra.Command, _ []string) error {
				if err := t.check(); err != nil {
					return err
				}
				nodes, err := listNodes(cmd.Context(), t)
				if err != nil {
					return err
				}
				return output(cmd.OutOrStdout(), t.output, nodesTable(nodes), map[string]any{"nodes": nodes})
			},
		},
		&cobra.Command{
			Use: "show [INSTANCE_ID]", Short: "Show one compute node (with --server and no id: the node itself)",
			Args: args(0, 1, "INSTANCE_ID"), ValidArgsFunction: complete,
			RunE: func(cmd *cobra.Command, a []string) error {
				if err := t.check(); err != nil {
					return err
				}
				var n computeNode
				switch {
				case len(a) == 0 && t.useServer():
					c, err := t.client()
					if err != nil {
						return err
					}
					if err := c.get(cmd.Context(), "/api/v1/nodes/self", &n); err != nil {
						return err
					}
				case len(a) == 0:
					return usagef("nodes show needs an INSTANCE_ID when it reads the registry (see 'shardkeeper nodes list')")
				case t.useServer():
					if err := registry.ValidateName(a[0]); err != nil {
						return usagef("INSTANCE_ID %q: %v", a[0], err)
					}
					c, err := t.client()
					if err != nil {
						return err
					}
					if err := c.get(cmd.Context(), "/api/v1/nodes/"+url.PathEscape(a[0]), &n); err != nil {
						return err
					}
				default:
					nodes, err := listNodes(cmd.Context(), t)
					if err != nil {
						return err
					}
					found := false
					for _, x := range nodes {
						if x.InstanceID == a[0] {
							n, found = x, true
						}
					}
					if !found {
						return fmt.Errorf("compute node %q is not online (see 'shardkeeper nodes list')", a[0])
					}
				}
				return output(cmd.OutOrStdout(), t.output, nodesTable([]computeNode{n}), n)
			},
		},
		nodeStateCommand(t, "enable", complete),
		nodeStateCommand(t, "disable", complete),
	)
	return cmd
}

func nodeStateCommand(t *target, verb string, complete cobra.CompletionFunc) *cobra.Command {
	enable := verb == "enable"
	short := "Enable a compute node (status OK), as ENABLE COMPUTE NODE"
	if !enable {
		short = "Disable a compute node (status CIRCUIT_BREAK), as DISABLE COMPUTE NODE"
	}
	return &cobra.Command{
		Use: verb + " INSTANCE_ID", Short: short, Args: args(1, 1, "INSTANCE_ID"), ValidArgsFunction: complete,
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := t.check(); err != nil {
				return err
			}
			id := a[0]
			if err := registry.ValidateName(id); err != nil {
				return usagef("INSTANCE_ID %q: %v", id, err)
			}
			state := strings.ToUpper(verb)
			if t.useServer() {
				c, err := t.client()
				if err != nil {
					return err
				}
				if err := c.put(cmd.Context(), "/api/v1/nodes/"+url.PathEscape(id)+"/state", map[string]string{"state": state}, nil); err != nil {
					return err
				}
			} else if err := t.withRegistry(cmd.Context(), func(ctx context.Context, r registry.Repository) error {
				return setNodeState(ctx, r, id, enable)
			}); err != nil {
				return err
			}
			status := "OK"
			if !enable {
				status = "CIRCUIT_BREAK"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "compute node %s %sd (status %s)\n", id, verb, status)
			return nil
		},
	}
}

// listNodes reads the compute nodes from the node or the registry.
func listNodes(ctx context.Context, t *target) ([]computeNode, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if t.useServer() {
		c, err := t.client()
		if err != nil {
			return nil, err
		}
		var resp struct {
			Nodes []computeNode `json:"nodes"`
		}
		if err := c.get(ctx, "/api/v1/nodes", &resp); err != nil {
			return nil, err
		}
		return resp.Nodes, nil
	}
	var nodes []computeNode
	mode := t.modeType()
	err := t.withRegistry(ctx, func(ctx context.Context, r registry.Repository) error {
		kvs, err := r.List(ctx, paths.ComputeNodes)
		if err != nil {
			return err
		}
		nodes, err = decodeNodes(kvs, mode)
		return err
	})
	return nodes, err
}

// decodeNodes builds SHOW COMPUTE NODES rows from the keys under
// /nodes/compute_nodes: one row per online node (as ShardingSphere's
// loadAllInstances), status OK when no status node is published, worker
// id -1 when none, port -1 for JDBC.
func decodeNodes(kvs []registry.KV, modeType string) ([]computeNode, error) {
	byID := map[string]*computeNode{}
	status := map[string]string{}
	workers := map[string]int{}
	for _, kv := range kvs {
		kind, id, typ, ok := paths.InstanceIDFrom(kv.Key)
		if !ok {
			continue
		}
		switch kind {
		case "online":
			var v struct {
				Attribute    string `yaml:"attribute"`
				DatabaseName string `yaml:"databaseName"`
				Version      string `yaml:"version"`
			}
			if err := yaml.Unmarshal(kv.Value, &v); err != nil {
				return nil, fmt.Errorf("corrupt online node %s: %w", kv.Key, err)
			}
			n := &computeNode{InstanceID: id, InstanceType: strings.ToUpper(string(typ)), Host: v.Attribute, Port: -1,
				ModeType: modeType, WorkerID: -1, Version: v.Version, DatabaseName: v.DatabaseName}
			if typ == paths.Proxy {
				host, port, found := strings.Cut(v.Attribute, "@")
				if p, err := strconv.Atoi(port); found && err == nil {
					n.Host, n.Port = host, p
				}
			}
			byID[id] = n
		case "status":
			status[id] = strings.TrimSpace(string(kv.Value))
		case "worker_id":
			if w, err := paths.ParseWorkerID(strings.TrimSpace(string(kv.Value))); err == nil {
				workers[id] = w
			}
		}
	}
	out := make([]computeNode, 0, len(byID))
	for id, n := range byID {
		n.Status = "OK"
		if s, ok := status[id]; ok && s != "" {
			n.Status = s
		}
		if w, ok := workers[id]; ok {
			n.WorkerID = w
		}
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].InstanceID < out[j].InstanceID })
	return out, nil
}

// setNodeState writes the status node of id as ShardingSphere's
// SetComputeNodeStateExecutor does, with its checks. The write is a
// compare-and-set through a short session that keeps the node's own
// ownership of the ephemeral key (etcd: the node's lease; ZooKeeper: its
// session), so the status still vanishes with the node.
func setNodeState(ctx context.Context, r registry.Repository, id string, enable bool) error {
	statusKey, err := paths.Status(id)
	if err != nil {
		return err
	}
	kvs, err := r.List(ctx, paths.ComputeNodes)
	if err != nil {
		return err
	}
	nodes, err := decodeNodes(kvs, "")
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(nodes, func(n computeNode) bool { return n.InstanceID == id }) {
		return unsupported("`%s` does not exist", id)
	}
	kv, err := r.Get(ctx, statusKey)
	if errors.Is(err, registry.ErrNotFound) {
		return fmt.Errorf("compute node %s publishes no status node (%s); it cannot be %s from here", id, statusKey, map[bool]string{true: "enabled", false: "disabled"}[enable])
	}
	if err != nil {
		return err
	}
	value := "OK"
	if !enable {
		if strings.TrimSpace(string(kv.Value)) == "CIRCUIT_BREAK" {
			return unsupported("`%s` compute node has been disabled", id)
		}
		value = "CIRCUIT_BREAK"
	}
	sess, err := r.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		return err
	}
	defer sess.Close(context.WithoutCancel(ctx))
	_, err = sess.Commit(ctx, registry.Txn{
		Conds: []registry.Cond{{Key: statusKey, Version: kv.Version}},
		Ops:   []registry.Op{{Key: statusKey, Value: []byte(value)}},
	})
	if errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrNotFound) {
		return fmt.Errorf("compute node %s changed while it was being %s (it may have restarted or left): run the command again", id,
			map[bool]string{true: "enabled", false: "disabled"}[enable])
	}
	return err
}
