package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/registry"
)

// databaseSummary is one row of databases list (the API's
// GET /api/v1/databases).
type databaseSummary struct {
	Name   string `json:"name"`
	Units  int    `json:"units"`
	Tables int    `json:"tables"`
}

// databaseView is databases show (the API's GET /api/v1/databases/{db}):
// units and rules with their secrets masked, and the schemas' tables and
// views.
type databaseView struct {
	Name    string                    `json:"name"`
	Units   map[string]map[string]any `json:"units"`
	Rules   []any                     `json:"rules"`
	Schemas map[string]schemaView     `json:"schemas"`
}

type schemaView struct {
	Tables nameList `json:"tables"`
	Views  nameList `json:"views"`
}

// nameList is a list of names that also reads a list of objects with a
// "name" field or a map keyed by name (shapes an API may use).
type nameList []string

func (l *nameList) UnmarshalJSON(b []byte) error {
	var names []string
	if json.Unmarshal(b, &names) == nil {
		*l = names
		return nil
	}
	var objs []struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(b, &objs) == nil {
		for _, o := range objs {
			names = append(names, o.Name)
		}
		*l = names
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("want a list of names, of objects with a name, or a map by name: %w", err)
	}
	*l = sortedKeys(m)
	return nil
}

func newDatabasesCommand() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:     "databases",
		Aliases: []string{"database", "db"},
		Short:   "Logical databases: list, show (storage units, rules, tables), create, drop",
		Example: `  shardkeeper databases list --conf ./conf
  shardkeeper databases show sharding_db --server http://127.0.0.1:8080 -o yaml`,
	}
	t.register(cmd)
	cmd.PersistentFlags().BoolVar(&t.reg.showSecrets, "show-secrets", false, showSecretsUsage)
	cmd.AddCommand(
		&cobra.Command{
			Use: "list", Aliases: []string{"ls"}, Short: "List the logical databases", Args: args(0, 0, ""),
			RunE: func(cmd *cobra.Command, _ []string) error {
				if err := t.check(); err != nil {
					return err
				}
				dbs, err := listDatabases(cmd.Context(), t)
				if err != nil {
					return err
				}
				tb := table{header: []string{"name", "storage_units", "tables"}}
				for _, d := range dbs {
					tb.rows = append(tb.rows, []string{d.Name, strconv.Itoa(d.Units), strconv.Itoa(d.Tables)})
				}
				return output(cmd.OutOrStdout(), t.output, tb, map[string]any{"databases": dbs})
			},
		},
		&cobra.Command{
			Use: "show DATABASE", Short: "Show one logical database: storage units, rules, tables (secrets masked)",
			Args: args(1, 1, "DATABASE"),
			ValidArgsFunction: func(cmd *cobra.Command, a []string, _ string) ([]string, cobra.ShellCompDirective) {
				if len(a) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				dbs, err := listDatabases(cmd.Context(), t)
				if err != nil {
					return nil, cobra.ShellCompDirectiveError
				}
				var names []string
				for _, d := range dbs {
					names = append(names, d.Name)
				}
				return names, cobra.ShellCompDirectiveNoFileComp
			},
			RunE: func(cmd *cobra.Command, a []string) error {
				if err := t.check(); err != nil {
					return err
				}
				view, err := showDatabase(cmd.Context(), t, a[0])
				if err != nil {
					return err
				}
				return outputSections(cmd.OutOrStdout(), t.output, databaseSections(view), view)
			},
		},
		databaseCreateCommand(t),
		databaseDropCommand(t),
	)
	return cmd
}

// loadSnapshot reads the whole metadata once from the registry.
func loadSnapshot(ctx context.Context, t *target) (*metadata.Snapshot, error) {
	var snap *metadata.Snapshot
	err := t.withRegistry(ctx, func(ctx context.Context, r registry.Repository) error {
		store, err := metadata.Load(ctx, r, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			return err
		}
		snap = store.Current()
		return nil
	})
	return snap, err
}

func listDatabases(ctx context.Context, t *target) ([]databaseSummary, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if t.useServer() {
		c, err := t.client()
		if err != nil {
			return nil, err
		}
		// units and tables are counts; lists or maps are counted.
		var resp struct {
			Databases []struct {
				Name   string `json:"name"`
				Units  any    `json:"units"`
				Tables any    `json:"tables"`
			} `json:"databases"`
		}
		if err := c.get(ctx, "/api/v1/databases", &resp); err != nil {
			return nil, err
		}
		out := make([]databaseSummary, 0, len(resp.Databases))
		for _, d := range resp.Databases {
			out = append(out, databaseSummary{Name: d.Name, Units: count(d.Units), Tables: count(d.Tables)})
		}
		return out, nil
	}
	snap, err := loadSnapshot(ctx, t)
	if err != nil {
		return nil, err
	}
	return summaries(snap), nil
}

func summaries(snap *metadata.Snapshot) []databaseSummary {
	out := make([]databaseSummary, 0, len(snap.Databases))
	for _, name := range sortedKeys(snap.Databases) {
		d := snap.Databases[name]
		tables := 0
		for _, s := range d.Schemas {
			tables += len(s.Tables)
		}
		out = append(out, databaseSummary{Name: name, Units: len(d.Units), Tables: tables})
	}
	return out
}

func showDatabase(ctx context.Context, t *target, name string) (databaseView, error) {
	if err := registry.ValidateName(name); err != nil {
		return databaseView{}, usagef("DATABASE %q: %v", name, err)
	}
	if t.useServer() {
		if t.reg.showSecrets {
			return databaseView{}, usagef("--show-secrets reads the registry directly (--conf or the registry flags): the HTTP API never returns secrets")
		}
		c, err := t.client()
		if err != nil {
			return databaseView{}, err
		}
		var v databaseView
		err = c.get(ctx, "/api/v1/databases/"+url.PathEscape(name), &v)
		return v, err
	}
	snap, err := loadSnapshot(ctx, t)
	if err != nil {
		return databaseView{}, err
	}
	d := snap.Databases[name]
	if d == nil {
		return databaseView{}, fmt.Errorf("Unknown database '%s'. (see 'shardkeeper databases list')", name)
	}
	return viewOf(d, t.reg.showSecrets), nil
}

// viewOf builds the show view of d, its secrets masked (see package
// redact) unless showSecrets.
func viewOf(d *metadata.Database, showSecrets bool) databaseView {
	mask := redact.Map
	if showSecrets {
		mask = func(m map[string]any) map[string]any { return m }
	}
	v := databaseView{Name: d.Name, Units: map[string]map[string]any{}, Rules: []any{}, Schemas: map[string]schemaView{}}
	for name, ds := range d.Units {
		m := ds.Map()
		if ds.Password == "" {
			delete(m, "password")
		}
		v.Units[name] = mask(m)
	}
	for _, typ := range sortedKeys(d.Rules) {
		v.Rules = append(v.Rules, map[string]any{"type": typ, "content": mask(d.Rules[typ].Content)})
	}
	for name, s := range d.Schemas {
		sv := schemaView{Tables: sortedKeys(s.Tables), Views: sortedKeys(s.Views)}
		v.Schemas[name] = sv
	}
	return v
}

// databaseSections renders a databaseView as ShardingSphere's SHOW
// STORAGE UNITS, SHOW RULES and SHOW TABLES would.
func databaseSections(v databaseView) []section {
	units := table{header: []string{"name", "type", "host", "port", "db", "max_pool_size", "min_pool_size", "read_only"}}
	for _, name := range sortedKeys(v.Units) {
		m := v.Units[name]
		typ, host, port, db := "", "", "", ""
		if u, ok := m["url"].(string); ok {
			if tg, err := datasource.Translate(config.DataSource{URL: u}); err == nil {
				typ, db = databaseType(tg.Dialect), tg.Database
				host = tg.Host
				if h, p, ok := strings.Cut(tg.Host, ":"); ok && typ != "SQLite" {
					host, port = h, p
				}
			}
		}
		units.rows = append(units.rows, []string{name, typ, host, port, db, str(m["maxPoolSize"]), str(m["minPoolSize"]), orDefault(str(m["readOnly"]), "false")})
	}
	rules := table{header: []string{"rule_type"}}
	for _, r := range v.Rules {
		if m, ok := r.(map[string]any); ok {
			r = m["type"]
		}
		rules.rows = append(rules.rows, []string{str(r)})
	}
	tables := table{header: []string{"schema_name", "table_name", "table_type"}}
	for _, s := range sortedKeys(v.Schemas) {
		for _, tb := range v.Schemas[s].Tables {
			tables.rows = append(tables.rows, []string{s, tb, "TABLE"})
		}
		for _, vw := range v.Schemas[s].Views {
			tables.rows = append(tables.rows, []string{s, vw, "VIEW"})
		}
	}
	return []section{
		{title: "storage units:", table: units},
		{title: "rules:", table: rules},
		{title: "tables:", table: tables},
	}
}

// databaseType names a dialect as SHOW STORAGE UNITS' type column does.
func databaseType(dialect string) string {
	switch strings.ToLower(dialect) {
	case "postgresql":
		return "PostgreSQL"
	case "mysql":
		return "MySQL"
	case "mariadb":
		return "MariaDB"
	case "sqlite":
		return "SQLite"
	}
	return dialect
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

// count reads a count the API may give as a number, a list or a map.
func count(v any) int {
	switch x := v.(type) {
	case json.Number:
		n, _ := x.Int64()
		return int(n)
	case float64:
		return int(x)
	case []any:
		return len(x)
	case map[string]any:
		return len(x)
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
