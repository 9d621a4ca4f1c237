package rules

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/readwrite"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// LOAD / UNLOAD SINGLE TABLE and SET DEFAULT SINGLE TABLE STORAGE UNIT:
// the single rule {tables: ["unit.table", "unit.*", "*.*", ...],
// defaultDataSource: unit} as ShardingSphere keeps it. Which tables a
// pattern loads is read from the storage units themselves, as upstream's
// SingleTableDataNodeLoader does: tables of sharding and broadcast rules
// are not single tables.

const singleType = "single"

// SingleTable is one single table of a database.
type SingleTable struct {
	// Table is the table's name.
	Table string
	// Unit is the storage unit (or readwrite-splitting group) it is on.
	Unit string
	// Schema is its schema, "" for a database without schemas.
	Schema string
}

// singleTableMissing is upstream's SingleTableNotFoundException (10501,
// 42S02).
func singleTableMissing(name string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10501, SQLState: "42S02", Message: fmt.Sprintf("Single table '%s' does not exist.", name)}
}

// unitTables returns the tables of each storage unit of d, read from the
// unit (introspect on a database of that one unit; nil means
// datasource.Introspect), as "table" or, for a database with schemas
// (PostgreSQL), "schema.table". A unit it cannot read is upstream's 10502.
func unitTables(ctx context.Context, introspect Introspector, d *metadata.Database, units []string) (map[string][]string, error) {
	if introspect == nil {
		introspect = datasource.Introspect
	}
	out := map[string][]string{}
	for _, u := range units {
		schemas, err := introspect(ctx, config.Database{Name: d.Name, DataSources: map[string]config.DataSource{u: d.Units[u]}})
		if err != nil {
			return nil, &sqlerr.Error{Code: 10502, SQLState: "HY000", Message: fmt.Sprintf("Can not load table with database name '%s' and data source name '%s', reason is: %v", d.Name, u, err)}
		}
		withSchema := HasSchemas(d.Units[u])
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

// SingleTables lists the single tables of database d (those its single
// rule's patterns load, read from the units through introspect; nil means
// datasource.Introspect), sorted by table then unit. ctx bounds the
// reads.
func SingleTables(ctx context.Context, introspect Introspector, d *metadata.Database) ([]SingleTable, error) {
	patterns := rule.List(d.Rules[singleType].Content["tables"])
	if len(patterns) == 0 {
		return nil, nil
	}
	// Units read only through a readwrite-splitting group are not asked;
	// the group's write unit stands for the group.
	alias := map[string]string{}
	hidden := map[string]bool{}
	if r, ok := d.Rules[readwrite.Type]; ok {
		groups := ReadwriteGroups(r.Content)
		for _, g := range slices.Sorted(maps.Keys(groups)) {
			gm := rule.Map(groups[g])
			alias[rule.Text(gm["writeDataSourceName"])] = g
			for _, u := range rule.List(gm["readDataSourceNames"]) {
				hidden[u] = true
			}
		}
	}
	taken := shardedTables(d)
	var units []string
	for _, u := range slices.Sorted(maps.Keys(d.Units)) {
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
	tables, err := unitTables(ctx, introspect, d, units)
	if err != nil {
		return nil, err
	}
	var out []SingleTable
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
				if singlePatternMatches(p, name, t) || singlePatternMatches(p, u, t) {
					out = append(out, SingleTable{Table: t, Unit: name, Schema: schema})
					break
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b SingleTable) int {
		if c := strings.Compare(a.Table, b.Table); c != 0 {
			return c
		}
		return strings.Compare(a.Unit, b.Unit)
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

// shardedTables are the tables sharding and broadcast rules of d own.
func shardedTables(d *metadata.Database) takenTables {
	out := takenTables{names: map[string]bool{}}
	if r, ok := d.Rules["sharding"]; ok {
		for _, f := range []string{"tables", "autoTables"} {
			for t, v := range rule.Map(r.Content[f]) {
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
	if r, ok := d.Rules["broadcast"]; ok {
		for _, t := range rule.List(r.Content["tables"]) {
			out.names[strings.ToLower(t)] = true
		}
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

// HasSchemas reports whether a unit's database type has schemas, for
// which upstream shows a single table's schema_name.
func HasSchemas(ds config.DataSource) bool {
	return strings.HasPrefix(ds.URL, "jdbc:postgresql:") || strings.HasPrefix(ds.URL, "jdbc:opengauss:")
}

// readwriteGroup is readwrite-splitting group name of d, nil when d has
// none of that name.
func readwriteGroup(d *metadata.Database, name string) map[string]any {
	return rule.Map(ReadwriteGroups(d.Rules[readwrite.Type].Content)[name])
}

// isUnit reports whether name is a storage unit or a readwrite-splitting
// group of d, what a single table can be on.
func isUnit(d *metadata.Database, name string) bool {
	_, ok := d.Units[name]
	return ok || readwriteGroup(d, name) != nil
}

func setDefaultSingleUnit(st *distsql.SetDefaultSingleTableStorageUnit) databaseChange {
	return func(_ context.Context, d *metadata.Database, c map[string]any) (map[string]any, error) {
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
}

func loadSingleTable(st *distsql.LoadSingleTable, introspect Introspector) databaseChange {
	return func(ctx context.Context, d *metadata.Database, c map[string]any) (map[string]any, error) {
		current := rule.List(c["tables"])
		// Units named must exist; tables named must be on them and must
		// not be sharding or broadcast tables.
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
			tables, err := unitTables(ctx, introspect, d, real)
			if err != nil {
				return nil, err
			}
			taken := shardedTables(d)
			for i, u := range units {
				for _, t := range byUnit[u] {
					if !slices.ContainsFunc(tables[real[i]], func(x string) bool {
						return strings.EqualFold(x, t) || strings.HasSuffix(strings.ToLower(x), "."+strings.ToLower(t))
					}) || taken.has(t) {
						return nil, singleTableMissing(u + "." + t)
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
}

func unloadSingleTable(st *distsql.UnloadSingleTable, introspect Introspector) databaseChange {
	return func(ctx context.Context, d *metadata.Database, c map[string]any) (map[string]any, error) {
		if st.All {
			delete(c, "tables")
			return c, nil
		}
		current := rule.List(c["tables"])
		loaded, err := SingleTables(ctx, introspect, d)
		if err != nil {
			return nil, err
		}
		for _, t := range st.Tables {
			if !slices.ContainsFunc(loaded, func(x SingleTable) bool { return strings.EqualFold(x.Table, t) }) {
				return nil, singleTableMissing(t)
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
					if strings.EqualFold(lt.Table, t) && singlePatternMatches(p, lt.Unit, t) {
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
}
