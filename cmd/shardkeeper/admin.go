package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Exit codes of the admin verbs, as kubectl and etcdctl use them.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed: unreachable node, not found, refused
	exitUsage = 2 // the command line is wrong: nothing was attempted
)

// Environment variables the admin verbs read when the flag is not given.
const (
	envServer = "SHARDKEEPER_SERVER"
	envToken  = "SHARDKEEPER_TOKEN"
)

// usageError is a mistake on the command line (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitCode maps an error from Execute to the process's exit code: 2 for
// usage errors (ours and cobra's), 1 for everything else.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var u usageError
	if errors.As(err, &u) {
		return exitUsage
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument",
		"invalid argument", "accepts ", "requires at least", "requires at most", "required flag", "if any flags in the group"} {
		if strings.HasPrefix(msg, p) {
			return exitUsage
		}
	}
	return exitError
}

// errorText is err as the CLI prints it: a coded refusal (an
// *sqlerr.Error, the node's API answer or an operation's own) as its
// message with ShardingSphere's code, "message (code N)", as the consoles
// show the same refusal; one the API refused for the credentials or while
// the node was not ready says what to do; anything else is its text. It is
// the CLI's one mapping of a refusal; its exit code is exitCode's (1).
func errorText(err error) string {
	var refused *sqlerr.Error
	if !errors.As(err, &refused) {
		return err.Error()
	}
	msg := err.Error()
	if refused.Code != 0 {
		msg = fmt.Sprintf("%s (code %d)", refused.Message, refused.Code)
	}
	switch refused.Kind {
	case sqlerr.Unauthenticated:
		return msg + ": pass --token-file or set " + envToken + " to the node's API token"
	case sqlerr.Denied:
		return msg + ": the token is not allowed to change the cluster"
	case sqlerr.Unavailable:
		return msg + " (the node is not ready; retry, or see its logs)"
	}
	return msg
}

// addAdminCommands adds the admin verbs (nodes, keys, props, databases)
// to root and makes flag errors usage errors (exit code 2) that point at
// --help.
func addAdminCommands(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usagef("%v\nSee '%s --help'.", err, cmd.CommandPath())
	})
	for _, c := range []*cobra.Command{newNodesCommand(), newKeysCommand(), newPropsCommand(), newDatabasesCommand(), newRulesCommand(), newReadwriteSplittingCommand(), newStatisticsCommand(), newClusterCommand()} {
		root.AddCommand(nounCommand(c))
	}
}

// nounCommand makes c, a noun whose verbs are its subcommands, refuse an
// unknown verb with a usage error (exit code 2) instead of printing its
// help and exiting 0, and print its help when given no verb. It returns c.
func nounCommand(c *cobra.Command) *cobra.Command {
	c.Args = func(cmd *cobra.Command, a []string) error {
		if len(a) > 0 {
			return usagef("unknown command %q for %q\nSee '%s --help'.", a[0], cmd.CommandPath(), cmd.CommandPath())
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	return c
}

// target is where an admin verb goes: a running node's HTTP API
// (--server) or the registry itself (--conf DIR or the registry flags).
type target struct {
	reg       registryFlags
	server    string
	token     string
	tokenFile string
	output    string
}

func (t *target) register(cmd *cobra.Command) {
	t.reg.register(cmd)
	fl := cmd.PersistentFlags()
	fl.StringVar(&t.server, "server", "", "a node's HTTP API, e.g. http://127.0.0.1:8080 (default $"+envServer+"); without it the registry is read directly")
	fl.StringVar(&t.token, "token", "", "bearer token for changes through --server; other local users see it in ps and it stays in shell history: prefer --token-file or $"+envToken)
	fl.StringVar(&t.tokenFile, "token-file", "", "file holding the bearer token for changes through --server (default $"+envToken+")")
	fl.StringVarP(&t.output, "output", "o", "table", "output format: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkPersistentFlagDirname("conf")
}

// check validates the flags shared by every verb.
func (t *target) check() error {
	if t.server == "" {
		t.server = os.Getenv(envServer)
	}
	switch {
	case t.token != "" && t.tokenFile != "":
		return usagef("--token and --token-file both give the token: give one")
	case t.tokenFile != "":
		token, err := readTokenFile(context.Background(), "--token-file", t.tokenFile)
		if err != nil {
			return err
		}
		t.token = token
	case t.token == "":
		t.token = strings.TrimSpace(os.Getenv(envToken))
	}
	switch t.output {
	case "table", "json", "yaml":
	default:
		return usagef("-o %q: want table, json or yaml", t.output)
	}
	if t.server != "" && (t.reg.confDir != "" || t.reg.repositoryType != "" || t.reg.serverLists != "") {
		return usagef("--server talks to a node; --conf and the registry flags read the registry: give one or the other")
	}
	return nil
}

func (t *target) useServer() bool { return t.server != "" }

func (t *target) client() (*apiClient, error) { return newAPIClient(t.server, t.token) }

// withRegistry opens the registry from the flags for one call, bounded by
// the timeout, and closes it afterwards.
func (t *target) withRegistry(ctx context.Context, fn func(context.Context, registry.Repository) error) error {
	r, err := openFromFlags(ctx, &t.reg)
	if err != nil {
		if rc, rerr := t.reg.repository(ctx); rerr == nil && rc.Type == config.RepositoryEmbedded && strings.Contains(err.Error(), "in use") {
			return fmt.Errorf("%w\nA node is running on it: ask that node with --server URL (its HTTP API, default http://127.0.0.1:8080),\n"+
				"or read its embedded etcd with --repository-type etcd --server-lists URL --data-dir %s", err, rc.DataDir)
		}
		return err
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(ctx, requestTimeout(&t.reg))
	defer cancel()
	return fn(ctx, r)
}

// modeType is the mode_type column: the conf dir's mode, else Cluster on
// etcd and ZooKeeper, Standalone on the embedded registry.
func (t *target) modeType(ctx context.Context) string {
	if t.reg.confDir != "" {
		if m, err := config.LoadMode(ctx, t.reg.confDir); err == nil {
			return m.Type
		}
	}
	if rc, err := t.reg.repository(ctx); err == nil && rc.Type == config.RepositoryEmbedded {
		return config.ModeStandalone
	}
	return config.ModeCluster
}

// args returns a cobra.PositionalArgs that reports a wrong count as a
// usage error naming the expected arguments.
func args(minN, maxN int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) < minN || (maxN >= 0 && len(a) > maxN) {
			if names == "" {
				return usagef("%s takes no arguments\nSee '%s --help'.", cmd.CommandPath(), cmd.CommandPath())
			}
			return usagef("usage: %s %s\nSee '%s --help'.", cmd.CommandPath(), names, cmd.CommandPath())
		}
		return nil
	}
}
