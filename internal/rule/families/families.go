// Package families lists the rule families and the global rules, in the
// one place a family is added: the parser reads their statements (Parse), the rule change path,
// the console's queries, the checks, the units in use and the registry's
// upstream form find them here (ByType, Of).
package families

import (
	"context"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/broadcast"
	"github.com/shardkeeper/shardkeeper/internal/rule/encrypt"
	"github.com/shardkeeper/shardkeeper/internal/rule/global"
	"github.com/shardkeeper/shardkeeper/internal/rule/mask"
	"github.com/shardkeeper/shardkeeper/internal/rule/readwrite"
	"github.com/shardkeeper/shardkeeper/internal/rule/shadow"
	"github.com/shardkeeper/shardkeeper/internal/rule/sharding"
	"github.com/shardkeeper/shardkeeper/internal/rule/single"
)

// All are the rule families, in the order their readers are tried and
// their rules shown. Read-only.
var All = []rule.Family{
	sharding.Family,
	readwrite.Family,
	broadcast.Family,
	mask.Family,
	encrypt.Family,
	shadow.Family,
	single.Family,
}

// Globals are the global rules, in the order their readers are tried.
// Read-only.
var Globals = []rule.Global{
	global.Authority,
	global.Transaction,
	global.SQLParser,
	global.GlobalClock,
	global.SQLFederation,
	global.SQLTranslator,
}

// readers are All's and Globals' statement readers.
var readers = func() []distsql.Reader {
	var out []distsql.Reader
	for _, f := range All {
		out = append(out, f.Read)
	}
	for _, g := range Globals {
		out = append(out, g.Read)
	}
	return out
}()

// Parse is distsql.Parse with the families' statements.
func Parse(sql string) (distsql.Statement, error) {
	return distsql.Parse(sql, readers...)
}

// Statements names the families' rule changes, one list, the families'
// names separated by "; ".
func Statements() string {
	names := make([]string, len(All))
	for i, f := range All {
		names[i] = f.Statements()
	}
	return strings.Join(names, "; ")
}

// GlobalStatements names the global rules' changes, one list.
func GlobalStatements() string {
	var names []string
	for _, g := range Globals {
		if s := g.Statements(); s != "" {
			names = append(names, s)
		}
	}
	return strings.Join(names, ", ")
}

// GlobalByType returns the global rule of type typ ("transaction"); ok is
// false when no global rule has that type.
func GlobalByType(typ string) (rule.Global, bool) {
	for _, g := range Globals {
		if g.Type() == typ {
			return g, true
		}
	}
	return nil, false
}

// GlobalOf returns the global rule whose change st is, and that change;
// nil when st changes no global rule.
func GlobalOf(st distsql.Statement) (rule.Global, rule.GlobalChange) {
	for _, g := range Globals {
		if c := g.Change(st); c != nil {
			return g, c
		}
	}
	return nil, nil
}

// ShowGlobal answers st, a query of a global rule, from that rule's
// content, which content returns (nil when the registry has none); ok is
// false when st is no global rule's query.
func ShowGlobal(st distsql.Statement, content func(ruleType string) map[string]any) (rows rule.Rows, ok bool) {
	for _, g := range Globals {
		if _, ok := g.Show(st, nil); ok {
			rows, _ := g.Show(st, content(g.Type()))
			return rows, true
		}
	}
	return rule.Rows{}, false
}

// ByType returns the family of rule type typ ("mask"); ok is false when
// no family has that type.
func ByType(typ string) (rule.Family, bool) {
	for _, f := range All {
		if f.Type() == typ {
			return f, true
		}
	}
	return nil, false
}

// Of returns the family whose change st is, and that change; nil when st
// changes no family's rule.
func Of(st distsql.Statement) (rule.Family, rule.Change) {
	for _, f := range All {
		if c := f.Change(st); c != nil {
			return f, c
		}
	}
	return nil, nil
}

// Show answers st, a query of a family, from the statement's database
// and the content of that family's rule there, which read returns for the
// family's rule type (nil content when the database has none); ok is
// false, with nothing read, when st is no family's query. ctx bounds what
// the family reads of the units.
func Show(ctx context.Context, st distsql.Statement, read func(ruleType string) (rule.Database, map[string]any, error)) (rows rule.Rows, ok bool, err error) {
	for _, f := range All {
		rows, ok, err := f.Show(ctx, st, func() (rule.Database, map[string]any, error) { return read(f.Type()) })
		if ok {
			return rows, true, err
		}
	}
	return rule.Rows{}, false, nil
}

// Database is d's view for the families' changes and checks: its units,
// its rules' contents and the data sources its rules may name.
func Database(name string, units []string, rules map[string]map[string]any) rule.Database {
	d := rule.Database{Name: name, Units: units, Rules: rules, Sources: map[string]bool{}}
	for _, u := range units {
		d.Sources[u] = true
	}
	for _, f := range All {
		for _, n := range f.Defines(rules[f.Type()]) {
			d.Sources[n] = true
		}
	}
	return d
}
