package console

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

// LOAD / UNLOAD SINGLE TABLE, SET / SHOW DEFAULT SINGLE TABLE STORAGE UNIT,
// SHOW SINGLE TABLE(S): the single rule {tables: ["unit.table", "unit.*",
// "*.*", ...], defaultDataSource: unit} as ShardingSphere keeps it. Which
// tables a pattern loads is read from the storage units themselves, as
// upstream's SingleTableDataNodeLoader does: tables of sharding and
// broadcast rules are not single tables.

// singleTable is one single table, the unit (or readwrite-splitting
// group) it is on and its schema ("" for a database without schemas).
type singleTable struct{ table, unit, schema string }

// singleRule returns a copy of the database's single rule content.
func singleRule(db *metadata.Database) map[string]any {
	out := map[string]any{}
	for k, v := range db.Rules["single"].Content {
		out[k] = v
	}
	return out
}

// unitTables returns the tables of each storage unit of db, read from the
// unit (Deps.Introspect on a database of that one unit), as
// "table" or, for a database with schemas (PostgreSQL), "schema.table".
func (e *Engine) unitTables(ctx context.Context, db *metadata.Database, units []string) (map[string][]string, error) {
	introspect := e.d.Introspect
	if introspect == nil {
		introspect = datasource.Introspect
	}
	out := map[string][]string{}
	for _, u := range units {
		schemas, err := introspect(ctx, config.Database{Name: db.Name, DataSources: map[string]config.DataSource{u: db.Units[u]}})
		if err != nil {
			return nil, &Error{Code: 10502, SQLState: "HY000", Message: fmt.Sprintf("Can not load table with database name '%s' and data source name '%s', reason is: %v", db.Name, u, err)}
		}
		withSchema := hasSchemas(db.Units[u])
		for _, s := range schemas {
			for t := range s.Tables {
				if withSchema {
					t = s.Name + "." + t
				}
				out[u] = append(out[u], t)
			}
		}
		slices.Sort(out[u])
	}
	return out, nil
}

// singleTables lists the single tables of db, sorted by table then unit.
func (e *Engine) singleTables(ctx context.Context, db *metadata.Database) ([]singleTable, error) {
	patterns := asList(db.Rules["single"].Content["tables"])
	if len(patterns) == 0 {
		return nil, nil
	}
	// Units read only through a readwrite-splitting group are not asked;
	// the group's write unit stands for the group.
	alias := map[string]string{}
	hidden := map[string]bool{}
	if r, ok := db.Rules["readwrite_splitting"]; ok {
		groups := readwriteGroups(r.Content)
		for _, g := range sortedKeys(groups) {
			gm := rules.Map(groups[g])
			alias[rules.Text(gm["writeDataSourceName"])] = g
			for _, u := range asList(gm["readDataSourceNames"]) {
				hidden[u] = true
			}
		}
	}
	taken := shardedTables(db)
	var units []string
	for _, u := range slices.Sorted(maps.Keys(db.Units)) {
		if hidden[u] && alias[u] == "" {
			continue
		}
		for _, p := range patterns {
			if pu, _, _ := strings.Cut(p, "."); pu == "*" || pu == u || pu == alias[u] {
				units = append(units, u)
				break
			}
		}
	}
	tables, err := e.unitTables(ctx, db, units)
	if err != nil {
		return nil, err
	}
	var out []singleTable
	for _, u := range units {
		name := u
		if alias[u] != "" {
			name = alias[u]
		}
		for _, qt := range tables[u] {
			schema, t, ok := strings.Cut(qt, ".")
			if !ok {
				schema, t = "", qt
			}
			if taken[strings.ToLower(t)] {
				continue
			}
			for _, p := range patterns {
				if singlePatternMatches(p, name, t) || singlePatternMatches(p, u, t) {
					out = append(out, singleTable{table: t, unit: name, schema: schema})
					break
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b singleTable) int {
		if c := strings.Compare(a.table, b.table); c != 0 {
			return c
		}
		return strings.Compare(a.unit, b.unit)
	})
	return slices.Compact(out), nil
}

// singlePatternMatches reports whether the single rule's pattern (unit.table
// or unit.schema.table, * for any) covers table on unit.
func singlePatternMatches(pattern, unit, table string) bool {
	parts := strings.Split(pattern, ".")
	if len(parts) < 2 {
		return false
	}
	pu, pt := parts[0], parts[len(parts)-1]
	return (pu == "*" || pu == unit) && (pt == "*" || strings.EqualFold(pt, table))
}

// shardedTables are the lower-case names of the tables sharding and
// broadcast rules own: logic tables and the actual tables of their data
// nodes.
func shardedTables(db *metadata.Database) map[string]bool {
	out := map[string]bool{}
	if r, ok := db.Rules["sharding"]; ok {
		for _, f := range []string{"tables", "autoTables"} {
			tables := rules.Map(r.Content[f])
			for t, v := range tables {
				out[strings.ToLower(t)] = true
				for _, nodes := range asList(rules.Map(v)["actualDataNodes"]) {
					for _, node := range strings.Split(nodes, ",") {
						for _, x := range expandInline(strings.TrimSpace(node), maxInlineExpansion) {
							if i := strings.LastIndexByte(x, '.'); i >= 0 {
								out[strings.ToLower(x[i+1:])] = true
							}
						}
					}
				}
			}
		}
	}
	if r, ok := db.Rules["broadcast"]; ok {
		for _, t := range asList(r.Content["tables"]) {
			out[strings.ToLower(t)] = true
		}
	}
	return out
}

// hasSchemas reports whether a unit's database type has schemas, for
// which upstream shows a single table's schema_name.
func hasSchemas(ds config.DataSource) bool {
	return strings.HasPrefix(ds.URL, "jdbc:postgresql:") || strings.HasPrefix(ds.URL, "jdbc:opengauss:")
}

func (e *Engine) showSingleTables(ctx context.Context, s *Session, st *distsql.ShowSingleTables) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	tables, err := e.singleTables(ctx, db)
	if err != nil {
		return nil, err
	}
	// upstream adds schema_name for a database type with schemas.
	withSchema := false
	for _, u := range db.Units {
		withSchema = hasSchemas(u)
		break
	}
	res := &Result{Columns: textColumns("table_name", "storage_unit_name"), Rows: [][]*string{}}
	if withSchema {
		res.Columns = textColumns("table_name", "storage_unit_name", "schema_name")
	}
	for _, t := range tables {
		if st.Table != "" && !strings.EqualFold(st.Table, t.table) {
			continue
		}
		if st.Like != nil && !matchLike(*st.Like, t.table) {
			continue
		}
		row := []*string{str(t.table), str(t.unit)}
		if withSchema {
			row = append(row, str(t.schema))
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

func (e *Engine) showDefaultSingleTableStorageUnit(_ context.Context, s *Session, st *distsql.ShowDefaultSingleTableStorageUnit) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	unit := rules.Text(db.Rules["single"].Content["defaultDataSource"])
	if unit == "" {
		unit = "RANDOM"
	}
	return &Result{Columns: textColumns("storage_unit_name"), Rows: [][]*string{{str(unit)}}}, nil
}

func (e *Engine) setDefaultSingleTableStorageUnit(ctx context.Context, s *Session, st *distsql.SetDefaultSingleTableStorageUnit) (*Result, error) {
	db, err := e.database(s, "")
	if err != nil {
		return nil, err
	}
	content := singleRule(db)
	if st.Unit == "" {
		delete(content, "defaultDataSource")
	} else {
		if _, ok := db.Units[st.Unit]; !ok && !isReadwriteGroup(db, st.Unit) {
			return nil, &Error{Code: 10102, SQLState: "44000", Message: fmt.Sprintf("Storage units '[%s]' do not exist in database '%s'.", st.Unit, db.Name)}
		}
		content["defaultDataSource"] = st.Unit
	}
	return e.commitDatabaseRule(ctx, s, db, config.Rule{Type: "single", Content: content})
}

func isReadwriteGroup(db *metadata.Database, name string) bool {
	_, ok := readwriteGroups(db.Rules["readwrite_splitting"].Content)[name]
	return ok
}

func (e *Engine) loadSingleTable(ctx context.Context, s *Session, st *distsql.LoadSingleTable) (*Result, error) {
	db, err := e.database(s, "")
	if err != nil {
		return nil, err
	}
	content := singleRule(db)
	current := asList(content["tables"])
	// Units named must exist; tables named must be on them and must not
	// be sharding or broadcast tables.
	var missing []string
	byUnit := map[string][]string{}
	for _, ref := range st.Tables {
		parts := strings.Split(ref, ".")
		u, t := parts[0], parts[len(parts)-1]
		if u != "*" {
			if _, ok := db.Units[u]; !ok && !isReadwriteGroup(db, u) {
				if !slices.Contains(missing, u) {
					missing = append(missing, u)
				}
				continue
			}
		}
		if u != "*" && t != "*" {
			byUnit[u] = append(byUnit[u], t)
		}
	}
	if len(missing) > 0 {
		return nil, &Error{Code: 10102, SQLState: "44000", Message: fmt.Sprintf("Storage units '[%s]' do not exist in database '%s'.", strings.Join(missing, ", "), db.Name)}
	}
	if len(byUnit) > 0 {
		units := slices.Sorted(maps.Keys(byUnit))
		real := make([]string, len(units))
		for i, u := range units {
			real[i] = u
			if isReadwriteGroup(db, u) {
				real[i] = rules.Text(rules.Map(readwriteGroups(db.Rules["readwrite_splitting"].Content)[u])["writeDataSourceName"])
			}
		}
		tables, err := e.unitTables(ctx, db, real)
		if err != nil {
			return nil, err
		}
		taken := shardedTables(db)
		for i, u := range units {
			for _, t := range byUnit[u] {
				if !slices.ContainsFunc(tables[real[i]], func(x string) bool {
					return strings.EqualFold(x, t) || strings.HasSuffix(strings.ToLower(x), "."+strings.ToLower(t))
				}) || taken[strings.ToLower(t)] {
					return nil, &Error{Code: 10501, SQLState: "42S02", Message: fmt.Sprintf("Single table '%s' does not exist.", u+"."+t)}
				}
			}
		}
	}
	for _, ref := range st.Tables {
		if !slices.Contains(current, ref) {
			current = append(current, ref)
		}
	}
	content["tables"] = toAnyList(current)
	return e.commitDatabaseRule(ctx, s, db, config.Rule{Type: "single", Content: content})
}

func (e *Engine) unloadSingleTable(ctx context.Context, s *Session, st *distsql.UnloadSingleTable) (*Result, error) {
	db, err := e.database(s, "")
	if err != nil {
		return nil, err
	}
	content := singleRule(db)
	current := asList(content["tables"])
	if st.All {
		delete(content, "tables")
		return e.commitDatabaseRule(ctx, s, db, config.Rule{Type: "single", Content: content})
	}
	loaded, err := e.singleTables(ctx, db)
	if err != nil {
		return nil, err
	}
	for _, t := range st.Tables {
		if !slices.ContainsFunc(loaded, func(x singleTable) bool { return strings.EqualFold(x.table, t) }) {
			return nil, &Error{Code: 10501, SQLState: "42S02", Message: fmt.Sprintf("Single table '%s' does not exist.", t)}
		}
		// Only tables loaded by name can be unloaded one by one: a
		// wildcard that loads t stays, and says so.
		kept := current[:0:0]
		for _, p := range current {
			parts := strings.Split(p, ".")
			if strings.EqualFold(parts[len(parts)-1], t) {
				continue
			}
			kept = append(kept, p)
		}
		for _, p := range kept {
			for _, lt := range loaded {
				if strings.EqualFold(lt.table, t) && singlePatternMatches(p, lt.unit, t) {
					return nil, &Error{Code: 10500, SQLState: "44000", Message: fmt.Sprintf("Invalid single rule configuration, reason is: table '%s' is loaded by '%s'; UNLOAD ALL SINGLE TABLES and LOAD the tables to keep by name.", t, p)}
				}
			}
		}
		current = kept
	}
	content["tables"] = toAnyList(current)
	if len(current) == 0 {
		delete(content, "tables")
	}
	return e.commitDatabaseRule(ctx, s, db, config.Rule{Type: "single", Content: content})
}

func toAnyList(in []string) []any {
	out := make([]any, len(in))
	for i, s := range in {
		out[i] = s
	}
	return out
}
