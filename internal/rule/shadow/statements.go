package shadow

import "github.com/shardkeeper/shardkeeper/internal/distsql"

// The shadow rule statements, as upstream 5.5's ShadowDistSQLStatement.g4
// reads them. COUNT SHADOW RULE is the parser's CountRule.

// Definition is one rule of CREATE or ALTER SHADOW RULE:
// name(SOURCE=unit, SHADOW=unit, table(TYPE(...), ...), ...).
type Definition struct {
	Name, Source, Shadow string
	Tables               []Table
}

// Table is table(TYPE(...), TYPE(...)) of a Definition: the table and its
// shadow algorithms, in order.
type Table struct {
	Name       string
	Algorithms []distsql.Algorithm
}

// CreateRule is CREATE SHADOW RULE [IF NOT EXISTS] definition, ...
type CreateRule struct {
	IfNotExists bool
	Rules       []Definition
}

// AlterRule is ALTER SHADOW RULE definition, ...
type AlterRule struct{ Rules []Definition }

// DropRule is DROP SHADOW RULE [IF EXISTS] name, ...
type DropRule struct {
	IfExists bool
	Names    []string
}

// DropAlgorithm is DROP SHADOW ALGORITHM [IF EXISTS] name, ...
type DropAlgorithm struct {
	IfExists bool
	Names    []string
}

// CreateDefaultAlgorithm is CREATE DEFAULT SHADOW ALGORITHM [IF NOT
// EXISTS] TYPE(...).
type CreateDefaultAlgorithm struct {
	IfNotExists bool
	Algorithm   distsql.Algorithm
}

// AlterDefaultAlgorithm is ALTER DEFAULT SHADOW ALGORITHM TYPE(...).
type AlterDefaultAlgorithm struct{ Algorithm distsql.Algorithm }

// DropDefaultAlgorithm is DROP DEFAULT SHADOW ALGORITHM [IF EXISTS].
type DropDefaultAlgorithm struct{ IfExists bool }

// ShowRules is SHOW SHADOW RULES [FROM db] or SHOW SHADOW RULE name [FROM
// db]; Rule is "" for every rule.
type ShowRules struct{ Rule, Database string }

// ShowTableRules is SHOW SHADOW TABLE RULES [FROM db] or SHOW SHADOW
// TABLE RULE table [FROM db]; Table is "" for every table.
type ShowTableRules struct{ Table, Database string }

// ShowAlgorithms is SHOW SHADOW ALGORITHMS [FROM db].
type ShowAlgorithms struct{ Database string }

// ShowDefaultAlgorithm is SHOW DEFAULT SHADOW ALGORITHM [FROM db].
type ShowDefaultAlgorithm struct{ Database string }

// Scope implements distsql.Statement: the session's database.
func (CreateRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (AlterRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (DropRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (DropAlgorithm) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (CreateDefaultAlgorithm) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (AlterDefaultAlgorithm) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (DropDefaultAlgorithm) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement.
func (st ShowRules) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowTableRules) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowAlgorithms) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowDefaultAlgorithm) Scope() distsql.Scope { return distsql.Named(st.Database) }

// read reads a shadow rule statement when one starts at p.
func read(p *distsql.Parser) (distsql.Statement, bool) {
	switch {
	case p.Keywords("CREATE", "SHADOW", "RULE"):
		st := &CreateRule{IfNotExists: p.IfNotExists()}
		st.Rules = definitions(p)
		return st, true
	case p.Keywords("ALTER", "SHADOW", "RULE"):
		return &AlterRule{Rules: definitions(p)}, true
	case p.Keywords("DROP", "SHADOW", "RULE"):
		st := &DropRule{IfExists: p.IfExists()}
		st.Names = p.Names("shadow rule name")
		return st, true
	case p.Keywords("DROP", "SHADOW", "ALGORITHM"):
		st := &DropAlgorithm{IfExists: p.IfExists()}
		st.Names = p.Names("shadow algorithm name")
		return st, true
	case p.Keywords("CREATE", "DEFAULT", "SHADOW", "ALGORITHM"):
		st := &CreateDefaultAlgorithm{IfNotExists: p.IfNotExists()}
		st.Algorithm = p.Algorithm()
		return st, true
	case p.Keywords("ALTER", "DEFAULT", "SHADOW", "ALGORITHM"):
		return &AlterDefaultAlgorithm{Algorithm: p.Algorithm()}, true
	case p.Keywords("DROP", "DEFAULT", "SHADOW", "ALGORITHM"):
		return &DropDefaultAlgorithm{IfExists: p.IfExists()}, true
	case p.Keywords("SHOW", "SHADOW", "RULES"):
		return &ShowRules{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "SHADOW", "RULE"):
		st := &ShowRules{Rule: p.Identifier("shadow rule name")}
		st.Database = p.FromDatabase()
		return st, true
	case p.Keywords("SHOW", "SHADOW", "TABLE", "RULES"):
		return &ShowTableRules{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "SHADOW", "TABLE", "RULE"):
		st := &ShowTableRules{Table: p.Identifier("table name")}
		st.Database = p.FromDatabase()
		return st, true
	case p.Keywords("SHOW", "SHADOW", "ALGORITHMS"):
		return &ShowAlgorithms{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "DEFAULT", "SHADOW", "ALGORITHM"):
		return &ShowDefaultAlgorithm{Database: p.FromDatabase()}, true
	}
	return nil, false
}

// definitions reads definition (, definition)* where definition is
// name(SOURCE=unit, SHADOW=unit, table(TYPE(...), ...) (, table(...))*).
func definitions(p *distsql.Parser) []Definition {
	var out []Definition
	for {
		d := Definition{Name: p.Identifier("shadow rule name")}
		p.ExpectSymbol("(")
		p.Expect("SOURCE")
		p.ExpectSymbol("=")
		d.Source = p.Identifier("source storage unit name")
		p.ExpectSymbol(",")
		p.Expect("SHADOW")
		p.ExpectSymbol("=")
		d.Shadow = p.Identifier("shadow storage unit name")
		for p.Symbol(",") {
			t := Table{Name: p.Identifier("table name")}
			p.ExpectSymbol("(")
			for {
				t.Algorithms = append(t.Algorithms, p.Algorithm())
				if !p.Symbol(",") {
					break
				}
			}
			p.ExpectSymbol(")")
			d.Tables = append(d.Tables, t)
		}
		if len(d.Tables) == 0 {
			p.Fail("',' and a shadow table expected")
		}
		p.ExpectSymbol(")")
		out = append(out, d)
		if !p.Symbol(",") {
			return out
		}
	}
}
