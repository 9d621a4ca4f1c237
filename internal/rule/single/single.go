// Package single is the single rule family: LOAD and UNLOAD SINGLE TABLE,
// SET DEFAULT SINGLE TABLE STORAGE UNIT, SHOW SINGLE TABLE(S), SHOW
// UNLOADED SINGLE TABLES, SHOW DEFAULT SINGLE TABLE STORAGE UNIT and
// COUNT SINGLE RULE as upstream's SingleDistSQLStatement.g4 reads them and
// its executors check and write them. The rule's content is upstream's
// YAML: {tables: ["unit.table", "unit.schema.table", "unit.*", "*.*",
// ...], defaultDataSource: unit}. Which tables a pattern loads is read
// from the storage units themselves (rule.Database.Tables), as upstream's
// SingleTableDataNodeLoader does: tables of sharding and broadcast rules
// are not single tables.
package single

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/readwrite"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// Type is the rule's type in the registry and in configs.
const Type = "single"

// Family is the single rule family.
var Family rule.Family = family{}

type family struct{}

// LoadRule is LOAD SINGLE TABLE ref[, ref...]: each ref is "unit.table",
// "unit.schema.table", with * for every unit, schema or table ("*.*",
// "ds_0.*", "*.*.*").
type LoadRule struct{ Tables []string }

// UnloadRule is UNLOAD SINGLE TABLE t[, t...], or with All UNLOAD ALL
// SINGLE TABLES (and UNLOAD SINGLE TABLE *).
type UnloadRule struct {
	All    bool
	Tables []string
}

// SetDefaultUnit is SET DEFAULT SINGLE TABLE STORAGE UNIT = unit | RANDOM:
// Unit is "" for RANDOM.
type SetDefaultUnit struct{ Unit string }

// ShowDefaultUnit is SHOW DEFAULT SINGLE TABLE STORAGE UNIT [FROM db].
type ShowDefaultUnit struct{ Database string }

// ShowTables is SHOW SINGLE TABLES [FROM db] [LIKE 'pattern'] or SHOW
// SINGLE TABLE t [FROM db].
type ShowTables struct {
	Table    string
	Database string
	Like     *string
}

// ShowUnloaded is SHOW UNLOADED SINGLE TABLES [FROM db]: the tables of the
// units that no rule loads.
type ShowUnloaded struct{ Database string }

// Scope implements distsql.Statement: the session's database.
func (LoadRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (UnloadRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (SetDefaultUnit) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement.
func (st ShowDefaultUnit) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowTables) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowUnloaded) Scope() distsql.Scope { return distsql.Named(st.Database) }

func (family) Type() string { return Type }

func (family) Statements() string {
	return "LOAD and UNLOAD SINGLE TABLE and SET DEFAULT SINGLE TABLE STORAGE UNIT"
}

func (family) Read(p *distsql.Parser) (distsql.Statement, bool) {
	switch {
	case p.Keywords("LOAD", "SINGLE", "TABLE"):
		st := &LoadRule{Tables: []string{tableRef(p)}}
		for p.Symbol(",") {
			st.Tables = append(st.Tables, tableRef(p))
		}
		return st, true
	case p.Keywords("UNLOAD", "ALL", "SINGLE", "TABLES"):
		return &UnloadRule{All: true}, true
	case p.Keywords("UNLOAD", "SINGLE", "TABLE"):
		if p.Symbol("*") {
			return &UnloadRule{All: true}, true
		}
		return &UnloadRule{Tables: p.Names("table name")}, true
	case p.Keywords("SET", "DEFAULT", "SINGLE", "TABLE", "STORAGE", "UNIT"):
		p.ExpectSymbol("=")
		if p.Keywords("RANDOM") {
			return &SetDefaultUnit{}, true
		}
		return &SetDefaultUnit{Unit: p.IdentOrString("storage unit name")}, true
	case p.Keywords("COUNT", "SINGLE", "TABLE"), p.Keywords("COUNT", "SINGLE", "RULE"):
		return &distsql.CountRule{Type: Type, Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "SINGLE", "TABLES"):
		st := &ShowTables{Database: p.FromDatabase()}
		st.Like = p.Like()
		return st, true
	case p.Keywords("SHOW", "SINGLE", "TABLE"):
		st := &ShowTables{Table: p.Identifier("table name")}
		st.Database = p.FromDatabase()
		return st, true
	case p.Keywords("SHOW", "DEFAULT", "SINGLE", "TABLE", "STORAGE", "UNIT"):
		return &ShowDefaultUnit{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "UNLOADED", "SINGLE", "TABLES"):
		return &ShowUnloaded{Database: p.FromDatabase()}, true
	}
	return nil, false
}

// tableRef reads a LOAD SINGLE TABLE reference: name or * parts joined
// with dots, returned as typed ("*.*", "ds_0.t_order").
func tableRef(p *distsql.Parser) string {
	part := func() string {
		if p.Symbol("*") {
			return "*"
		}
		return p.Identifier("storage unit, schema or table name")
	}
	parts := []string{part()}
	for p.Symbol(".") {
		parts = append(parts, part())
	}
	if len(parts) < 2 || len(parts) > 3 {
		p.Fail("storage_unit.table or storage_unit.schema.table expected")
	}
	return strings.Join(parts, ".")
}

// Table is one single table of a database.
type Table struct {
	// Table is the table's name.
	Table string
	// Unit is the storage unit (or readwrite-splitting group) it is on.
	Unit string
	// Schema is its schema, "" for a database without schemas.
	Schema string
}

// tableMissing is upstream's SingleTableNotFoundException (10501, 42S02).
func tableMissing(name string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10501, SQLState: "42S02", Message: fmt.Sprintf("Single table '%s' does not exist.", name)}
}

// unitTables reads the tables of units through d.Tables; none without it.
func unitTables(ctx context.Context, d rule.Database, units []string) (map[string][]string, error) {
	if d.Tables == nil || len(units) == 0 {
		return map[string][]string{}, nil
	}
	return d.Tables(ctx, units)
}

// Tables lists the single tables of database d whose single rule is c
// (those its patterns load, read from the units through d.Tables), sorted
// by table then unit. ctx bounds the reads.
func Tables(ctx context.Context, d rule.Database, c map[string]any) ([]Table, error) {
	patterns := rule.List(c["tables"])
	if len(patterns) == 0 {
		return nil, nil
	}
	// Units read only through a readwrite-splitting group are not asked;
	// the group's write unit stands for the group.
	alias := map[string]string{}
	hidden := map[string]bool{}
	groups := readwrite.Groups(d.Rules[readwrite.Type])
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		gm := rule.Map(groups[g])
		alias[rule.Text(gm["writeDataSourceName"])] = g
		for _, u := range rule.List(gm["readDataSourceNames"]) {
			hidden[u] = true
		}
	}
	taken := shardedTables(d)
	var units []string
	for _, u := range d.Units {
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
	tables, err := unitTables(ctx, d, units)
	if err != nil {
		return nil, err
	}
	var out []Table
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
			if taken.has(t) {
				continue
			}
			for _, p := range patterns {
				if patternMatches(p, name, t) || patternMatches(p, u, t) {
					out = append(out, Table{Table: t, Unit: name, Schema: schema})
					break
				}
			}
		}
	}
	sortTables(out)
	return slices.Compact(out), nil
}

// Unloaded lists the tables of database d's units that no rule takes, as
// upstream's SHOW UNLOADED SINGLE TABLES: neither a pattern of c, d's
// single rule, loads them nor is a sharding or broadcast rule's table,
// read from the units through d.Tables, sorted by table then unit. ctx
// bounds the reads.
func Unloaded(ctx context.Context, d rule.Database, c map[string]any) ([]Table, error) {
	patterns := rule.List(c["tables"])
	tables, err := unitTables(ctx, d, d.Units)
	if err != nil {
		return nil, err
	}
	taken := shardedTables(d)
	var out []Table
	for _, u := range d.Units {
		for _, qt := range tables[u] {
			schema, t, ok := strings.Cut(qt, ".")
			if !ok {
				schema, t = "", qt
			}
			if taken.has(t) || slices.ContainsFunc(patterns, func(p string) bool { return patternMatches(p, u, t) }) {
				continue
			}
			out = append(out, Table{Table: t, Unit: u, Schema: schema})
		}
	}
	sortTables(out)
	return out, nil
}

func sortTables(ts []Table) {
	slices.SortFunc(ts, func(a, b Table) int {
		if c := strings.Compare(a.Table, b.Table); c != 0 {
			return c
		}
		return strings.Compare(a.Unit, b.Unit)
	})
}

// patternMatches reports whether the rule's pattern (unit.table or
// unit.schema.table, * for any) covers table on unit.
func patternMatches(pattern, unit, table string) bool {
	parts := strings.Split(pattern, ".")
	if len(parts) < 2 {
		return false
	}
	pu, pt := parts[0], parts[len(parts)-1]
	return (pu == "*" || pu == unit) && (pt == "*" || strings.EqualFold(pt, table))
}

// takenTables are the tables sharding and broadcast rules own: logic
// tables, the actual tables of their data nodes, and auto tables' actual
// tables (AutoActualTable).
type takenTables struct {
	names map[string]bool // lower case
	auto  []string        // the auto tables
}

// has reports whether table t (any case) is one of s.
func (s takenTables) has(t string) bool {
	if s.names[strings.ToLower(t)] {
		return true
	}
	return slices.ContainsFunc(s.auto, func(a string) bool { return AutoActualTable(a, t) })
}

// AutoActualTable reports whether table is an actual table of auto table
// logic, as ShardingSphere names them: logic_0, logic_1, ... (any case).
func AutoActualTable(logic, table string) bool {
	rest, ok := strings.CutPrefix(strings.ToLower(table), strings.ToLower(logic)+"_")
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}

// shardedTables are the tables the sharding and broadcast rules of d own.
func shardedTables(d rule.Database) takenTables {
	out := takenTables{names: map[string]bool{}}
	if c := d.Rules["sharding"]; c != nil {
		for _, f := range []string{"tables", "autoTables"} {
			for t, v := range rule.Map(c[f]) {
				out.names[strings.ToLower(t)] = true
				if f == "autoTables" {
					out.auto = append(out.auto, t)
				}
				for _, nodes := range rule.List(rule.Map(v)["actualDataNodes"]) {
					for _, x := range actualTables(nodes) {
						out.names[strings.ToLower(x)] = true
					}
				}
			}
		}
	}
	for _, t := range rule.List(d.Rules["broadcast"]["tables"]) {
		out.names[strings.ToLower(t)] = true
	}
	return out
}

// actualTables is the table names of the data nodes of expression nodes
// (the part after a node's last '.'), its inline expressions expanded
// (at most inline.MaxNames names in all); a node it cannot expand stands
// for itself.
func actualTables(nodes string) []string {
	var out []string
	for _, node := range inline.Split(nodes) {
		node = strings.TrimSpace(node)
		if i := inline.TopDot(node); i >= 0 {
			node = node[i+1:]
		}
		names, err := inline.Expand(node, inline.MaxNames-len(out))
		if errors.Is(err, inline.ErrTooMany) {
			return out
		}
		if err != nil {
			names = []string{node}
		}
		for _, x := range names {
			out = append(out, x[strings.LastIndexByte(x, '.')+1:])
		}
	}
	return out
}

// readwriteGroup is the readwrite-splitting group name of d, nil when d
// has none of that name.
func readwriteGroup(d rule.Database, name string) map[string]any {
	return rule.Map(readwrite.Groups(d.Rules[readwrite.Type])[name])
}

// isUnit reports whether name is a storage unit or a readwrite-splitting
// group of d, what a single table can be on.
func isUnit(d rule.Database, name string) bool {
	return slices.Contains(d.Units, name) || readwriteGroup(d, name) != nil
}

// Change: LOAD refuses a unit the database does not have (10102) and a
// named table its unit does not hold or a sharding or broadcast rule owns
// (10501); UNLOAD refuses a table that is not a single table (10501) and
// one a wildcard pattern loads (10500); SET DEFAULT refuses an unknown
// unit (10102).
func (family) Change(st distsql.Statement) rule.Change {
	switch st := st.(type) {
	case *SetDefaultUnit:
		return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			if st.Unit == "" {
				delete(c, "defaultDataSource")
				return c, nil
			}
			if !isUnit(d, st.Unit) {
				return nil, rule.MissingStorageUnits(d.Name, []string{st.Unit})
			}
			c["defaultDataSource"] = st.Unit
			return c, nil
		}
	case *LoadRule:
		return func(ctx context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			return load(ctx, d, c, st)
		}
	case *UnloadRule:
		return func(ctx context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			return unload(ctx, d, c, st)
		}
	}
	return nil
}

func load(ctx context.Context, d rule.Database, c map[string]any, st *LoadRule) (map[string]any, error) {
	current := rule.List(c["tables"])
	// Units named must exist; tables named must be on them and must not
	// be sharding or broadcast tables.
	var missing []string
	byUnit := map[string][]string{}
	for _, ref := range st.Tables {
		parts := strings.Split(ref, ".")
		u, t := parts[0], parts[len(parts)-1]
		if u != "*" && !isUnit(d, u) {
			if !slices.Contains(missing, u) {
				missing = append(missing, u)
			}
			continue
		}
		if u != "*" && t != "*" {
			byUnit[u] = append(byUnit[u], t)
		}
	}
	if len(missing) > 0 {
		return nil, rule.MissingStorageUnits(d.Name, missing)
	}
	if len(byUnit) > 0 {
		units := slices.Sorted(maps.Keys(byUnit))
		real := make([]string, len(units))
		for i, u := range units {
			real[i] = u
			if g := readwriteGroup(d, u); g != nil {
				real[i] = rule.Text(g["writeDataSourceName"])
			}
		}
		tables, err := unitTables(ctx, d, real)
		if err != nil {
			return nil, err
		}
		taken := shardedTables(d)
		for i, u := range units {
			for _, t := range byUnit[u] {
				if !slices.ContainsFunc(tables[real[i]], func(x string) bool {
					return strings.EqualFold(x, t) || strings.HasSuffix(strings.ToLower(x), "."+strings.ToLower(t))
				}) || taken.has(t) {
					return nil, tableMissing(u + "." + t)
				}
			}
		}
	}
	for _, ref := range st.Tables {
		if !slices.Contains(current, ref) {
			current = append(current, ref)
		}
	}
	c["tables"] = rule.AnyList(current)
	return c, nil
}

func unload(ctx context.Context, d rule.Database, c map[string]any, st *UnloadRule) (map[string]any, error) {
	if st.All {
		delete(c, "tables")
		return c, nil
	}
	current := rule.List(c["tables"])
	loaded, err := Tables(ctx, d, c)
	if err != nil {
		return nil, err
	}
	for _, t := range st.Tables {
		if !slices.ContainsFunc(loaded, func(x Table) bool { return strings.EqualFold(x.Table, t) }) {
			return nil, tableMissing(t)
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
				if strings.EqualFold(lt.Table, t) && patternMatches(p, lt.Unit, t) {
					return nil, &sqlerr.Error{Code: 10500, SQLState: "44000", Message: fmt.Sprintf("Invalid single rule configuration, reason is: table '%s' is loaded by '%s'; UNLOAD ALL SINGLE TABLES and LOAD the tables to keep by name.", t, p)}
				}
			}
		}
		current = kept
	}
	if len(current) == 0 {
		delete(c, "tables")
	} else {
		c["tables"] = rule.AnyList(current)
	}
	return c, nil
}

// Show answers SHOW DEFAULT SINGLE TABLE STORAGE UNIT (storage_unit_name,
// RANDOM without a default) and SHOW [UNLOADED] SINGLE TABLE(S)
// (table_name, storage_unit_name and, for a database whose units have
// schemas, schema_name), the tables read from the units.
func (family) Show(ctx context.Context, st distsql.Statement, read rule.Read) (rule.Rows, bool, error) {
	var list func(context.Context, rule.Database, map[string]any) ([]Table, error)
	keep := func(Table) bool { return true }
	switch st := st.(type) {
	case *ShowDefaultUnit:
		_, c, err := read()
		if err != nil {
			return rule.Rows{}, true, err
		}
		unit := rule.Text(c["defaultDataSource"])
		if unit == "" {
			unit = "RANDOM"
		}
		return rule.Rows{Columns: []string{"storage_unit_name"}, Rows: [][]string{{unit}}}, true, nil
	case *ShowTables:
		list = Tables
		keep = func(t Table) bool {
			return (st.Table == "" || strings.EqualFold(st.Table, t.Table)) && (st.Like == nil || rule.MatchLike(*st.Like, t.Table))
		}
	case *ShowUnloaded:
		list = Unloaded
	default:
		return rule.Rows{}, false, nil
	}
	d, c, err := read()
	if err != nil {
		return rule.Rows{}, true, err
	}
	tables, err := list(ctx, d, c)
	if err != nil {
		return rule.Rows{}, true, err
	}
	rows := rule.Rows{Columns: []string{"table_name", "storage_unit_name"}, Rows: [][]string{}}
	if d.Schemas {
		rows.Columns = append(rows.Columns, "schema_name")
	}
	for _, t := range tables {
		if !keep(t) {
			continue
		}
		row := []string{t.Table, t.Unit}
		if d.Schemas {
			row = append(row, t.Schema)
		}
		rows.Rows = append(rows.Rows, row)
	}
	return rows, true, nil
}

// Check: upstream checks nothing of a single rule beyond what its changes
// check.
func (family) Check(context.Context, rule.Database, map[string]any) ([]*sqlerr.Error, error) {
	return nil, nil
}

// Units: each pattern that names a unit uses it; a pattern that names a
// table ("ds_0.t", "ds_0.public.t") is the item t, as SHOW RULES USED
// STORAGE UNIT lists it, one with a wildcard table no item. The default
// unit is not counted (the caller adds it where it matters).
func (family) Units(_ rule.Database, c map[string]any) []rule.Use {
	var out []rule.Use
	for _, p := range rule.List(c["tables"]) {
		u, table, ok := strings.Cut(p, ".")
		if !ok || u == "*" {
			continue
		}
		use := rule.Use{Units: []string{u}}
		if !strings.Contains(table, "*") {
			use.Item = table[strings.LastIndexByte(table, '.')+1:]
		}
		out = append(out, use)
	}
	return out
}

// Defines: the rule defines no data source.
func (family) Defines(map[string]any) []string { return nil }

// Count: the single tables the rule loads, read from the units, as
// upstream's SingleCountResultRowBuilder counts them.
func (family) Count(ctx context.Context, d rule.Database, c map[string]any) ([]rule.Counted, error) {
	tables, err := Tables(ctx, d, c)
	if err != nil {
		return nil, err
	}
	return []rule.Counted{{Rule: Type, Count: len(tables)}}, nil
}

// Convert: LOAD SINGLE TABLE of the patterns and SET DEFAULT SINGLE TABLE
// STORAGE UNIT of the default unit.
func (family) Convert(c map[string]any) ([]string, bool) {
	var out []string
	if tables := rule.List(c["tables"]); len(tables) > 0 {
		out = append(out, "LOAD SINGLE TABLE "+strings.Join(tables, ", ")+";")
	}
	if u := rule.Text(c["defaultDataSource"]); u != "" {
		out = append(out, "SET DEFAULT SINGLE TABLE STORAGE UNIT = "+u+";")
	}
	return out, true
}

// Items: the patterns are one item, the default unit's name is stored as
// it is.
func (family) Items() rule.Items { return rule.Items{Raw: []string{"defaultDataSource"}} }

// Upstream: the registry holds the content as it is.
func (family) Upstream(paths.Layout, map[string]any) error { return nil }
