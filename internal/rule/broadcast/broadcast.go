// Package broadcast is the broadcast rule family: CREATE and DROP
// BROADCAST TABLE RULE, SHOW BROADCAST TABLE RULES and COUNT BROADCAST
// RULE as upstream's BroadcastDistSQLStatement.g4 reads them and its
// executors check and write them. The rule's content is upstream's YAML:
// tables: [t, ...]. Broadcast tables live on every storage unit.
package broadcast

import (
	"context"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// Family is the broadcast rule family.
var Family rule.Family = family{}

type family struct{}

// CreateRule is CREATE BROADCAST TABLE RULE [IF NOT EXISTS] t, ...
type CreateRule struct {
	IfNotExists bool
	Tables      []string
}

// DropRule is DROP BROADCAST TABLE RULE [IF EXISTS] t, ...
type DropRule struct {
	IfExists bool
	Tables   []string
}

// ShowRules is SHOW BROADCAST TABLE RULES [FROM db].
type ShowRules struct{ Database string }

// Scope implements distsql.Statement: the session's database.
func (CreateRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (DropRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement.
func (st ShowRules) Scope() distsql.Scope { return distsql.Named(st.Database) }

func (family) Type() string { return "broadcast" }

func (family) Statements() string { return "CREATE and DROP BROADCAST TABLE RULE" }

func (family) Read(p *distsql.Parser) (distsql.Statement, bool) {
	switch {
	case p.Keywords("CREATE", "BROADCAST", "TABLE", "RULE"):
		st := &CreateRule{IfNotExists: p.IfNotExists()}
		st.Tables = p.Names("table name")
		return st, true
	case p.Keywords("DROP", "BROADCAST", "TABLE", "RULE"):
		st := &DropRule{IfExists: p.IfExists()}
		st.Tables = p.Names("table name")
		return st, true
	case p.Keywords("SHOW", "BROADCAST", "TABLE", "RULES"):
		return &ShowRules{Database: p.FromDatabase()}, true
	case p.Keywords("COUNT", "BROADCAST", "RULE"):
		return &distsql.CountRule{Type: "broadcast", Database: p.FromDatabase()}, true
	}
	return nil, false
}

// named matches the tables in any case, as upstream's executors do.
var named = rule.Named{RuleType: "broadcast", Label: "Broadcast", Case: rule.FoldCase}

// Change: CREATE refuses a table the rule has (DuplicateRuleException,
// 10204) unless IF NOT EXISTS and appends the others; DROP refuses one it
// does not have (MissingRequiredRuleException, 10202) unless IF EXISTS.
// A table named twice in one statement counts once.
func (family) Change(st distsql.Statement) rule.Change {
	switch st := st.(type) {
	case *CreateRule:
		return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			list := rule.List(c["tables"])
			todo, err := named.Create(d.Name, asItems(list), once(st.Tables), st.IfNotExists)
			if err != nil {
				return nil, err
			}
			c["tables"] = rule.AnyList(append(list, todo...))
			return rule.Prune(c), nil
		}
	case *DropRule:
		return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			list := rule.List(c["tables"])
			keys, err := named.Drop(d.Name, asItems(list), st.Tables, st.IfExists)
			if err != nil || len(keys) == 0 {
				return c, err
			}
			var left []string
			for _, t := range list {
				if !contains(keys, t) {
					left = append(left, t)
				}
			}
			c["tables"] = rule.AnyList(left)
			return rule.Prune(c), nil
		}
	}
	return nil
}

// asItems is the table list as named items.
func asItems(list []string) map[string]any {
	m := make(map[string]any, len(list))
	for _, t := range list {
		m[t] = true
	}
	return m
}

// once is names with the later spellings of a name (in any case) left
// out.
func once(names []string) []string {
	var out []string
	for _, n := range names {
		if !containsFold(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func containsFold(list []string, s string) bool {
	for _, e := range list {
		if strings.EqualFold(e, s) {
			return true
		}
	}
	return false
}

// Show answers SHOW BROADCAST TABLE RULES (broadcast_table), the tables in
// the rule's order.
func (family) Show(_ context.Context, st distsql.Statement, read rule.Read) (rule.Rows, bool, error) {
	return rule.ShowContent(st, read, show)
}

func show(st distsql.Statement, c map[string]any) (rule.Rows, bool) {
	if _, ok := st.(*ShowRules); !ok {
		return rule.Rows{}, false
	}
	rows := rule.Rows{Columns: []string{"broadcast_table"}, Rows: [][]string{}}
	for _, t := range rule.List(c["tables"]) {
		rows.Rows = append(rows.Rows, []string{t})
	}
	return rows, true
}

// Check: upstream checks nothing of a broadcast rule beyond its tables'
// names, which the changes check.
func (family) Check(context.Context, rule.Database, map[string]any) ([]*sqlerr.Error, error) {
	return nil, nil
}

// Units: a rule with tables uses every unit of the database, as a whole
// (no item of it is listed by SHOW RULES USED STORAGE UNIT, as upstream).
func (family) Units(d rule.Database, c map[string]any) []rule.Use {
	if len(rule.List(c["tables"])) == 0 || len(d.Units) == 0 {
		return nil
	}
	return []rule.Use{{Units: d.Units}}
}

// Defines: the rule defines no data source.
func (family) Defines(map[string]any) []string { return nil }

// Count: one per table, named broadcast_table as upstream's
// BroadcastCountResultRowBuilder names it.
func (family) Count(_ context.Context, _ rule.Database, c map[string]any) ([]rule.Counted, error) {
	if c == nil {
		return nil, nil
	}
	return []rule.Counted{{Rule: "broadcast_table", Count: len(rule.List(c["tables"]))}}, nil
}

// Convert: one CREATE BROADCAST TABLE RULE of the tables, none for a rule
// without tables.
func (family) Convert(c map[string]any) ([]string, bool) {
	if tables := rule.List(c["tables"]); len(tables) > 0 {
		return []string{"CREATE BROADCAST TABLE RULE " + strings.Join(tables, ", ") + ";"}, true
	}
	return nil, true
}

// Items: the tables are one item.
func (family) Items() rule.Items { return rule.Items{} }

// Upstream: the registry holds the content as it is.
func (family) Upstream(paths.Layout, map[string]any) error { return nil }
