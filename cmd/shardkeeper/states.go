package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/statistics"
	"github.com/shardkeeper/shardkeeper/registry"
)

// newReadwriteSplittingCommand is the readwrite-splitting noun: the
// states of read data sources (/nodes/qualified_data_sources).
func newReadwriteSplittingCommand() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:     "readwrite-splitting",
		Aliases: []string{"rw"},
		Short:   "Read data sources of readwrite-splitting groups: status, enable, disable (ALTER READWRITE_SPLITTING RULE ... ENABLE/DISABLE)",
		Example: `  shardkeeper readwrite-splitting status --conf ./conf
  shardkeeper readwrite-splitting disable rw_db readwrite_ds read_ds_1 --server http://127.0.0.1:8080 --token-file ./token`,
	}
	t.register(cmd)
	cmd.AddCommand(
		&cobra.Command{
			Use: "status", Aliases: []string{"list", "ls"}, Short: "Every read data source and its state (SHOW STATUS FROM READWRITE_SPLITTING RULES)",
			Args: args(0, 0, ""),
			RunE: func(cmd *cobra.Command, _ []string) error {
				if err := t.check(); err != nil {
					return err
				}
				rows, err := listDataSourceStates(cmd.Context(), t)
				if err != nil {
					return err
				}
				tb := table{header: []string{"database", "group", "storage_unit", "status", "configured"}}
				for _, r := range rows {
					tb.rows = append(tb.rows, []string{r.Database, r.Group, r.StorageUnit, r.State, fmt.Sprint(r.Configured)})
				}
				return output(cmd.OutOrStdout(), t.output, tb, map[string]any{"dataSources": rows})
			},
		},
		dataSourceStateCommand(t, "enable"),
		dataSourceStateCommand(t, "disable"),
	)
	return cmd
}

func listDataSourceStates(ctx context.Context, t *target) ([]metadata.DataSourceStateRow, error) {
	if t.useServer() {
		c, err := t.client()
		if err != nil {
			return nil, err
		}
		var resp struct {
			DataSources []metadata.DataSourceStateRow `json:"dataSources"`
		}
		if err := c.get(ctx, "/api/v1/readwrite-splitting/states", &resp); err != nil {
			return nil, err
		}
		return resp.DataSources, nil
	}
	snap, err := loadSnapshot(ctx, t)
	if err != nil {
		return nil, err
	}
	return metadata.DataSourceStateRows(snap), nil
}

func dataSourceStateCommand(t *target, verb string) *cobra.Command {
	enable := verb == "enable"
	return &cobra.Command{
		Use:   verb + " DATABASE GROUP STORAGE_UNIT",
		Short: "ALTER READWRITE_SPLITTING RULE GROUP " + map[bool]string{true: "ENABLE", false: "DISABLE"}[enable] + " STORAGE_UNIT FROM DATABASE, with ShardingSphere's checks",
		Args:  args(3, 3, "DATABASE GROUP STORAGE_UNIT"),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := t.check(); err != nil {
				return err
			}
			for _, n := range a {
				if err := registry.ValidateName(n); err != nil {
					return usagef("%q: %v", n, err)
				}
			}
			state := metadata.StateDisabled
			if enable {
				state = metadata.StateEnabled
			}
			q := metadata.QualifiedDataSource{Database: a[0], Group: a[1], Unit: a[2]}
			if t.useServer() {
				c, err := t.client()
				if err != nil {
					return err
				}
				var row metadata.DataSourceStateRow
				path := "/api/v1/readwrite-splitting/" + url.PathEscape(a[0]) + "/" + url.PathEscape(a[1]) + "/" + url.PathEscape(a[2]) + "/state"
				body := map[string]string{"state": map[bool]string{true: "ENABLE", false: "DISABLE"}[enable]}
				if err := c.put(cmd.Context(), path, body, &row); err != nil {
					return err
				}
				q.Group = row.Group
			} else if err := t.withRegistry(cmd.Context(), func(ctx context.Context, r registry.Repository) error {
				store, err := metadata.Load(ctx, r, slog.New(slog.NewTextHandler(io.Discard, nil)))
				if err != nil {
					return err
				}
				q, err = metadata.CheckDataSourceState(store.Current(), a[0], a[1], a[2], enable)
				if err != nil {
					return err
				}
				return metadata.SetDataSourceState(ctx, r, q, state)
			}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "read data source %s %sd (state %s)\n", q, verb, state)
			return nil
		},
	}
}

// databaseCreateCommand and databaseDropCommand are databases create and
// drop: CREATE and DROP DATABASE, announced on the database listener
// coordinator as ShardingSphere announces them.
func databaseCreateCommand(t *target) *cobra.Command {
	return databaseChange{
		verb: "create", done: "created", short: "Create an empty logical database (CREATE DATABASE)",
		api: func(db string) (string, string, any) {
			return http.MethodPost, "/api/v1/databases", map[string]string{"name": db}
		},
		change: func(ctx context.Context, c metadata.Coordinator, db string) error {
			err := c.CreateDatabase(ctx, config.Database{Name: db})
			if errors.Is(err, registry.ErrExists) {
				return fmt.Errorf("Database '%s' already exists.", db)
			}
			return err
		},
	}.command(t)
}

func databaseDropCommand(t *target) *cobra.Command {
	return databaseChange{
		verb: "drop", done: "dropped", short: "Drop a logical database with everything under it (DROP DATABASE)",
		api: func(db string) (string, string, any) {
			return http.MethodDelete, "/api/v1/databases/" + url.PathEscape(db), nil
		},
		change: func(ctx context.Context, c metadata.Coordinator, db string) error {
			err := c.DropDatabase(ctx, db)
			if errors.Is(err, metadata.ErrNoDatabase) {
				return fmt.Errorf("Unknown database '%s'.", db)
			}
			return err
		},
	}.command(t)
}

// databaseChange is a databases command that changes one database.
type databaseChange struct {
	verb, done, short string // "create", "created", the help line
	// api returns the request that makes the change through a node's
	// HTTP API (--server).
	api func(db string) (method, path string, body any)
	// change makes it on the registry (--conf or the registry flags).
	change func(ctx context.Context, c metadata.Coordinator, db string) error
}

// command is `databases {verb} DATABASE`: the name checked, the change
// made through the node or on the registry (withCoordinator), then
// "database DATABASE {done}" printed.
func (d databaseChange) command(t *target) *cobra.Command {
	return &cobra.Command{
		Use: d.verb + " DATABASE", Short: d.short, Args: args(1, 1, "DATABASE"),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := t.check(); err != nil {
				return err
			}
			db := a[0]
			if err := registry.ValidateName(db); err != nil {
				return usagef("DATABASE %q: %v", db, err)
			}
			if t.useServer() {
				c, err := t.client()
				if err != nil {
					return err
				}
				method, path, body := d.api(db)
				if err := c.do(cmd.Context(), method, path, body, nil); err != nil {
					return err
				}
			} else if err := withCoordinator(cmd.Context(), t, func(ctx context.Context, c metadata.Coordinator) error {
				return d.change(ctx, c, db)
			}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "database %s %s\n", db, d.done)
			return nil
		},
	}
}

// writeLayout is the layout a command writes on r: the conf's
// layoutVersion, else the one a node without it would pick now
// (metadata.PickLayout: the tree's, the registered nodes', else the
// newest release's).
func writeLayout(ctx context.Context, rc config.Repository, r registry.Repository) (paths.Layout, error) {
	if rc.LayoutSet {
		return rc.Layout, nil
	}
	c, err := metadata.PickLayout(ctx, r)
	return c.Layout, err
}

// withCoordinator runs fn with a metadata.Coordinator on the registry from
// the flags, on a session that ends when fn returns (its announcement
// with it), writing the layout of writeLayout.
func withCoordinator(ctx context.Context, t *target, fn func(context.Context, metadata.Coordinator) error) error {
	rc, err := t.reg.repository(ctx)
	if err != nil {
		return err
	}
	return t.withRegistry(ctx, func(ctx context.Context, r registry.Repository) error {
		sess, err := r.NewSession(ctx, registry.SessionOptions{})
		if err != nil {
			return fmt.Errorf("open a registry session: %w", err)
		}
		defer func() { _ = sess.Close(context.WithoutCancel(ctx)) }()
		layout, err := writeLayout(ctx, rc, r)
		if err != nil {
			return err
		}
		return fn(ctx, metadata.Coordinator{Repo: r, Session: sess, Layout: layout})
	})
}

// newStatisticsCommand is the statistics noun: what ShardingSphere nodes
// collected under /statistics/databases (read-only).
func newStatisticsCommand() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:   "statistics",
		Short: "Statistics ShardingSphere nodes collected into the registry: show (read-only)",
		Example: `  shardkeeper statistics show --conf ./conf
  shardkeeper statistics show shardingsphere --server http://127.0.0.1:8080 -o json`,
	}
	t.register(cmd)
	cmd.AddCommand(&cobra.Command{
		Use: "show [DATABASE]", Short: "Show every row, or the rows of one database", Args: args(0, 1, "[DATABASE]"),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := t.check(); err != nil {
				return err
			}
			db := ""
			if len(a) == 1 {
				db = a[0]
				if err := registry.ValidateName(db); err != nil {
					return usagef("DATABASE %q: %v", db, err)
				}
			}
			var st *statistics.Statistics
			if t.useServer() {
				c, err := t.client()
				if err != nil {
					return err
				}
				st = &statistics.Statistics{}
				if err := c.get(cmd.Context(), "/api/v1/statistics?database="+url.QueryEscape(db), st); err != nil {
					return err
				}
			} else if err := t.withRegistry(cmd.Context(), func(ctx context.Context, r registry.Repository) error {
				var err error
				st, err = statistics.Load(ctx, r, db, 0)
				return err
			}); err != nil {
				return err
			}
			tb := table{header: []string{"database", "schema", "table", "unique_key", "rows"}}
			for _, d := range st.Databases {
				for _, s := range d.Schemas {
					for _, tbl := range s.Tables {
						for _, r := range tbl.Rows {
							b, _ := json.Marshal(r.Rows)
							tb.rows = append(tb.rows, []string{d.Name, s.Name, tbl.Name, r.UniqueKey, string(b)})
						}
					}
				}
			}
			if t.output == "table" {
				for _, p := range st.Problems {
					fmt.Fprintln(cmd.ErrOrStderr(), "skipped:", p)
				}
				if st.Truncated {
					fmt.Fprintf(cmd.ErrOrStderr(), "only the first %d rows are shown\n", statistics.DefaultMaxRows)
				}
			}
			return output(cmd.OutOrStdout(), t.output, tb, st)
		},
	})
	return cmd
}
