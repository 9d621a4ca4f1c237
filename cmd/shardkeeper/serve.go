package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/daemon"
)

func newServeCommand() *cobra.Command {
	f := &registryFlags{}
	var (
		node      cluster.Config
		logFormat string
		stopAfter time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a node (default: on the embedded registry in ./" + config.DefaultEmbeddedDataDir + ")",
		Long: `Run a compute node until Ctrl-C or SIGTERM, then leave gracefully.

With --conf DIR the node reads DIR/global.yaml (or server.yaml) for the mode
(etcd, ZooKeeper or Embedded, with ShardingSphere's props such as
timeToLiveSeconds) and DIR/database-*.yaml for the logical databases. With
no arguments it runs on the embedded registry, kept in ./` + config.DefaultEmbeddedDataDir + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			log := newLogger(cmd.ErrOrStderr(), logFormat)
			var conf *config.Config
			repo := config.DefaultMode().Repository
			if f.confDir != "" {
				c, err := config.Load(f.confDir)
				if err != nil {
					return err
				}
				conf, repo = c, c.Mode.Repository
				if node.Labels == nil {
					node.Labels = c.Labels
				}
			}
			repo, err := f.apply(repo)
			if err != nil {
				return err
			}
			if repo.Type == config.RepositoryEmbedded {
				if _, err := os.Stat(filepath.Join(repo.DataDir, "member")); err == nil {
					fmt.Fprintf(out, "reusing registry data in %s\n", repo.DataDir)
				}
			}
			node.Logger = log
			d, err := daemon.Start(cmd.Context(), daemon.Config{Repository: repo, Conf: conf, Node: node, Logger: log})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "shardkeeper: registry ready: %s\n", connect.Describe(repo, d.Repo))
			fmt.Fprintf(out, "shardkeeper: node %s holds worker id %d; %d logical database(s)\n",
				d.Node.InstanceID(), d.Node.WorkerID(), len(d.Metadata.Current().Databases))
			fmt.Fprintln(out, "shardkeeper: running; Ctrl-C or SIGTERM stops")
			ctx := cmd.Context()
			if stopAfter > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, stopAfter)
				defer cancel()
			}
			<-ctx.Done()
			fmt.Fprintln(out, "shardkeeper: stopping: no more keys, final fence, offline")
			closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if err := d.Close(closeCtx); err != nil {
				return err
			}
			fmt.Fprintln(out, "shardkeeper: stopped")
			return nil
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&node.InstanceID, "instance-id", "", "stable instance id (default: a new UUID per start); a restarted node with the same id gets its worker id back")
	fl.StringVar(&node.Host, "host", "127.0.0.1", "host published in the online node (attribute ip@port)")
	fl.IntVar(&node.Port, "port", 3307, "port published in the online node")
	fl.DurationVar(&node.Reservation, "reservation", cluster.DefaultReservation, "how far ahead key time is reserved in the registry (renewed every third of it)")
	fl.StringVar(&logFormat, "log-format", "text", "text or json")
	fl.DurationVar(&stopAfter, "stop-after", 0, "leave after this long (for tests and demos)")
	return cmd
}

func newLogger(w interface{ Write([]byte) (int, error) }, format string) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}
