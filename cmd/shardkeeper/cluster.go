package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/internal/clusterlock"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// newClusterCommand is the cluster noun: the cluster state and LOCK /
// UNLOCK CLUSTER, through a node's HTTP API or the registry, with the
// consoles' checks and codes (internal/clusterlock).
func newClusterCommand() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "The cluster state: state, lock, unlock (LOCK CLUSTER, UNLOCK CLUSTER)",
		Long: `The cluster state (/states/cluster_state) and LOCK / UNLOCK CLUSTER, with the
consoles' checks and codes. A Standalone node refuses lock (code 17000) and
accepts unlock, as the consoles and the HTTP API do.`,
		Example: `  shardkeeper cluster state
  shardkeeper cluster lock --strategy WRITE --server http://127.0.0.1:8080 --token-file ./token
  shardkeeper cluster unlock --server http://127.0.0.1:8080 --token-file ./token`,
	}
	t.register(cmd)
	var strategy string
	var timeout time.Duration
	lock := &cobra.Command{
		Use: "lock", Short: "LOCK CLUSTER WITH LOCK_STRATEGY(TYPE=strategy): WRITE sets READ_ONLY, READ_WRITE sets UNAVAILABLE", Args: args(0, 0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := t.check(); err != nil {
				return err
			}
			state, err := changeClusterState(cmd.Context(), t, strings.ToUpper(strategy), timeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster locked (state %s)\n", state)
			return nil
		},
	}
	lock.Flags().StringVar(&strategy, "strategy", "WRITE", "WRITE (the cluster becomes READ_ONLY) or READ_WRITE (UNAVAILABLE)")
	unlock := &cobra.Command{
		Use: "unlock", Short: "UNLOCK CLUSTER: the state becomes OK", Args: args(0, 0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := t.check(); err != nil {
				return err
			}
			state, err := changeClusterState(cmd.Context(), t, "", timeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster unlocked (state %s)\n", state)
			return nil
		},
	}
	for _, c := range []*cobra.Command{lock, unlock} {
		c.Flags().DurationVar(&timeout, "lock-timeout", clusterlock.DefaultTimeout, "how long to wait for the cluster lock (TIMEOUT)")
	}
	state := &cobra.Command{
		Use: "state", Short: "Show the cluster state: OK, READ_ONLY or UNAVAILABLE", Args: args(0, 0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := t.check(); err != nil {
				return err
			}
			var resp struct {
				State string `json:"state"`
			}
			if t.useServer() {
				c, err := t.client()
				if err != nil {
					return err
				}
				if err := c.get(cmd.Context(), "/api/v1/cluster/state", &resp); err != nil {
					return err
				}
			} else if err := t.withRegistry(cmd.Context(), func(ctx context.Context, r registry.Repository) (err error) {
				resp.State, err = clusterlock.State(ctx, r)
				return err
			}); err != nil {
				return err
			}
			return output(cmd.OutOrStdout(), t.output, table{header: []string{"state"}, rows: [][]string{{resp.State}}}, resp)
		},
	}
	cmd.AddCommand(state, lock, unlock)
	return cmd
}

// changeClusterState runs LOCK CLUSTER with strategy, or UNLOCK CLUSTER
// when strategy is "", on the target, and returns the state written.
func changeClusterState(ctx context.Context, t *target, strategy string, timeout time.Duration) (string, error) {
	if timeout <= 0 {
		return "", usagef("--lock-timeout %v: must be above 0", timeout)
	}
	if t.useServer() {
		c, err := t.client()
		if err != nil {
			return "", err
		}
		var resp struct {
			State string `json:"state"`
		}
		body := map[string]any{"timeoutMillis": timeout.Milliseconds()}
		path := "/api/v1/cluster/unlock"
		if strategy != "" {
			body["strategy"], path = strategy, "/api/v1/cluster/lock"
		}
		err = c.put(ctx, path, body, &resp)
		return resp.State, err
	}
	rc, err := t.reg.repository(ctx)
	if err != nil {
		return "", err
	}
	op := clusterlock.Op{Timeout: timeout, Standalone: t.modeType(ctx) == config.ModeStandalone}
	state := clusterlock.StateOK
	err = t.withRegistry(ctx, func(ctx context.Context, r registry.Repository) error {
		if op.Layout, err = writeLayout(ctx, rc, r); err != nil {
			return err
		}
		if strategy == "" {
			return clusterlock.Unlock(ctx, r, op)
		}
		state, err = clusterlock.Lock(ctx, r, strategy, op)
		return err
	})
	var refused *sqlerr.Error
	if errors.As(err, &refused) {
		return "", fmt.Errorf("%s (code %d)", refused.Message, refused.Code)
	}
	return state, err
}
