package sharding

import (
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// The sharding rule's statements (RDL and RQL), as upstream's
// ShardingDistSQLStatement.g4 has them, read on distsql's parser kit; the
// broadcast rule's are the broadcast family's.

// Strategy is TYPE=type, SHARDING_COLUMN(S)=..., SHARDING_ALGORITHM(...)
// of a DATABASE_STRATEGY, a TABLE_STRATEGY or a default strategy. Type is
// as written (standard, complex, hint, none); Algorithm is nil for none.
type Strategy struct {
	Type      string
	Columns   []string
	Algorithm *distsql.Algorithm
}

// KeyGenerateStrategy is KEY_GENERATE_STRATEGY(COLUMN=c, TYPE(...)).
type KeyGenerateStrategy struct {
	Column    string
	Algorithm distsql.Algorithm
}

// AuditStrategy is AUDIT_STRATEGY(TYPE(...)[, TYPE(...)], ALLOW_HINT_DISABLE=b).
type AuditStrategy struct {
	Auditors         []distsql.Algorithm
	AllowHintDisable bool
}

// TableRule is one table of CREATE or ALTER SHARDING TABLE RULE: the
// table form (DataNodes, optional strategies) or, with StorageUnits, the
// auto-table form (ShardingColumn and Algorithm).
type TableRule struct {
	Table            string
	DataNodes        []string
	DatabaseStrategy *Strategy
	TableStrategy    *Strategy
	StorageUnits     []string
	ShardingColumn   string
	Algorithm        *distsql.Algorithm
	KeyGenerate      *KeyGenerateStrategy
	Audit            *AuditStrategy
}

// Auto reports whether r is the auto-table form.
func (r TableRule) Auto() bool { return len(r.StorageUnits) > 0 }

// CreateTableRule is CREATE SHARDING TABLE RULE [IF NOT EXISTS] rule, ...
type CreateTableRule struct {
	IfNotExists bool
	Rules       []TableRule
}

// AlterTableRule is ALTER SHARDING TABLE RULE rule, ...
type AlterTableRule struct{ Rules []TableRule }

// DropTableRule is DROP SHARDING TABLE RULE [IF EXISTS] t, ...
type DropTableRule struct {
	IfExists bool
	Tables   []string
}

// TableReference is name(t1, t2, ...) of a SHARDING TABLE REFERENCE RULE.
type TableReference struct {
	Name   string
	Tables []string
}

// CreateTableReferenceRule is CREATE SHARDING TABLE REFERENCE RULE [IF
// NOT EXISTS] name(t1, t2), ...
type CreateTableReferenceRule struct {
	IfNotExists bool
	Rules       []TableReference
}

// AlterTableReferenceRule is ALTER SHARDING TABLE REFERENCE RULE name(t1, t2), ...
type AlterTableReferenceRule struct{ Rules []TableReference }

// DropTableReferenceRule is DROP SHARDING TABLE REFERENCE RULE [IF EXISTS] name, ...
type DropTableReferenceRule struct {
	IfExists bool
	Names    []string
}

// CreateDefaultStrategy is CREATE DEFAULT SHARDING DATABASE|TABLE
// STRATEGY [IF NOT EXISTS] (...); Alter is ALTER DEFAULT SHARDING ... (...).
type CreateDefaultStrategy struct {
	Alter       bool
	IfNotExists bool
	Kind        string // DATABASE or TABLE
	Strategy    Strategy
}

// DropDefaultStrategy is DROP DEFAULT SHARDING DATABASE|TABLE STRATEGY
// [IF EXISTS].
type DropDefaultStrategy struct {
	IfExists bool
	Kind     string
}

// DropAlgorithm is DROP SHARDING ALGORITHM [IF EXISTS] name, ...
type DropAlgorithm struct {
	IfExists bool
	Names    []string
}

// DropKeyGenerator is DROP SHARDING KEY GENERATOR [IF EXISTS] name, ...
type DropKeyGenerator struct {
	IfExists bool
	Names    []string
}

// KeyGenerateStrategyDefinition is the body of a (5.5.4) SHARDING KEY
// GENERATE STRATEGY: TABLE=t, COLUMN=c or SEQUENCE=s, then TYPE(...) or
// GENERATOR=name.
type KeyGenerateStrategyDefinition struct {
	Table, Column, Sequence string
	Algorithm               *distsql.Algorithm
	Generator               string
}

// CreateKeyGenerateStrategy is CREATE (or, with Alter, ALTER) SHARDING
// KEY GENERATE STRATEGY [IF NOT EXISTS] name (definition).
type CreateKeyGenerateStrategy struct {
	Alter       bool
	IfNotExists bool
	Name        string
	Definition  KeyGenerateStrategyDefinition
}

// DropKeyGenerateStrategy is DROP SHARDING KEY GENERATE STRATEGY [IF
// EXISTS] name, ...
type DropKeyGenerateStrategy struct {
	IfExists bool
	Names    []string
}

// ShowTableRules is SHOW SHARDING TABLE RULES [FROM db] or SHOW SHARDING
// TABLE RULE t [FROM db].
type ShowTableRules struct {
	Table    string // "" for every table
	Database string
}

// ShowAlgorithms is SHOW SHARDING ALGORITHMS [FROM db].
type ShowAlgorithms struct{ Database string }

// ShowKeyGenerators is SHOW SHARDING KEY GENERATORS [FROM db].
type ShowKeyGenerators struct{ Database string }

// ShowTableReferenceRules is SHOW SHARDING TABLE REFERENCE RULE[S] [name] [FROM db].
type ShowTableReferenceRules struct{ Name, Database string }

// ShowDefaultStrategy is SHOW DEFAULT SHARDING STRATEGY [FROM db].
type ShowDefaultStrategy struct{ Database string }

// ShowKeyGenerateStrategies is SHOW SHARDING KEY GENERATE STRATEGIES |
// STRATEGY name [FROM db].
type ShowKeyGenerateStrategies struct{ Name, Database string }

// ShowUnusedAlgorithms is SHOW UNUSED SHARDING ALGORITHMS [FROM db].
type ShowUnusedAlgorithms struct{ Database string }

// ShowUnusedKeyGenerators is SHOW UNUSED SHARDING KEY GENERATORS [FROM db].
type ShowUnusedKeyGenerators struct{ Database string }

// ShowTableNodes is SHOW SHARDING TABLE NODES [t] [FROM db].
type ShowTableNodes struct{ Table, Database string }

// ShowAuditors is SHOW SHARDING AUDITORS [FROM db].
type ShowAuditors struct{ Database string }

// ShowUnusedAuditors is SHOW UNUSED SHARDING AUDITORS [FROM db].
type ShowUnusedAuditors struct{ Database string }

// ShowTableRulesUsed is SHOW SHARDING TABLE RULES USED ALGORITHM | KEY
// GENERATOR | AUDITOR name [FROM db].
type ShowTableRulesUsed struct {
	// Kind is "ALGORITHM", "KEY GENERATOR" or "AUDITOR".
	Kind           string
	Name, Database string
}

// Scope implements distsql.Statement: the session's database.
func (CreateTableRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (AlterTableRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (DropTableRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (CreateTableReferenceRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (AlterTableReferenceRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (DropTableReferenceRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (CreateDefaultStrategy) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (DropDefaultStrategy) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (DropAlgorithm) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (DropKeyGenerator) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (CreateKeyGenerateStrategy) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (DropKeyGenerateStrategy) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement.
func (st ShowTableRules) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowAlgorithms) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowKeyGenerators) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowTableReferenceRules) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowDefaultStrategy) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowKeyGenerateStrategies) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowUnusedAlgorithms) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowAuditors) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowUnusedAuditors) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowTableRulesUsed) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowUnusedKeyGenerators) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowTableNodes) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Statements names the family's rule changes.
func (family) Statements() string {
	return "CREATE, ALTER and DROP of SHARDING TABLE RULE, SHARDING TABLE REFERENCE RULE, DEFAULT SHARDING STRATEGY " +
		"and SHARDING KEY GENERATE STRATEGY, DROP SHARDING ALGORITHM and SHARDING KEY GENERATOR"
}

// Read reads a sharding rule statement when one starts at p: CREATE,
// ALTER and DROP of the rule's parts and its SHOW statements (COUNT
// SHARDING RULE is distsql's CountRule).
func (family) Read(p *distsql.Parser) (distsql.Statement, bool) {
	for _, verb := range []string{"CREATE", "ALTER", "DROP"} {
		if p.At(verb) {
			return change(p, verb)
		}
	}
	if p.At("SHOW") {
		return show(p)
	}
	return nil, false
}

// change reads a CREATE, ALTER or DROP (verb) of the rule; nothing
// consumed when none starts at p.
func change(p *distsql.Parser, verb string) (distsql.Statement, bool) {
	switch {
	case p.Keywords(verb, "SHARDING", "TABLE", "REFERENCE", "RULE"):
		return referenceRule(p, verb), true
	case p.Keywords(verb, "SHARDING", "TABLE", "RULE"):
		return tableRule(p, verb), true
	case p.Keywords(verb, "DEFAULT", "SHARDING"):
		kind := "DATABASE"
		if p.Keywords("TABLE") {
			kind = "TABLE"
		} else {
			p.Expect("DATABASE")
		}
		p.Expect("STRATEGY")
		if verb == "DROP" {
			return &DropDefaultStrategy{Kind: kind, IfExists: p.IfExists()}, true
		}
		st := &CreateDefaultStrategy{Alter: verb == "ALTER", Kind: kind}
		if verb == "CREATE" {
			st.IfNotExists = p.IfNotExists()
		}
		p.ExpectSymbol("(")
		st.Strategy = strategy(p, true)
		p.ExpectSymbol(")")
		return st, true
	case verb == "DROP" && p.Keywords(verb, "SHARDING", "ALGORITHM"):
		st := &DropAlgorithm{IfExists: p.IfExists()}
		st.Names = p.Names("sharding algorithm name")
		return st, true
	case verb == "DROP" && p.Keywords(verb, "SHARDING", "KEY", "GENERATOR"):
		st := &DropKeyGenerator{IfExists: p.IfExists()}
		st.Names = p.Names("key generator name")
		return st, true
	case p.Keywords(verb, "SHARDING", "KEY", "GENERATE", "STRATEGY"):
		if verb == "DROP" {
			st := &DropKeyGenerateStrategy{IfExists: p.IfExists()}
			st.Names = p.Names("key generate strategy name")
			return st, true
		}
		st := &CreateKeyGenerateStrategy{Alter: verb == "ALTER"}
		if verb == "CREATE" {
			st.IfNotExists = p.IfNotExists()
		}
		st.Name = p.Identifier("key generate strategy name")
		p.ExpectSymbol("(")
		st.Definition = keyGenerateStrategyDefinition(p)
		p.ExpectSymbol(")")
		return st, true
	}
	return nil, false
}

func referenceRule(p *distsql.Parser, verb string) distsql.Statement {
	switch verb {
	case "DROP":
		st := &DropTableReferenceRule{IfExists: p.IfExists()}
		st.Names = p.Names("sharding table reference rule name")
		return st
	case "CREATE":
		st := &CreateTableReferenceRule{IfNotExists: p.IfNotExists()}
		st.Rules = tableReferences(p)
		return st
	}
	return &AlterTableReferenceRule{Rules: tableReferences(p)}
}

// tableReferences reads name(t1, t2, ...) (, name(...))*.
func tableReferences(p *distsql.Parser) []TableReference {
	var out []TableReference
	for {
		r := TableReference{Name: p.Identifier("sharding table reference rule name")}
		p.ExpectSymbol("(")
		r.Tables = p.Names("table name")
		p.ExpectSymbol(")")
		out = append(out, r)
		if !p.Symbol(",") {
			return out
		}
	}
}

func tableRule(p *distsql.Parser, verb string) distsql.Statement {
	switch verb {
	case "DROP":
		st := &DropTableRule{IfExists: p.IfExists()}
		st.Tables = p.Names("table name")
		return st
	case "CREATE":
		st := &CreateTableRule{IfNotExists: p.IfNotExists()}
		st.Rules = tableRules(p)
		return st
	}
	return &AlterTableRule{Rules: tableRules(p)}
}

func tableRules(p *distsql.Parser) []TableRule {
	out := []TableRule{tableRuleDefinition(p)}
	for p.Symbol(",") {
		out = append(out, tableRuleDefinition(p))
	}
	return out
}

// tableRuleDefinition reads t(DATANODES(...)[, DATABASE_STRATEGY(...)]
// [, TABLE_STRATEGY(...)][, KEY_GENERATE_STRATEGY(...)][, AUDIT_STRATEGY(...)])
// or t(STORAGE_UNITS(...), SHARDING_COLUMN=c, TYPE(...)[, KEY_GENERATE_STRATEGY(...)]
// [, AUDIT_STRATEGY(...)]).
func tableRuleDefinition(p *distsql.Parser) TableRule {
	r := TableRule{Table: p.Identifier("table name")}
	p.ExpectSymbol("(")
	switch {
	case p.Keywords("DATANODES"):
		p.ExpectSymbol("(")
		r.DataNodes = append(r.DataNodes, p.String("data node"))
		for p.Symbol(",") {
			r.DataNodes = append(r.DataNodes, p.String("data node"))
		}
		p.ExpectSymbol(")")
		if p.Symbol(",") && p.Keywords("DATABASE_STRATEGY") {
			p.ExpectSymbol("(")
			s := strategy(p, false)
			r.DatabaseStrategy = &s
			p.ExpectSymbol(")")
			p.Symbol(",")
		}
		if p.Keywords("TABLE_STRATEGY") {
			p.ExpectSymbol("(")
			s := strategy(p, false)
			r.TableStrategy = &s
			p.ExpectSymbol(")")
			p.Symbol(",")
		}
	case p.Keywords("STORAGE_UNITS"):
		p.ExpectSymbol("(")
		r.StorageUnits = append(r.StorageUnits, p.IdentOrString("storage unit name"))
		for p.Symbol(",") {
			r.StorageUnits = append(r.StorageUnits, p.IdentOrString("storage unit name"))
		}
		p.ExpectSymbol(")")
		p.ExpectSymbol(",")
		p.Expect("SHARDING_COLUMN")
		p.ExpectSymbol("=")
		r.ShardingColumn = p.Identifier("sharding column")
		p.ExpectSymbol(",")
		a := p.Algorithm()
		r.Algorithm = &a
		p.Symbol(",")
	default:
		p.OneOf("DATANODES", "STORAGE_UNITS")
	}
	if p.Keywords("KEY_GENERATE_STRATEGY") {
		p.ExpectSymbol("(")
		p.Expect("COLUMN")
		p.ExpectSymbol("=")
		k := KeyGenerateStrategy{Column: p.Identifier("key generate column")}
		p.ExpectSymbol(",")
		k.Algorithm = p.Algorithm()
		p.ExpectSymbol(")")
		r.KeyGenerate = &k
		p.Symbol(",")
	}
	if p.Keywords("AUDIT_STRATEGY") {
		p.ExpectSymbol("(")
		a := &AuditStrategy{}
		for p.At("TYPE") {
			a.Auditors = append(a.Auditors, p.Algorithm())
			p.ExpectSymbol(",")
		}
		p.Expect("ALLOW_HINT_DISABLE")
		p.ExpectSymbol("=")
		a.AllowHintDisable = p.Boolean("ALLOW_HINT_DISABLE")
		p.ExpectSymbol(")")
		r.Audit = a
	}
	p.ExpectSymbol(")")
	return r
}

// strategy reads TYPE=type, SHARDING_COLUMN(S)=...,
// SHARDING_ALGORITHM(TYPE(...)); a default strategy (isDefault) may be
// TYPE=none alone.
func strategy(p *distsql.Parser, isDefault bool) Strategy {
	p.Expect("TYPE")
	p.ExpectSymbol("=")
	s := Strategy{Type: p.IdentOrString("strategy type")}
	if strings.EqualFold(s.Type, "none") && (isDefault || p.AtSymbol(")")) {
		return s
	}
	p.ExpectSymbol(",")
	switch {
	case p.Keywords("SHARDING_COLUMN"):
		p.ExpectSymbol("=")
		s.Columns = []string{p.Identifier("sharding column")}
	case p.Keywords("SHARDING_COLUMNS"):
		p.ExpectSymbol("=")
		s.Columns = []string{p.Identifier("sharding column")}
		for p.AtSymbol(",") && !p.AtSymbol(",", "SHARDING_ALGORITHM") {
			p.Symbol(",")
			s.Columns = append(s.Columns, p.Identifier("sharding column"))
		}
	default:
		if !strings.EqualFold(s.Type, "hint") {
			p.OneOf("SHARDING_COLUMN", "SHARDING_COLUMNS")
		}
	}
	if !p.At("SHARDING_ALGORITHM") {
		p.ExpectSymbol(",")
	}
	p.Expect("SHARDING_ALGORITHM")
	p.ExpectSymbol("(")
	a := p.Algorithm()
	s.Algorithm = &a
	p.ExpectSymbol(")")
	return s
}

// keyGenerateStrategyDefinition reads TABLE=t, COLUMN=c | SEQUENCE=s,
// then TYPE(...) or GENERATOR=name.
func keyGenerateStrategyDefinition(p *distsql.Parser) KeyGenerateStrategyDefinition {
	var d KeyGenerateStrategyDefinition
	switch {
	case p.Keywords("TABLE"):
		p.ExpectSymbol("=")
		d.Table = p.Identifier("table name")
		p.ExpectSymbol(",")
		p.Expect("COLUMN")
		p.ExpectSymbol("=")
		d.Column = p.Identifier("column name")
	case p.Keywords("SEQUENCE"):
		p.ExpectSymbol("=")
		d.Sequence = p.IdentOrString("sequence name")
	default:
		p.OneOf("TABLE", "SEQUENCE")
	}
	p.ExpectSymbol(",")
	if p.Keywords("GENERATOR") {
		p.ExpectSymbol("=")
		d.Generator = p.Identifier("key generator name")
		return d
	}
	a := p.Algorithm()
	d.Algorithm = &a
	return d
}

// show reads the rule's SHOW statements; nothing consumed when none
// starts at p.
func show(p *distsql.Parser) (distsql.Statement, bool) {
	switch {
	case p.Keywords("SHOW", "SHARDING", "TABLE", "REFERENCE", "RULES"):
		return &ShowTableReferenceRules{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "SHARDING", "TABLE", "REFERENCE", "RULE"):
		st := &ShowTableReferenceRules{}
		if !p.AtEnd() {
			st.Name = p.Identifier("rule name")
		}
		st.Database = p.FromDatabase()
		return st, true
	case p.Keywords("SHOW", "SHARDING", "TABLE", "RULES", "USED"):
		st := &ShowTableRulesUsed{}
		switch {
		case p.Keywords("ALGORITHM"):
			st.Kind = "ALGORITHM"
		case p.Keywords("KEY", "GENERATOR"):
			st.Kind = "KEY GENERATOR"
		case p.Keywords("AUDITOR"):
			st.Kind = "AUDITOR"
		default:
			p.OneOf("ALGORITHM", "KEY GENERATOR", "AUDITOR")
		}
		st.Name = p.IdentOrString("name")
		st.Database = p.FromDatabase()
		return st, true
	case p.Keywords("SHOW", "SHARDING", "TABLE", "RULES"):
		return &ShowTableRules{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "SHARDING", "TABLE", "RULE"):
		st := &ShowTableRules{Table: p.Identifier("table name")}
		st.Database = p.FromDatabase()
		return st, true
	case p.Keywords("SHOW", "SHARDING", "TABLE", "NODES"):
		st := &ShowTableNodes{}
		if !p.AtEnd() {
			st.Table = p.Identifier("table name")
		}
		st.Database = p.FromDatabase()
		return st, true
	case p.Keywords("SHOW", "SHARDING", "ALGORITHMS"):
		return &ShowAlgorithms{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "SHARDING", "KEY", "GENERATORS"):
		return &ShowKeyGenerators{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "SHARDING", "KEY", "GENERATE", "STRATEGIES"):
		return &ShowKeyGenerateStrategies{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "SHARDING", "KEY", "GENERATE", "STRATEGY"):
		st := &ShowKeyGenerateStrategies{Name: p.Identifier("key generate strategy name")}
		st.Database = p.FromDatabase()
		return st, true
	case p.Keywords("SHOW", "DEFAULT", "SHARDING", "STRATEGY"):
		return &ShowDefaultStrategy{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "UNUSED", "SHARDING", "ALGORITHMS"):
		return &ShowUnusedAlgorithms{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "SHARDING", "AUDITORS"):
		return &ShowAuditors{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "UNUSED", "SHARDING", "AUDITORS"):
		return &ShowUnusedAuditors{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "UNUSED", "SHARDING", "KEY", "GENERATORS"):
		return &ShowUnusedKeyGenerators{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "SHARDING"):
		p.OneOf("TABLE RULES", "TABLE RULE", "TABLE REFERENCE RULES", "TABLE NODES", "ALGORITHMS", "AUDITORS", "KEY GENERATORS", "KEY GENERATE STRATEGIES")
	}
	return nil, false
}
