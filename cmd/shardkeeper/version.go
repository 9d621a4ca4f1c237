package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/internal/version"
)

// versionText is what `shardkeeper version` and `shardkeeper --version`
// print: the release, then the module version, commit and Go version.
func versionText(in version.Info) string {
	commit := in.ShortCommit()
	if in.CommitTime != "" {
		commit += " (" + in.CommitTime + ")"
	}
	return fmt.Sprintf("shardkeeper %s\nmodule  %s\ncommit  %s\ngo      %s\n", in.Release, in.Module, commit, in.Go)
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the release, module version, commit and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := version.Read()
			switch output {
			case "", "text":
				_, err := fmt.Fprint(cmd.OutOrStdout(), versionText(in))
				return err
			case "json":
				b, err := json.Marshal(in)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
				return err
			default:
				return usagef("-o %q: want text or json", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}
