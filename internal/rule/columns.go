package rule

import (
	"context"
	"fmt"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// ColumnRule is a family whose rule is a "tables" section of entries
// named by their table, whose columns name algorithms of one section of
// the rule: the mask and encrypt rules, whose upstream statements read,
// check, write and show alike; only a column's content differs (C, the
// column as a statement gives it). Its statements are
//
//	CREATE <KEYWORD> [TABLE] RULE [IF NOT EXISTS] table (COLUMNS((column), ...)), ...
//	ALTER <KEYWORD> [TABLE] RULE table (COLUMNS(...)), ...
//	DROP <KEYWORD> [TABLE] RULE [IF EXISTS] table, ...
//	SHOW <KEYWORD> [TABLE] RULES [table] [FROM db], SHOW <KEYWORD> [TABLE] RULE table [FROM db]
//
// (Define[C], DropTables, ShowTables), and COUNT <KEYWORD> RULE counts
// its tables.
type ColumnRule[C any] struct {
	// RuleType is the registry's type ("mask"); Keyword the statements'
	// ("MASK"); Label the rule as MissingRequiredRuleException names it
	// ("Mask").
	RuleType, Keyword, Label string
	// Algorithms is the rule's section of named algorithms.
	Algorithms string
	// Column reads the inside of a column's parentheses and returns the
	// column's name and definition.
	Column func(p *distsql.Parser) (name string, col C)
	// Value returns a column's entry in the rule, adding the algorithms it
	// defines to algorithms (the rule's section), after checking them.
	Value func(table, column string, col C, algorithms map[string]any) (map[string]any, error)
	// Uses returns the algorithm names a column's entry names.
	Uses func(col map[string]any) []string
	// NeedsUnits refuses CREATE in a database without storage units
	// (EmptyStorageUnitException, checked last), as upstream's encrypt
	// executor does.
	NeedsUnits bool
	// Props are the algorithm types and what their init checks of props;
	// Fields the column fields that name algorithms, with the kind
	// upstream's checker names them by.
	Props  Algorithms
	Fields []ColumnAlgorithm
	// ShowColumns are SHOW's columns; ShowRow is one row, for a column
	// of a table, from its entry and the rule's content.
	ShowColumns []string
	ShowRow     func(table, column string, col, c map[string]any) []string
	// ColumnName is the field upstream's YAML swapper writes a column's
	// name into ("name", "logicColumn").
	ColumnName string
}

// Table is one table of a CREATE or ALTER statement of a ColumnRule.
type Table[C any] struct {
	Name    string
	Columns []NamedColumn[C]
}

// NamedColumn is one column of a Table.
type NamedColumn[C any] struct {
	Name string
	Def  C
}

// Define is CREATE (IfNotExists) or, with Alter, ALTER of a ColumnRule's
// tables.
type Define[C any] struct {
	Family      string
	Alter       bool
	IfNotExists bool
	Tables      []Table[C]
}

// DropTables is DROP of a ColumnRule's tables.
type DropTables struct {
	Family   string
	IfExists bool
	Tables   []string
}

// ShowTables is SHOW of a ColumnRule's tables: Table "" for every table.
type ShowTables struct {
	Family          string
	Table, Database string
}

// Scope implements distsql.Statement: the session's database.
func (Define[C]) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (DropTables) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement.
func (st ShowTables) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Type implements Family.
func (k ColumnRule[C]) Type() string { return k.RuleType }

// Statements implements Family.
func (k ColumnRule[C]) Statements() string { return "CREATE, ALTER and DROP " + k.Keyword + " RULE" }

// Read implements Family.
func (k ColumnRule[C]) Read(p *distsql.Parser) (distsql.Statement, bool) {
	verb, plural := "", false
	for _, v := range []string{"CREATE", "ALTER", "DROP", "SHOW"} {
		for _, form := range [][]string{{v, k.Keyword, "RULE"}, {v, k.Keyword, "TABLE", "RULE"}, {v, k.Keyword, "RULES"}, {v, k.Keyword, "TABLE", "RULES"}} {
			if form[len(form)-1] == "RULES" && v != "SHOW" {
				continue
			}
			if p.Keywords(form...) {
				verb, plural = v, form[len(form)-1] == "RULES"
				break
			}
		}
		if verb != "" {
			break
		}
	}
	switch verb {
	case "CREATE":
		st := &Define[C]{Family: k.RuleType, IfNotExists: p.IfNotExists()}
		st.Tables = k.readTables(p)
		return st, true
	case "ALTER":
		return &Define[C]{Family: k.RuleType, Alter: true, Tables: k.readTables(p)}, true
	case "DROP":
		st := &DropTables{Family: k.RuleType, IfExists: p.IfExists()}
		st.Tables = p.Names("table name")
		return st, true
	case "SHOW":
		st := &ShowTables{Family: k.RuleType}
		if !plural || !p.AtEnd() {
			st.Table = p.Identifier("table name")
		}
		st.Database = p.FromDatabase()
		return st, true
	}
	return nil, false
}

// readTables reads table (COLUMNS((column), (column), ...)) (, ...)*.
func (k ColumnRule[C]) readTables(p *distsql.Parser) []Table[C] {
	var out []Table[C]
	for {
		t := Table[C]{Name: p.Identifier("table name")}
		p.ExpectSymbol("(")
		p.Expect("COLUMNS")
		p.ExpectSymbol("(")
		for {
			p.ExpectSymbol("(")
			name, col := k.Column(p)
			t.Columns = append(t.Columns, NamedColumn[C]{name, col})
			p.ExpectSymbol(")")
			if !p.Symbol(",") {
				break
			}
		}
		p.ExpectSymbol(")")
		p.ExpectSymbol(")")
		out = append(out, t)
		if !p.Symbol(",") {
			return out
		}
	}
}

// Change implements Family: CREATE refuses a table the rule has
// (DuplicateRuleException, 10204) unless IF NOT EXISTS, which leaves it
// as it is; ALTER refuses one it does not have (MissingRequiredRule
// Exception, 10202), replaces the others' entries and drops the
// algorithms no table uses any more; DROP refuses a table the rule does
// not have unless IF EXISTS, and drops the algorithms no table uses any
// more with the tables; as upstream's executors do. Names match exactly
// (upstream's executors compare them with equals).
func (k ColumnRule[C]) Change(st distsql.Statement) Change {
	named := Named{RuleType: k.RuleType, Label: k.Label, Case: ExactCase}
	switch st := st.(type) {
	case *Define[C]:
		if st.Family != k.RuleType {
			return nil
		}
		return func(_ context.Context, d Database, c map[string]any) (map[string]any, error) {
			names := make([]string, len(st.Tables))
			for i, t := range st.Tables {
				names[i] = t.Name
			}
			var todo []string
			var err error
			if st.Alter {
				todo, err = named.Alter(d.Name, Map(c["tables"]), names)
			} else {
				todo, err = named.Create(d.Name, Map(c["tables"]), names, st.IfNotExists)
			}
			if err != nil {
				return nil, err
			}
			for _, t := range st.Tables {
				if !contains(todo, t.Name) {
					continue
				}
				v, err := k.tableValue(t, c)
				if err != nil {
					return nil, err
				}
				Section(c, "tables")[t.Name] = v
			}
			if st.Alter {
				k.dropUnusedAlgorithms(c)
			}
			if !st.Alter && k.NeedsUnits && len(d.Units) == 0 {
				return nil, EmptyStorageUnits(d.Name)
			}
			return Prune(c), nil
		}
	case *DropTables:
		if st.Family != k.RuleType {
			return nil
		}
		return func(_ context.Context, d Database, c map[string]any) (map[string]any, error) {
			keys, err := named.Drop(d.Name, Map(c["tables"]), st.Tables, st.IfExists)
			if err != nil || len(keys) == 0 {
				return c, err // IF EXISTS of nothing: the rule as it was
			}
			for _, key := range keys {
				delete(Map(c["tables"]), key)
			}
			k.dropUnusedAlgorithms(c)
			return Prune(c), nil
		}
	}
	return nil
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// tableValue is table t's entry, its algorithms added to c.
func (k ColumnRule[C]) tableValue(t Table[C], c map[string]any) (map[string]any, error) {
	columns := map[string]any{}
	for _, col := range t.Columns {
		if _, twice := columns[col.Name]; twice {
			return nil, InvalidRule(k.RuleType, t.Name, fmt.Sprintf("column '%s' is named twice", col.Name))
		}
		v, err := k.Value(t.Name, col.Name, col.Def, Section(c, k.Algorithms))
		if err != nil {
			return nil, err
		}
		columns[col.Name] = v
	}
	return map[string]any{"columns": columns}, nil
}

// dropUnusedAlgorithms removes the algorithms no column of c names.
func (k ColumnRule[C]) dropUnusedAlgorithms(c map[string]any) {
	used := map[string]bool{}
	for _, t := range Map(c["tables"]) {
		for _, col := range Map(Map(t)["columns"]) {
			for _, n := range k.Uses(Map(col)) {
				used[n] = true
			}
		}
	}
	algs := Map(c[k.Algorithms])
	for n := range algs {
		if !used[n] {
			delete(algs, n)
		}
	}
}

// Show implements Family: one row per column of the rule's tables (those
// of the statement's table only, in any case), tables and columns by name.
func (k ColumnRule[C]) Show(_ context.Context, st distsql.Statement, read Read) (Rows, bool, error) {
	return ShowContent(st, read, k.show)
}

func (k ColumnRule[C]) show(st distsql.Statement, c map[string]any) (Rows, bool) {
	s, ok := st.(*ShowTables)
	if !ok || s.Family != k.RuleType {
		return Rows{}, false
	}
	rows := Rows{Columns: k.ShowColumns, Rows: [][]string{}}
	tables := Map(c["tables"])
	for _, t := range SortedKeys(tables) {
		if s.Table != "" && !strings.EqualFold(s.Table, t) {
			continue
		}
		cols := Map(Map(tables[t])["columns"])
		for _, col := range SortedKeys(cols) {
			rows.Rows = append(rows.Rows, k.ShowRow(t, col, Map(cols[col]), c))
		}
	}
	return rows, true
}

// Check implements Family: the algorithms' types and props, and every
// algorithm a column names defined.
func (k ColumnRule[C]) Check(_ context.Context, d Database, c map[string]any) ([]*sqlerr.Error, error) {
	errs := CheckAlgorithms(d.Name, k.RuleType, Map(c[k.Algorithms]), nil, k.Props)
	return append(errs, CheckColumnAlgorithms(d.Name, c, k.Algorithms, k.Fields)...), nil
}

// Units implements Family: the rule uses no storage unit.
func (ColumnRule[C]) Units(Database, map[string]any) []Use { return nil }

// Defines implements Family: the rule defines no data source.
func (ColumnRule[C]) Defines(map[string]any) []string { return nil }

// Count implements Family: one per table, as upstream's
// EncryptCountResultRowBuilder and MaskCountResultRowBuilder count.
func (k ColumnRule[C]) Count(_ context.Context, _ Database, c map[string]any) ([]Counted, error) {
	if c == nil {
		return nil, nil
	}
	return []Counted{{Rule: k.RuleType, Count: len(Map(c["tables"]))}}, nil
}

// Convert implements Family: CONVERT YAML CONFIGURATION leaves the rule
// out, as upstream's converter does.
func (ColumnRule[C]) Convert(map[string]any) ([]string, bool) { return nil, false }

// Items implements Family: the tables and the algorithms, one item each.
func (k ColumnRule[C]) Items() Items { return Items{Named: []string{"tables", k.Algorithms}} }

// Upstream implements Family: each table names itself in "name", each
// column in ColumnName.
func (k ColumnRule[C]) Upstream(_ paths.Layout, c map[string]any) error {
	for name, t := range Map(c["tables"]) {
		tm := Map(t)
		if tm == nil {
			continue
		}
		tm["name"] = name
		for col, cv := range Map(tm["columns"]) {
			if cm := Map(cv); cm != nil {
				cm[k.ColumnName] = col
			}
		}
	}
	return nil
}
