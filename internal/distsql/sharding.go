package distsql

import "strings"

// The sharding rule statements (RDL and RQL), as upstream's
// ShardingDistSQLStatement.g4 has them; the broadcast rule's are the
// broadcast family's (internal/rule/broadcast).

// Algorithm is TYPE(NAME=type[, PROPERTIES(...)]).
type Algorithm struct {
	Type  string
	Props []Property
}

// ShardingStrategy is TYPE=type, SHARDING_COLUMN(S)=..., SHARDING_ALGORITHM(...)
// of a DATABASE_STRATEGY, a TABLE_STRATEGY or a default strategy. Type is
// as written (standard, complex, hint, none); Algorithm is nil for none.
type ShardingStrategy struct {
	Type      string
	Columns   []string
	Algorithm *Algorithm
}

// KeyGenerateStrategy is KEY_GENERATE_STRATEGY(COLUMN=c, TYPE(...)).
type KeyGenerateStrategy struct {
	Column    string
	Algorithm Algorithm
}

// AuditStrategy is AUDIT_STRATEGY(TYPE(...)[, TYPE(...)], ALLOW_HINT_DISABLE=b).
type AuditStrategy struct {
	Auditors         []Algorithm
	AllowHintDisable bool
}

// ShardingTableRule is one table of CREATE or ALTER SHARDING TABLE RULE:
// the table form (DataNodes, optional strategies) or, with StorageUnits,
// the auto-table form (ShardingColumn and Algorithm).
type ShardingTableRule struct {
	Table            string
	DataNodes        []string
	DatabaseStrategy *ShardingStrategy
	TableStrategy    *ShardingStrategy
	StorageUnits     []string
	ShardingColumn   string
	Algorithm        *Algorithm
	KeyGenerate      *KeyGenerateStrategy
	Audit            *AuditStrategy
}

// Auto reports whether r is the auto-table form.
func (r ShardingTableRule) Auto() bool { return len(r.StorageUnits) > 0 }

// CreateShardingTableRule is CREATE SHARDING TABLE RULE [IF NOT EXISTS] rule, ...
type CreateShardingTableRule struct {
	IfNotExists bool
	Rules       []ShardingTableRule
}

// AlterShardingTableRule is ALTER SHARDING TABLE RULE rule, ...
type AlterShardingTableRule struct{ Rules []ShardingTableRule }

// DropShardingTableRule is DROP SHARDING TABLE RULE [IF EXISTS] t, ...
type DropShardingTableRule struct {
	IfExists bool
	Tables   []string
}

// TableReference is name(t1, t2, ...) of a SHARDING TABLE REFERENCE RULE.
type TableReference struct {
	Name   string
	Tables []string
}

// CreateShardingTableReferenceRule is CREATE SHARDING TABLE REFERENCE RULE
// [IF NOT EXISTS] name(t1, t2), ...
type CreateShardingTableReferenceRule struct {
	IfNotExists bool
	Rules       []TableReference
}

// AlterShardingTableReferenceRule is ALTER SHARDING TABLE REFERENCE RULE name(t1, t2), ...
type AlterShardingTableReferenceRule struct{ Rules []TableReference }

// DropShardingTableReferenceRule is DROP SHARDING TABLE REFERENCE RULE [IF EXISTS] name, ...
type DropShardingTableReferenceRule struct {
	IfExists bool
	Names    []string
}

// CreateDefaultShardingStrategy is CREATE DEFAULT SHARDING DATABASE|TABLE
// STRATEGY [IF NOT EXISTS] (...); Alter is ALTER DEFAULT SHARDING ... (...).
type CreateDefaultShardingStrategy struct {
	Alter       bool
	IfNotExists bool
	Kind        string // DATABASE or TABLE
	Strategy    ShardingStrategy
}

// DropDefaultShardingStrategy is DROP DEFAULT SHARDING DATABASE|TABLE
// STRATEGY [IF EXISTS].
type DropDefaultShardingStrategy struct {
	IfExists bool
	Kind     string
}

// DropShardingAlgorithm is DROP SHARDING ALGORITHM [IF EXISTS] name, ...
type DropShardingAlgorithm struct {
	IfExists bool
	Names    []string
}

// DropShardingKeyGenerator is DROP SHARDING KEY GENERATOR [IF EXISTS] name, ...
type DropShardingKeyGenerator struct {
	IfExists bool
	Names    []string
}

// KeyGenerateStrategyDefinition is the body of a (5.5.4) SHARDING KEY
// GENERATE STRATEGY: TABLE=t, COLUMN=c or SEQUENCE=s, then TYPE(...) or
// GENERATOR=name.
type KeyGenerateStrategyDefinition struct {
	Table, Column, Sequence string
	Algorithm               *Algorithm
	Generator               string
}

// CreateShardingKeyGenerateStrategy is CREATE (or, with Alter, ALTER)
// SHARDING KEY GENERATE STRATEGY [IF NOT EXISTS] name (definition).
type CreateShardingKeyGenerateStrategy struct {
	Alter       bool
	IfNotExists bool
	Name        string
	Definition  KeyGenerateStrategyDefinition
}

// DropShardingKeyGenerateStrategy is DROP SHARDING KEY GENERATE STRATEGY
// [IF EXISTS] name, ...
type DropShardingKeyGenerateStrategy struct {
	IfExists bool
	Names    []string
}

// ShowShardingTableReferenceRules is SHOW SHARDING TABLE REFERENCE RULE[S] [name] [FROM db].
type ShowShardingTableReferenceRules struct{ Name, Database string }

// ShowDefaultShardingStrategy is SHOW DEFAULT SHARDING STRATEGY [FROM db].
type ShowDefaultShardingStrategy struct{ Database string }

// ShowShardingKeyGenerateStrategies is SHOW SHARDING KEY GENERATE
// STRATEGIES | STRATEGY name [FROM db].
type ShowShardingKeyGenerateStrategies struct{ Name, Database string }

// ShowUnusedShardingAlgorithms is SHOW UNUSED SHARDING ALGORITHMS [FROM db].
type ShowUnusedShardingAlgorithms struct{ Database string }

// ShowUnusedShardingKeyGenerators is SHOW UNUSED SHARDING KEY GENERATORS [FROM db].
type ShowUnusedShardingKeyGenerators struct{ Database string }

// ShowShardingTableNodes is SHOW SHARDING TABLE NODES [t] [FROM db].
type ShowShardingTableNodes struct{ Table, Database string }

// ShowShardingAuditors is SHOW SHARDING AUDITORS [FROM db].
type ShowShardingAuditors struct{ Database string }

// ShowUnusedShardingAuditors is SHOW UNUSED SHARDING AUDITORS [FROM db].
type ShowUnusedShardingAuditors struct{ Database string }

// ShowShardingTableRulesUsed is SHOW SHARDING TABLE RULES USED ALGORITHM |
// KEY GENERATOR | AUDITOR name [FROM db].
type ShowShardingTableRulesUsed struct {
	// Kind is "ALGORITHM", "KEY GENERATOR" or "AUDITOR".
	Kind           string
	Name, Database string
}

// CountShardingRule is COUNT SHARDING RULE [FROM db].
type CountShardingRule struct{ Database string }

// Scope implements Statement: the session's database.
func (CreateShardingTableRule) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (AlterShardingTableRule) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (DropShardingTableRule) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (CreateShardingTableReferenceRule) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (AlterShardingTableReferenceRule) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (DropShardingTableReferenceRule) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (CreateDefaultShardingStrategy) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (DropDefaultShardingStrategy) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (DropShardingAlgorithm) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (DropShardingKeyGenerator) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (CreateShardingKeyGenerateStrategy) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (DropShardingKeyGenerateStrategy) Scope() Scope { return sessionDatabase }

// Scope implements Statement.
func (st ShowShardingTableReferenceRules) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (st ShowDefaultShardingStrategy) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (st ShowShardingKeyGenerateStrategies) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (st ShowUnusedShardingAlgorithms) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (st ShowShardingAuditors) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (st ShowUnusedShardingAuditors) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (st ShowShardingTableRulesUsed) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (st ShowUnusedShardingKeyGenerators) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (st ShowShardingTableNodes) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (st CountShardingRule) Scope() Scope { return named(st.Database) }

// lookingAt reports whether the next tokens are the keywords kws, without
// consuming them.
func (p *parser) lookingAt(kws ...string) bool {
	for n, kw := range kws {
		if !isKeyword(p.peekAt(n), kw) {
			return false
		}
	}
	return true
}

// shardingRDL reads a sharding or broadcast rule statement when one starts
// here (CREATE / ALTER / DROP ..., COUNT SHARDING|BROADCAST RULE); ok is
// false, with nothing consumed, otherwise.
func (p *parser) shardingRDL() (st Statement, ok bool) {
	verb := strings.ToUpper(p.peek().Text)
	if p.peek().Kind != Ident {
		return nil, false
	}
	switch verb {
	case "CREATE", "ALTER", "DROP":
	case "COUNT":
		switch {
		case p.lookingAt("COUNT", "SHARDING", "RULE"):
			p.i += 3
			return &CountShardingRule{Database: p.fromDatabase()}, true
		}
		return nil, false
	default:
		return nil, false
	}
	switch {
	case p.lookingAt(verb, "SHARDING", "TABLE", "REFERENCE", "RULE"):
		p.i += 5
		return p.tableReferenceRule(verb), true
	case p.lookingAt(verb, "SHARDING", "TABLE", "RULE"):
		p.i += 4
		return p.shardingTableRule(verb), true
	case p.lookingAt(verb, "DEFAULT", "SHARDING"):
		p.i += 3
		kind := "DATABASE"
		if p.keyword("TABLE") {
			kind = "TABLE"
		} else {
			p.expect("DATABASE")
		}
		p.expect("STRATEGY")
		if verb == "DROP" {
			return &DropDefaultShardingStrategy{Kind: kind, IfExists: p.keywords("IF", "EXISTS")}, true
		}
		st := &CreateDefaultShardingStrategy{Alter: verb == "ALTER", Kind: kind}
		if verb == "CREATE" {
			st.IfNotExists = p.keywords("IF", "NOT", "EXISTS")
		}
		p.expectSymbol("(")
		st.Strategy = p.shardingStrategy(true)
		p.expectSymbol(")")
		return st, true
	case verb == "DROP" && p.lookingAt(verb, "SHARDING", "ALGORITHM"):
		p.i += 3
		st := &DropShardingAlgorithm{IfExists: p.keywords("IF", "EXISTS")}
		st.Names = p.names("sharding algorithm name")
		return st, true
	case verb == "DROP" && p.lookingAt(verb, "SHARDING", "KEY", "GENERATOR"):
		p.i += 4
		st := &DropShardingKeyGenerator{IfExists: p.keywords("IF", "EXISTS")}
		st.Names = p.names("key generator name")
		return st, true
	case p.lookingAt(verb, "SHARDING", "KEY", "GENERATE", "STRATEGY"):
		p.i += 5
		if verb == "DROP" {
			st := &DropShardingKeyGenerateStrategy{IfExists: p.keywords("IF", "EXISTS")}
			st.Names = p.names("key generate strategy name")
			return st, true
		}
		st := &CreateShardingKeyGenerateStrategy{Alter: verb == "ALTER"}
		if verb == "CREATE" {
			st.IfNotExists = p.keywords("IF", "NOT", "EXISTS")
		}
		st.Name = p.identifier("key generate strategy name")
		p.expectSymbol("(")
		st.Definition = p.keyGenerateStrategyDefinition()
		p.expectSymbol(")")
		return st, true
	}
	return nil, false
}

// names reads name (, name)*.
func (p *parser) names(what string) []string {
	out := []string{p.identifier(what)}
	for p.symbol(",") {
		out = append(out, p.identifier(what))
	}
	return out
}

func (p *parser) tableReferenceRule(verb string) Statement {
	switch verb {
	case "DROP":
		st := &DropShardingTableReferenceRule{IfExists: p.keywords("IF", "EXISTS")}
		st.Names = p.names("sharding table reference rule name")
		return st
	case "CREATE":
		st := &CreateShardingTableReferenceRule{IfNotExists: p.keywords("IF", "NOT", "EXISTS")}
		st.Rules = p.tableReferences()
		return st
	}
	return &AlterShardingTableReferenceRule{Rules: p.tableReferences()}
}

// tableReferences reads name(t1, t2, ...) (, name(...))*.
func (p *parser) tableReferences() []TableReference {
	var out []TableReference
	for {
		r := TableReference{Name: p.identifier("sharding table reference rule name")}
		p.expectSymbol("(")
		r.Tables = p.names("table name")
		p.expectSymbol(")")
		out = append(out, r)
		if !p.symbol(",") {
			return out
		}
	}
}

func (p *parser) shardingTableRule(verb string) Statement {
	switch verb {
	case "DROP":
		st := &DropShardingTableRule{IfExists: p.keywords("IF", "EXISTS")}
		st.Tables = p.names("table name")
		return st
	case "CREATE":
		st := &CreateShardingTableRule{IfNotExists: p.keywords("IF", "NOT", "EXISTS")}
		st.Rules = p.shardingTableRules()
		return st
	}
	return &AlterShardingTableRule{Rules: p.shardingTableRules()}
}

func (p *parser) shardingTableRules() []ShardingTableRule {
	out := []ShardingTableRule{p.shardingTableRuleDefinition()}
	for p.symbol(",") {
		out = append(out, p.shardingTableRuleDefinition())
	}
	return out
}

// shardingTableRuleDefinition reads t(DATANODES(...)[, DATABASE_STRATEGY(...)]
// [, TABLE_STRATEGY(...)][, KEY_GENERATE_STRATEGY(...)][, AUDIT_STRATEGY(...)])
// or t(STORAGE_UNITS(...), SHARDING_COLUMN=c, TYPE(...)[, KEY_GENERATE_STRATEGY(...)]
// [, AUDIT_STRATEGY(...)]).
func (p *parser) shardingTableRuleDefinition() ShardingTableRule {
	r := ShardingTableRule{Table: p.identifier("table name")}
	p.expectSymbol("(")
	switch {
	case p.keyword("DATANODES"):
		p.expectSymbol("(")
		r.DataNodes = append(r.DataNodes, p.str("data node"))
		for p.symbol(",") {
			r.DataNodes = append(r.DataNodes, p.str("data node"))
		}
		p.expectSymbol(")")
		if p.symbol(",") && p.keyword("DATABASE_STRATEGY") {
			p.expectSymbol("(")
			s := p.shardingStrategy(false)
			r.DatabaseStrategy = &s
			p.expectSymbol(")")
			p.symbol(",")
		}
		if p.keyword("TABLE_STRATEGY") {
			p.expectSymbol("(")
			s := p.shardingStrategy(false)
			r.TableStrategy = &s
			p.expectSymbol(")")
			p.symbol(",")
		}
	case p.keyword("STORAGE_UNITS"):
		p.expectSymbol("(")
		r.StorageUnits = append(r.StorageUnits, p.identOrString("storage unit name"))
		for p.symbol(",") {
			r.StorageUnits = append(r.StorageUnits, p.identOrString("storage unit name"))
		}
		p.expectSymbol(")")
		p.expectSymbol(",")
		p.expect("SHARDING_COLUMN")
		p.expectSymbol("=")
		r.ShardingColumn = p.identifier("sharding column")
		p.expectSymbol(",")
		a := p.algorithm()
		r.Algorithm = &a
		p.symbol(",")
	default:
		p.oneOf("DATANODES", "STORAGE_UNITS")
	}
	if p.keyword("KEY_GENERATE_STRATEGY") {
		p.expectSymbol("(")
		p.expect("COLUMN")
		p.expectSymbol("=")
		k := KeyGenerateStrategy{Column: p.identifier("key generate column")}
		p.expectSymbol(",")
		k.Algorithm = p.algorithm()
		p.expectSymbol(")")
		r.KeyGenerate = &k
		p.symbol(",")
	}
	if p.keyword("AUDIT_STRATEGY") {
		p.expectSymbol("(")
		a := &AuditStrategy{}
		for p.isKeywordNext("TYPE") {
			a.Auditors = append(a.Auditors, p.algorithm())
			p.expectSymbol(",")
		}
		p.expect("ALLOW_HINT_DISABLE")
		p.expectSymbol("=")
		a.AllowHintDisable = p.boolean("ALLOW_HINT_DISABLE")
		p.expectSymbol(")")
		r.Audit = a
	}
	p.expectSymbol(")")
	return r
}

func (p *parser) boolean(what string) bool {
	switch {
	case p.keyword("TRUE"):
		return true
	case p.keyword("FALSE"):
		return false
	}
	p.fail("%s expected (TRUE or FALSE)", what)
	return false
}

// shardingStrategy reads TYPE=type, SHARDING_COLUMN(S)=..., SHARDING_ALGORITHM(TYPE(...));
// a default strategy may be TYPE=none alone.
func (p *parser) shardingStrategy(isDefault bool) ShardingStrategy {
	p.expect("TYPE")
	p.expectSymbol("=")
	s := ShardingStrategy{Type: p.identOrString("strategy type")}
	if strings.EqualFold(s.Type, "none") && (isDefault || p.isSymbol(")")) {
		return s
	}
	p.expectSymbol(",")
	switch {
	case p.keyword("SHARDING_COLUMN"):
		p.expectSymbol("=")
		s.Columns = []string{p.identifier("sharding column")}
	case p.keyword("SHARDING_COLUMNS"):
		p.expectSymbol("=")
		s.Columns = []string{p.identifier("sharding column")}
		for p.isSymbol(",") && !isKeyword(p.peekAt(1), "SHARDING_ALGORITHM") {
			p.i++
			s.Columns = append(s.Columns, p.identifier("sharding column"))
		}
	default:
		if !strings.EqualFold(s.Type, "hint") {
			p.oneOf("SHARDING_COLUMN", "SHARDING_COLUMNS")
		}
	}
	if !p.isKeywordNext("SHARDING_ALGORITHM") {
		p.expectSymbol(",")
	}
	p.expect("SHARDING_ALGORITHM")
	p.expectSymbol("(")
	a := p.algorithm()
	s.Algorithm = &a
	p.expectSymbol(")")
	return s
}

// algorithm reads TYPE(NAME=type[, PROPERTIES(...)]).
func (p *parser) algorithm() Algorithm {
	p.expect("TYPE")
	p.expectSymbol("(")
	p.expect("NAME")
	p.expectSymbol("=")
	a := Algorithm{Type: p.identOrString("algorithm type")}
	if p.symbol(",") {
		a.Props = p.properties()
	}
	p.expectSymbol(")")
	return a
}

// keyGenerateStrategyDefinition reads TABLE=t, COLUMN=c | SEQUENCE=s, then
// TYPE(...) or GENERATOR=name.
func (p *parser) keyGenerateStrategyDefinition() KeyGenerateStrategyDefinition {
	var d KeyGenerateStrategyDefinition
	switch {
	case p.keyword("TABLE"):
		p.expectSymbol("=")
		d.Table = p.identifier("table name")
		p.expectSymbol(",")
		p.expect("COLUMN")
		p.expectSymbol("=")
		d.Column = p.identifier("column name")
	case p.keyword("SEQUENCE"):
		p.expectSymbol("=")
		d.Sequence = p.identOrString("sequence name")
	default:
		p.oneOf("TABLE", "SEQUENCE")
	}
	p.expectSymbol(",")
	if p.keyword("GENERATOR") {
		p.expectSymbol("=")
		d.Generator = p.identifier("key generator name")
		return d
	}
	a := p.algorithm()
	d.Algorithm = &a
	return d
}

// showSharding reads the SHOW statements of the sharding and broadcast
// rules (SHOW already consumed); ok is false, nothing consumed, otherwise.
func (p *parser) showSharding() (st Statement, ok bool) {
	switch {
	case p.lookingAt("SHARDING", "TABLE", "REFERENCE", "RULES"):
		p.i += 4
		return &ShowShardingTableReferenceRules{Database: p.fromDatabase()}, true
	case p.lookingAt("SHARDING", "TABLE", "REFERENCE", "RULE"):
		p.i += 4
		st := &ShowShardingTableReferenceRules{}
		if t := p.peek(); t.Kind != EOF && !p.isSymbol(";") && !isKeyword(t, "FROM") && !isKeyword(t, "IN") {
			st.Name = p.identifier("rule name")
		}
		st.Database = p.fromDatabase()
		return st, true
	case p.lookingAt("SHARDING", "TABLE", "RULES", "USED"):
		p.i += 4
		st := &ShowShardingTableRulesUsed{}
		switch {
		case p.keyword("ALGORITHM"):
			st.Kind = "ALGORITHM"
		case p.keywords("KEY", "GENERATOR"):
			st.Kind = "KEY GENERATOR"
		case p.keyword("AUDITOR"):
			st.Kind = "AUDITOR"
		default:
			p.oneOf("ALGORITHM", "KEY GENERATOR", "AUDITOR")
		}
		st.Name = p.identOrString("name")
		st.Database = p.fromDatabase()
		return st, true
	case p.lookingAt("SHARDING", "TABLE", "RULES"):
		p.i += 3
		return &ShowShardingTableRules{Database: p.fromDatabase()}, true
	case p.lookingAt("SHARDING", "TABLE", "RULE"):
		p.i += 3
		st := &ShowShardingTableRules{Table: p.identifier("table name")}
		st.Database = p.fromDatabase()
		return st, true
	case p.lookingAt("SHARDING", "TABLE", "NODES"):
		p.i += 3
		st := &ShowShardingTableNodes{}
		if t := p.peek(); t.Kind != EOF && !p.isSymbol(";") && !isKeyword(t, "FROM") && !isKeyword(t, "IN") {
			st.Table = p.identifier("table name")
		}
		st.Database = p.fromDatabase()
		return st, true
	case p.lookingAt("SHARDING", "ALGORITHMS"):
		p.i += 2
		return &ShowShardingAlgorithms{Database: p.fromDatabase()}, true
	case p.lookingAt("SHARDING", "KEY", "GENERATORS"):
		p.i += 3
		return &ShowShardingKeyGenerators{Database: p.fromDatabase()}, true
	case p.lookingAt("SHARDING", "KEY", "GENERATE", "STRATEGIES"):
		p.i += 4
		return &ShowShardingKeyGenerateStrategies{Database: p.fromDatabase()}, true
	case p.lookingAt("SHARDING", "KEY", "GENERATE", "STRATEGY"):
		p.i += 4
		st := &ShowShardingKeyGenerateStrategies{Name: p.identifier("key generate strategy name")}
		st.Database = p.fromDatabase()
		return st, true
	case p.lookingAt("DEFAULT", "SHARDING", "STRATEGY"):
		p.i += 3
		return &ShowDefaultShardingStrategy{Database: p.fromDatabase()}, true
	case p.lookingAt("UNUSED", "SHARDING", "ALGORITHMS"):
		p.i += 3
		return &ShowUnusedShardingAlgorithms{Database: p.fromDatabase()}, true
	case p.lookingAt("SHARDING", "AUDITORS"):
		p.i += 2
		return &ShowShardingAuditors{Database: p.fromDatabase()}, true
	case p.lookingAt("UNUSED", "SHARDING", "AUDITORS"):
		p.i += 3
		return &ShowUnusedShardingAuditors{Database: p.fromDatabase()}, true
	case p.lookingAt("UNUSED", "SHARDING", "KEY", "GENERATORS"):
		p.i += 4
		return &ShowUnusedShardingKeyGenerators{Database: p.fromDatabase()}, true
	case p.lookingAt("SHARDING"):
		p.i++
		p.oneOf("TABLE RULES", "TABLE RULE", "TABLE REFERENCE RULES", "TABLE NODES", "ALGORITHMS", "AUDITORS", "KEY GENERATORS", "KEY GENERATE STRATEGIES")
	}
	return nil, false
}
