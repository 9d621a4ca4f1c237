package distsql

// The mask rule statements (RDL and RQL), as upstream's
// MaskDistSQLStatement.g4 has them, and the shape they share with the
// encrypt rule statements (encrypt.go): a rule per table, named by the
// table, with a list of columns.

// MaskColumn is (NAME=column, TYPE(NAME=type[, PROPERTIES(...)])) of a mask
// rule: the column and its mask algorithm.
type MaskColumn struct {
	Name      string
	Algorithm Algorithm
}

// MaskRule is one rule definition of CREATE or ALTER MASK RULE:
// table (COLUMNS(column, ...)).
type MaskRule struct {
	Table   string
	Columns []MaskColumn
}

// CreateMaskRule is CREATE MASK [TABLE] RULE [IF NOT EXISTS] rule, ...
type CreateMaskRule struct {
	IfNotExists bool
	Rules       []MaskRule
}

// AlterMaskRule is ALTER MASK [TABLE] RULE rule, ...
type AlterMaskRule struct{ Rules []MaskRule }

// DropMaskRule is DROP MASK [TABLE] RULE [IF EXISTS] table, ...
type DropMaskRule struct {
	IfExists bool
	Tables   []string
}

// ShowMaskRules is SHOW MASK [TABLE] RULES [table] [FROM db] or SHOW MASK
// [TABLE] RULE table [FROM db].
type ShowMaskRules struct {
	Table    string // "" for every table
	Database string
}

// Scope implements Statement: the session's database.
func (CreateMaskRule) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (AlterMaskRule) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (DropMaskRule) Scope() Scope { return sessionDatabase }

// Scope implements Statement.
func (st ShowMaskRules) Scope() Scope { return named(st.Database) }

// maskStatement reads a mask rule statement when one starts here; ok is
// false, with nothing consumed, otherwise.
func (p *parser) maskStatement() (st Statement, ok bool) {
	verb, plural := p.tableRuleVerb("MASK")
	switch verb {
	case "CREATE":
		st := &CreateMaskRule{IfNotExists: p.keywords("IF", "NOT", "EXISTS")}
		st.Rules = p.maskRules()
		return st, true
	case "ALTER":
		return &AlterMaskRule{Rules: p.maskRules()}, true
	case "DROP":
		st := &DropMaskRule{IfExists: p.keywords("IF", "EXISTS")}
		st.Tables = p.names("table name")
		return st, true
	case "SHOW":
		st := &ShowMaskRules{}
		st.Table, st.Database = p.showTableRule(plural)
		return st, true
	}
	return nil, false
}

// maskRules reads table (COLUMNS((NAME=c, TYPE(...)), ...)) (, ...)*.
func (p *parser) maskRules() []MaskRule {
	var out []MaskRule
	p.tableColumnRules(func(table string) { out = append(out, MaskRule{Table: table}) }, func() {
		r := &out[len(out)-1]
		p.expect("NAME")
		p.expectSymbol("=")
		c := MaskColumn{Name: p.identifier("column name")}
		p.expectSymbol(",")
		c.Algorithm = p.algorithm()
		r.Columns = append(r.Columns, c)
	})
	return out
}

// tableRuleVerb consumes {CREATE | ALTER | DROP | SHOW} family [TABLE]
// RULE (or, for SHOW, RULES) when they are next and returns the verb in
// upper case and, for SHOW, whether RULES was written; verb is "", with
// nothing consumed, when they are not next.
func (p *parser) tableRuleVerb(family string) (verb string, plural bool) {
	t := p.peek()
	if t.Kind != Ident || !isKeyword(p.peekAt(1), family) {
		return "", false
	}
	for _, v := range []string{"CREATE", "ALTER", "DROP", "SHOW"} {
		if !isKeyword(t, v) {
			continue
		}
		n := 2
		if isKeyword(p.peekAt(n), "TABLE") {
			n++
		}
		switch {
		case isKeyword(p.peekAt(n), "RULE"):
		case v == "SHOW" && isKeyword(p.peekAt(n), "RULES"):
			plural = true
		default:
			return "", false
		}
		p.i += n + 1
		return v, plural
	}
	return "", false
}

// showTableRule reads what follows SHOW family RULE (a table, required) or
// RULES (a table, optional), then an optional FROM db.
func (p *parser) showTableRule(plural bool) (table, db string) {
	if t := p.peek(); !plural || t.Kind != EOF && !p.isSymbol(";") && !isKeyword(t, "FROM") && !isKeyword(t, "IN") {
		table = p.identifier("table name")
	}
	return table, p.fromDatabase()
}

// tableColumnRules reads rule (, rule)* where rule is table (COLUMNS(
// (column), (column), ...)): it calls table with each rule's table, then
// column inside each column's parentheses.
func (p *parser) tableColumnRules(table func(string), column func()) {
	for {
		table(p.identifier("table name"))
		p.expectSymbol("(")
		p.expect("COLUMNS")
		p.expectSymbol("(")
		for {
			p.expectSymbol("(")
			column()
			p.expectSymbol(")")
			if !p.symbol(",") {
				break
			}
		}
		p.expectSymbol(")")
		p.expectSymbol(")")
		if !p.symbol(",") {
			return
		}
	}
}
