package console

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/sqlerr"

	"github.com/shardkeeper/shardkeeper/internal/catalog"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/single"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

// logicTables are the tables a client of database d sees, as a Proxy
// shows them (SHOW TABLES, the catalog): the sharding rule's tables and
// auto tables, the broadcast tables, the single tables the single rule
// loads (named, or by a wildcard every persisted table no other rule
// takes) and the views, in name order. A logic table's columns are the
// persisted ones of the table of its name, else of its first actual table.
// The physical tables of sharding tables are not listed (SHOW SHARDING
// TABLE NODES shows them).
func logicTables(d *metadata.Database) []catalog.Table {
	persisted := map[string]datasource.Table{} // lower-case name
	views := map[string]bool{}
	for _, sc := range d.Schemas {
		for n, t := range sc.Tables {
			if t.Name == "" {
				t.Name = n
			}
			persisted[strings.ToLower(n)] = t
		}
		for n := range sc.Views {
			views[n] = true
		}
	}
	out := map[string]catalog.Table{} // by lower-case name
	taken := map[string]bool{}        // physical tables of sharding tables
	add := func(name string, actual []string, view bool) {
		k := strings.ToLower(name)
		if _, ok := out[k]; ok {
			return
		}
		t := catalog.Table{Name: name, View: view}
		src, ok := persisted[k]
		for _, a := range actual {
			if ok {
				break
			}
			src, ok = persisted[strings.ToLower(a)]
		}
		if ok {
			t.Columns, t.Indexes = src.Columns, src.Indexes
		}
		out[k] = t
	}
	if r, ok := d.Rules["sharding"]; ok {
		tables := rule.Map(r.Content["tables"])
		// At most inline.MaxRuleNames nodes are built in all, as a rule
		// another node wrote may stand for more (see actualTables).
		left := inline.MaxRuleNames
		names := slices.Sorted(maps.Keys(persisted))
		for _, name := range sortedKeys(tables) {
			actual := actualTables(rule.Text(rule.Map(tables[name])["actualDataNodes"]), &left, names)
			for _, a := range actual {
				taken[strings.ToLower(a)] = true
			}
			add(name, actual, false)
		}
		auto := rule.Map(r.Content["autoTables"])
		for _, name := range sortedKeys(auto) {
			var actual []string
			for k := range persisted {
				if single.AutoActualTable(name, k) {
					actual = append(actual, k)
					taken[k] = true
				}
			}
			slices.Sort(actual)
			add(name, actual, false)
		}
	}
	if r, ok := d.Rules["broadcast"]; ok {
		for _, name := range rule.List(r.Content["tables"]) {
			add(name, nil, false)
			taken[strings.ToLower(name)] = true
		}
	}
	if r, ok := d.Rules[single.Type]; ok {
		wildcard := false
		for _, p := range rule.List(r.Content["tables"]) {
			name := p[strings.LastIndexByte(p, '.')+1:]
			if name == "*" {
				wildcard = true
				continue
			}
			if !taken[strings.ToLower(name)] {
				add(name, nil, false)
			}
		}
		if wildcard {
			for k, t := range persisted {
				if !taken[k] {
					add(t.Name, nil, false)
				}
			}
		}
	}
	for n := range views {
		add(n, nil, true)
	}
	list := make([]catalog.Table, 0, len(out))
	for _, t := range out {
		list = append(list, t)
	}
	slices.SortFunc(list, func(a, b catalog.Table) int { return strings.Compare(a.Name, b.Name) })
	return list
}

// actualTables is the actual tables of the data nodes expr stands for,
// in order, building at most *left of its nodes and taking those it builds
// off *left. When expr stands for more (or for more than inline.MaxNames
// alone), none is built: the actual tables are then those of persisted
// (lower-case names) that its nodes' table parts could name
// (inline.Pattern), which keeps the cost of a rule beyond the bounds
// linear in its length and the number of persisted tables. An expression
// that cannot be read has none.
func actualTables(expr string, left *int, persisted []string) []string {
	nodes, err := inline.Expand(expr, min(inline.MaxNames, *left))
	if err == nil {
		*left -= len(nodes)
		for i, n := range nodes {
			nodes[i] = n[strings.LastIndexByte(n, '.')+1:]
		}
		return nodes
	}
	if !errors.Is(err, inline.ErrTooMany) {
		return nil
	}
	parts := inline.Split(expr)
	for i, node := range parts {
		node = strings.TrimSpace(node)
		parts[i] = node[inline.TopDot(node)+1:]
	}
	p, err := inline.Pattern(strings.ToLower(strings.Join(parts, ",")))
	if err != nil {
		return nil
	}
	var out []string
	for _, name := range persisted {
		if p.MatchString(name) {
			out = append(out, name)
		}
	}
	return out
}

// showLogicalTables is upstream's SHOW [FULL] LOGICAL TABLES: the logic
// tables (logicTables) with their type under FULL and, for a database
// whose units have schemas (PostgreSQL), schema_name.
func (e *Engine) showLogicalTables(_ context.Context, s *Session, st *distsql.ShowLogicalTables) (*Result, error) {
	d, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	withSchema := false
	for _, u := range d.Units {
		withSchema = rules.HasSchemas(u)
		break
	}
	res := &Result{Columns: textColumns("table_name"), Rows: [][]*string{}}
	if st.Full {
		res.Columns = append(res.Columns, Column{Name: "table_type"})
	}
	if withSchema {
		res.Columns = append(res.Columns, Column{Name: "schema_name"})
	}
	for _, t := range logicTables(d) {
		if st.Like != nil && !matchLike(*st.Like, t.Name) {
			continue
		}
		row := []*string{str(t.Name)}
		if st.Full {
			typ := "TABLE"
			if t.View {
				typ = "VIEW"
			}
			row = append(row, str(typ))
		}
		if withSchema {
			row = append(row, str("public"))
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// noEngine answers a statement that needs a SQL engine or migration,
// naming it: UnsupportedSQLOperationException (30001, 0A000).
func noEngine(st *distsql.NoEngine) *sqlerr.Error {
	if st.Migration {
		return unsupported(st.Statement + ": this shardkeeper node runs no data migration or streaming; run it on a ShardingSphere-Proxy")
	}
	return unsupported(st.Statement + ": this shardkeeper node has no SQL engine; run it on a ShardingSphere-Proxy")
}
