package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
)

func newServeCommand() *cobra.Command {
	f := &registryFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a node (default: standalone on the embedded registry in ./" + config.DefaultEmbeddedDataDir + ")",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc, err := f.repository()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if rc.Type == config.RepositoryEmbedded {
				if _, err := os.Stat(filepath.Join(rc.DataDir, "member")); err == nil {
					fmt.Fprintf(out, "reusing registry data in %s\n", rc.DataDir)
				}
			}
			repo, err := connect.Open(cmd.Context(), rc)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "shardkeeper: registry ready: %s\n", connect.Describe(rc, repo))
			fmt.Fprintln(out, "shardkeeper: running; Ctrl-C or SIGTERM stops")
			<-cmd.Context().Done()
			fmt.Fprintln(out, "shardkeeper: stopping")
			if err := repo.Close(); err != nil {
				return err
			}
			fmt.Fprintln(out, "shardkeeper: stopped")
			return nil
		},
	}
	f.register(cmd)
	return cmd
}
