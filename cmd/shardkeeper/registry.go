package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/registry"
)

func newRegistryCommand() *cobra.Command {
	f := &registryFlags{}
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Raw access to the registry: ls, get, put, rm, watch; migrate between layouts",
		Long: `Raw access to the registry keys, namespaced as the node sees them.

Choose the registry with --conf DIR (the mode section of its global.yaml) or
with --repository-type etcd|ZooKeeper|Embedded --server-lists ... --namespace ...

The embedded registry (the default) is opened from --data-dir DIR (default
` + config.DefaultEmbeddedDataDir + `). While a node runs on DIR, the command
reaches that node's etcd at its client URL (default ` + config.DefaultEmbeddedClientURL + `)
with the root credentials in DIR/credentials.json, readable only by the
user the node runs as:
  shardkeeper registry ls / --data-dir ` + config.DefaultEmbeddedDataDir + `
  shardkeeper registry ls / --repository-type etcd --server-lists http://127.0.0.1:2379 --data-dir ` + config.DefaultEmbeddedDataDir,
	}
	f.register(cmd)
	cmd.PersistentFlags().BoolVar(&f.showSecrets, "show-secrets", false, showSecretsUsage)
	cmd.AddCommand(
		&cobra.Command{
			Use: "ls PATH", Short: "List the children of PATH", Args: cobra.ExactArgs(1),
			RunE: withRepo(f, func(ctx context.Context, r registry.Repository, args []string, out io.Writer) error {
				names, err := r.Children(ctx, args[0])
				for _, n := range names {
					fmt.Fprintln(out, n)
				}
				return err
			}),
		},
		newGetCommand(f),
		&cobra.Command{
			Use: "put PATH VALUE", Short: "Write VALUE at PATH (VALUE - reads standard input)", Args: cobra.ExactArgs(2),
			Long: `Write VALUE at PATH (VALUE - reads standard input).

A value holding ` + redact.Mask + `, the mask printed in place of secrets, is refused:
it would replace the real secrets. Read the value with --show-secrets, edit
it, and put that.`,
			RunE: withRepo(f, func(ctx context.Context, r registry.Repository, args []string, out io.Writer) error {
				value := []byte(args[1])
				if args[1] == "-" {
					var err error
					if value, err = io.ReadAll(os.Stdin); err != nil {
						return err
					}
				}
				if versioned, err := isVersioned(ctx, r, args[0]); err != nil {
					return err
				} else if versioned {
					return fmt.Errorf("refusing to put %s: it is a versioned node (active_version, versions/N), whose own value nothing reads; "+
						"change it with what owns it, which writes a new version every node applies: props with 'shardkeeper props set NAME VALUE', "+
						"rules with 'shardkeeper rules apply', storage units with REGISTER or ALTER STORAGE UNIT on a console", args[0])
				}
				if redact.ContainsMask(value) {
					return fmt.Errorf("refusing to put %s: the value holds %s, the mask printed in place of a secret, and would replace the real secret with it; "+
						"read the value with 'shardkeeper registry get %s --show-secrets', edit that, and put it", args[0], redact.Mask, args[0])
				}
				v, err := r.Put(ctx, args[0], value)
				if err == nil {
					fmt.Fprintf(out, "OK version %d\n", v)
				}
				return err
			}),
		},
		newRmCommand(f),
		newMigrateCommand(f),
		&cobra.Command{
			Use: "watch PATH", Short: "Print the keys under PATH, then every change, until Ctrl-C", Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				r, err := openFromFlags(cmd.Context(), f)
				if err != nil {
					return err
				}
				defer r.Close()
				out := cmd.OutOrStdout()
				err = registry.Follow(cmd.Context(), r, args[0], func(ev registry.Event) {
					switch {
					case ev.Err != nil:
						fmt.Fprintf(cmd.ErrOrStderr(), "watch lost (%v); resyncing\n", ev.Err)
					case ev.Type == registry.EventDelete:
						fmt.Fprintf(out, "DELETE %s\n", ev.KV.Key)
					default:
						fmt.Fprintf(out, "PUT %s %s\n", ev.KV.Key, f.shown(ev.KV))
					}
				})
				if cmd.Context().Err() != nil {
					return nil
				}
				return err
			},
		},
	)
	return cmd
}

func newGetCommand(f *registryFlags) *cobra.Command {
	var output string
	errOut := io.Discard
	cmd := &cobra.Command{
		Use: "get PATH", Short: "Print the value at PATH (of a versioned node such as /props: its active version's)", Args: cobra.ExactArgs(1),
		Long: `Print the value at PATH.

A versioned node of ShardingSphere 5.5's layout (/props, /rules/NAME, a
database's tables, views and storage units) holds no value itself: get
prints its active version's value, /PATH/versions/N where N is the value of
/PATH/active_version, and names that key on stderr. A PATH that holds no
value but has children is an error that names them.`,
		PreRun: func(cmd *cobra.Command, _ []string) { errOut = cmd.ErrOrStderr() },
		RunE: withRepo(f, func(ctx context.Context, r registry.Repository, args []string, out io.Writer) error {
			kv, err := readNode(ctx, r, args[0], errOut)
			if err != nil {
				return err
			}
			switch output {
			case "json":
				return json.NewEncoder(out).Encode(struct {
					Key     string `json:"key"`
					Value   string `json:"value"`
					Version int64  `json:"version"`
				}{kv.Key, string(f.shown(kv)), int64(kv.Version)})
			case "", "value":
				_, err = fmt.Fprintf(out, "%s\n", f.shown(kv))
				return err
			default:
				return fmt.Errorf("-o %q: want value or json", output)
			}
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "value", "value or json (with the version)")
	return cmd
}

// isVersioned says whether path is a versioned node of the 5.5 layout:
// its children are active_version and versions.
func isVersioned(ctx context.Context, r registry.Repository, path string) (bool, error) {
	children, err := r.Children(ctx, path)
	if errors.Is(err, registry.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.Contains(children, paths.ActiveVersionName) && slices.Contains(children, paths.VersionsName), nil
}

// readNode returns the value at path. A node without a value of its own
// (missing, or empty as a ZooKeeper parent is) that is versioned answers
// with its active version, which it names on note; one with other
// children is an error that names them; an empty node without children
// answers its empty value.
func readNode(ctx context.Context, r registry.Repository, path string, note io.Writer) (registry.KV, error) {
	kv, err := r.Get(ctx, path)
	if (err == nil && len(kv.Value) > 0) || (err != nil && !errors.Is(err, registry.ErrNotFound)) {
		return kv, err
	}
	children, cerr := r.Children(ctx, path)
	if cerr != nil || len(children) == 0 {
		return kv, err
	}
	node := "/" + strings.Trim(path, "/")
	if !slices.Contains(children, paths.ActiveVersionName) || !slices.Contains(children, paths.VersionsName) {
		return kv, fmt.Errorf("%s holds no value; its children do: %s (see 'shardkeeper registry ls %s')", node, strings.Join(children, ", "), node)
	}
	av, err := r.Get(ctx, paths.ActiveVersion(node))
	if err != nil {
		return kv, fmt.Errorf("%s is a versioned node: reading its active version: %w", node, err)
	}
	n, aerr := strconv.Atoi(strings.TrimSpace(string(av.Value)))
	if aerr != nil || n < 0 {
		return kv, fmt.Errorf("%s is a versioned node whose %s is %q, not a version number", node, paths.ActiveVersion(node), av.Value)
	}
	kv, err = r.Get(ctx, paths.Version(node, n))
	if errors.Is(err, registry.ErrNotFound) {
		return kv, fmt.Errorf("%s is a versioned node whose active version %d is missing (%s): see 'shardkeeper registry ls %s/%s'", node, n, paths.Version(node, n), node, paths.VersionsName)
	}
	if err == nil {
		fmt.Fprintf(note, "%s is versioned: its active version %d, %s\n", node, n, paths.Version(node, n))
	}
	return kv, err
}

// withRepo opens the registry from the flags for one command, bounded by
// the timeout, and closes it afterwards.
func withRepo(f *registryFlags, fn func(context.Context, registry.Repository, []string, io.Writer) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		r, err := openFromFlags(cmd.Context(), f)
		if err != nil {
			return err
		}
		defer r.Close()
		ctx, cancel := context.WithTimeout(cmd.Context(), requestTimeout(f))
		defer cancel()
		return fn(ctx, r, args, cmd.OutOrStdout())
	}
}

func openFromFlags(ctx context.Context, f *registryFlags) (registry.Repository, error) {
	rc, err := f.repository(ctx)
	if err != nil {
		return nil, err
	}
	// An admin command that starts the embedded etcd itself shows its
	// errors only.
	return connect.OpenAdmin(ctx, rc, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
}

func requestTimeout(f *registryFlags) time.Duration {
	if f.timeout > 0 {
		return f.timeout
	}
	return 30 * time.Second
}

// newRmCommand is `registry rm PATH [--force]`.
func newRmCommand(f *registryFlags) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "rm PATH",
		Short: "Delete PATH and everything under it",
		Long: `Delete PATH and everything under it.

Deleting /reservation, /nodes, the root, or anything under /reservation
(worker id reservations, fences, hints, the ledger) needs --force: it takes
worker ids from running nodes, and a node that claims an id whose fence was
deleted waits out the longest reservation (1 minute) plus the clock skew
bound (5 seconds) before it issues keys on it.`,
		Args: cobra.ExactArgs(1),
		PreRunE: func(_ *cobra.Command, args []string) error {
			if why := guardedDelete(args[0]); why != "" && !force {
				return usagef("registry rm %s: refused without --force: %s", args[0], why)
			}
			return nil
		},
		RunE: withRepo(f, func(ctx context.Context, r registry.Repository, args []string, out io.Writer) error {
			err := r.Delete(ctx, args[0])
			if err == nil {
				fmt.Fprintln(out, "OK")
			}
			return err
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete even worker id reservations, fences or compute node registrations")
	return cmd
}

// guardedDelete says why deleting path (and its subtree) needs --force, or
// "" when it does not: it would delete worker id reservations or fences,
// or every compute node's registration.
func guardedDelete(path string) string {
	p := "/" + strings.Trim(path, "/")
	under := func(root string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	switch {
	case p == "/":
		return "it deletes everything, worker id reservations and fences included"
	case under(paths.ReservationTop):
		return "it deletes worker id reservations or fences (running nodes lose their worker ids)"
	case p == paths.NodesTop || p == paths.ComputeNodes || p == paths.WorkerIDRoot:
		return "it deletes the registrations of every compute node"
	}
	return ""
}

// newMigrateCommand is registry migrate: convert the live tree's rule
// items to another 5.5.x release's layout (metadata.MigrateTree).
func newMigrateCommand(f *registryFlags) *cobra.Command {
	var to string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "migrate --to 5.5.2|5.5.3|5.5.4 [--dry-run]",
		Short: "Convert the live registry's rule items to a ShardingSphere release's layout, losing nothing",
		Long: `Convert every database's rule items to the registry layout of the release
--to names (5.5.2 for 5.5.0 to 5.5.2, 5.5.3, or 5.5.4), keeping the same
configuration. A tree ShardingSphere 5.4.x or 5.3.x wrote is read in its
release's layout and converted too (5.3.x's global rules and props with it):
each database is rewritten in one registry transaction, under
the cluster lock, so that every node sees it either in its old layout or in
the new one. A rule the target cannot hold (a sharding cache on 5.5.4, a
key generate strategy other than a column's before 5.5.4) or an item that
does not decode refuses the whole migration before anything is written.

--dry-run prints every key the migration would add, change and remove, and
writes nothing. Set layoutVersion to the same release on the shardkeeper
nodes (or leave it unset: a node then writes the tree's layout at its start).`,
		Args: cobra.NoArgs,
		RunE: withRepo(f, func(ctx context.Context, r registry.Repository, _ []string, out io.Writer) error {
			layout, err := paths.ParseLayout(to)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			plan, done, err := metadata.MigrateTree(ctx, r, layout, dryRun)
			printMigration(out, plan, done, dryRun)
			return err
		}),
	}
	cmd.Flags().StringVar(&to, "to", "", "the release whose layout the tree takes: 5.5.2, 5.5.3 or 5.5.4 (required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be added, changed and removed; write nothing")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// printMigration prints each database's steps ("add KEY", "change KEY",
// "remove KEY") and what was done.
func printMigration(out io.Writer, plan []metadata.DatabaseMigration, done []string, dryRun bool) {
	for _, m := range plan {
		if len(m.Steps) == 0 {
			fmt.Fprintf(out, "database %s: already in the layout\n", m.Database)
			continue
		}
		if m.From != "" {
			fmt.Fprintf(out, "database %s: read in the layout of ShardingSphere %s\n", m.Database, m.From)
		}
		for _, s := range m.Steps {
			fmt.Fprintf(out, "%s %s\n", s.Action, s.Node)
		}
		switch {
		case dryRun:
			fmt.Fprintf(out, "database %s: %d keys would change (dry run: nothing written)\n", m.Database, len(m.Steps))
		case slices.Contains(done, m.Database):
			fmt.Fprintf(out, "database %s: migrated (%d keys)\n", m.Database, len(m.Steps))
		default:
			fmt.Fprintf(out, "database %s: not migrated\n", m.Database)
		}
	}
}
