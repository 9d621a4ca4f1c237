package main

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/computenode"
	"github.com/shardkeeper/shardkeeper/registry"
)

var computeNodeColumns = []string{"instance_id", "instance_type", "host", "port", "status", "mode_type", "worker_id", "version", "database_name"}

func nodesTable(nodes []computenode.Row) table {
	t := table{header: computeNodeColumns}
	for _, n := range nodes {
		t.rows = append(t.rows, []string{n.InstanceID, n.InstanceType, n.Host, strconv.Itoa(n.Port), n.Status, n.ModeType,
			strconv.Itoa(n.WorkerID), n.Version, n.DatabaseName})
	}
	return t
}

func newNodesCommand() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "Compute nodes: list, show, enable, disable (SHOW COMPUTE NODES, ENABLE/DISABLE COMPUTE NODE)",
		Long: `Compute nodes as the registry shows them, with SHOW COMPUTE NODES' columns.

Talk to a running node with --server URL (and --token-file or $SHARDKEEPER_TOKEN for enable/disable), or
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
				var n computenode.Row
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
				return output(cmd.OutOrStdout(), t.output, nodesTable([]computenode.Row{n}), n)
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
func listNodes(ctx context.Context, t *target) ([]computenode.Row, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if t.useServer() {
		c, err := t.client()
		if err != nil {
			return nil, err
		}
		var resp struct {
			Nodes []computenode.Row `json:"nodes"`
		}
		if err := c.get(ctx, "/api/v1/nodes", &resp); err != nil {
			return nil, err
		}
		return resp.Nodes, nil
	}
	var nodes []computenode.Row
	mode := t.modeType(ctx)
	err := t.withRegistry(ctx, func(ctx context.Context, r registry.Repository) error {
		insts, err := cluster.LoadInstances(ctx, r, nil)
		for _, inst := range insts {
			nodes = append(nodes, computenode.RowOf(inst, mode))
		}
		return err
	})
	return nodes, err
}

// setNodeState is ENABLE / DISABLE COMPUTE NODE through the registry,
// with ShardingSphere's checks and messages (code 30001).
func setNodeState(ctx context.Context, r registry.Repository, id string, enable bool) error {
	_, err := computenode.SetState(ctx, r, id, enable, "")
	return err
}
