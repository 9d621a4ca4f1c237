package distsql

import "strings"

// The readwrite-splitting rules' states (SHOW STATUS), single-table
// rules, the global rules, COUNT, and CREATE / DROP DATABASE: upstream's
// RDL and RQL for them (docs/distsql.md lists them; the readwrite-splitting
// rule's own statements are internal/rule/readwrite's).

// ShowReadwriteSplittingStatus is SHOW STATUS FROM READWRITE_SPLITTING
// RULES [FROM db] or ... RULE name [FROM db].
type ShowReadwriteSplittingStatus struct {
	Name     string // "" for every rule
	Database string
}

// LoadSingleTable is LOAD SINGLE TABLE ref[, ref...]: each ref is
// "unit.table", "unit.schema.table", with * for every unit, schema or
// table ("*.*", "ds_0.*", "*.*.*").
type LoadSingleTable struct{ Tables []string }

// UnloadSingleTable is UNLOAD SINGLE TABLE t[, t...], or with All UNLOAD
// ALL SINGLE TABLES (and UNLOAD SINGLE TABLE *).
type UnloadSingleTable struct {
	All    bool
	Tables []string
}

// SetDefaultSingleTableStorageUnit is SET DEFAULT SINGLE TABLE STORAGE
// UNIT = unit | RANDOM: Unit is "" for RANDOM.
type SetDefaultSingleTableStorageUnit struct{ Unit string }

// ShowDefaultSingleTableStorageUnit is SHOW DEFAULT SINGLE TABLE STORAGE
// UNIT [FROM db].
type ShowDefaultSingleTableStorageUnit struct{ Database string }

// ShowSingleTables is SHOW SINGLE TABLES [FROM db] [LIKE 'pattern'] or
// SHOW SINGLE TABLE t [FROM db].
type ShowSingleTables struct {
	Table    string
	Database string
	Like     *string
}

// ShowRulesUsedStorageUnit is SHOW RULES USED STORAGE UNIT unit [FROM db].
type ShowRulesUsedStorageUnit struct {
	Unit     string
	Database string
}

// CountRule is COUNT type RULE [FROM db], or COUNT SINGLE TABLE [FROM db]
// (Type "single"): Type is the rule's lower-case name (sharding,
// readwrite_splitting, encrypt, ...).
type CountRule struct {
	Type     string
	Database string
}

// CreateDatabase is CREATE DATABASE [IF NOT EXISTS] name.
type CreateDatabase struct {
	Name        string
	IfNotExists bool
}

// DropDatabase is DROP DATABASE [IF EXISTS] name.
type DropDatabase struct {
	Name     string
	IfExists bool
}

// Scope implements Statement.
func (st ShowReadwriteSplittingStatus) Scope() Scope { return named(st.Database) }

// Scope implements Statement: the session's database.
func (LoadSingleTable) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (UnloadSingleTable) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (SetDefaultSingleTableStorageUnit) Scope() Scope { return sessionDatabase }

// Scope implements Statement.
func (st ShowDefaultSingleTableStorageUnit) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (st ShowSingleTables) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (st ShowRulesUsedStorageUnit) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (st CountRule) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (st CreateDatabase) Scope() Scope { return Scope{Database: st.Name} }

// Scope implements Statement.
func (st DropDatabase) Scope() Scope { return Scope{Database: st.Name} }

// ruleStatement reads one of this file's statements when the tokens ahead
// start one, and returns nil (having consumed nothing) when they do not.
func (p *parser) ruleStatement() Statement {
	switch {
	case p.keywords("CREATE", "DATABASE"):
		st := &CreateDatabase{IfNotExists: p.keywords("IF", "NOT", "EXISTS")}
		st.Name = p.identifier("database name")
		return st
	case p.keywords("DROP", "DATABASE"):
		st := &DropDatabase{IfExists: p.keywords("IF", "EXISTS")}
		st.Name = p.identifier("database name")
		return st
	case p.keywords("LOAD", "SINGLE", "TABLE"):
		st := &LoadSingleTable{Tables: []string{p.singleTableRef()}}
		for p.symbol(",") {
			st.Tables = append(st.Tables, p.singleTableRef())
		}
		return st
	case p.keywords("UNLOAD", "ALL", "SINGLE", "TABLES"):
		return &UnloadSingleTable{All: true}
	case p.keywords("UNLOAD", "SINGLE", "TABLE"):
		if p.symbol("*") {
			return &UnloadSingleTable{All: true}
		}
		return &UnloadSingleTable{Tables: p.names("table name")}
	case p.keywords("SET", "DEFAULT", "SINGLE", "TABLE", "STORAGE", "UNIT"):
		p.expectSymbol("=")
		if p.keyword("RANDOM") {
			return &SetDefaultSingleTableStorageUnit{}
		}
		return &SetDefaultSingleTableStorageUnit{Unit: p.identOrString("storage unit name")}
	case p.keyword("COUNT"):
		if p.keywords("SINGLE", "TABLE") {
			return &CountRule{Type: "single", Database: p.fromDatabase()}
		}
		t := p.peek()
		if t.Kind != Ident {
			p.fail("rule type expected")
		}
		p.i++
		st := &CountRule{Type: strings.ToLower(t.Text)}
		p.expect("RULE")
		st.Database = p.fromDatabase()
		return st
	case isKeyword(p.peek(), "SHOW"):
		return p.showRule()
	}
	return nil
}

// showRule reads the SHOW statements of this file; nil when SHOW starts
// another one (nothing consumed).
func (p *parser) showRule() Statement {
	show := func(words ...string) bool { return p.keywords(append([]string{"SHOW"}, words...)...) }
	switch {
	case show("STATUS", "FROM", "READWRITE_SPLITTING", "RULES"):
		return &ShowReadwriteSplittingStatus{Database: p.fromDatabase()}
	case show("STATUS", "FROM", "READWRITE_SPLITTING", "RULE"):
		st := &ShowReadwriteSplittingStatus{Name: p.identifier("rule name")}
		st.Database = p.fromDatabase()
		return st
	case show("SINGLE", "TABLES"):
		st := &ShowSingleTables{Database: p.fromDatabase()}
		st.Like = p.like()
		return st
	case show("SINGLE", "TABLE"):
		st := &ShowSingleTables{Table: p.identifier("table name")}
		st.Database = p.fromDatabase()
		return st
	case show("DEFAULT", "SINGLE", "TABLE", "STORAGE", "UNIT"):
		return &ShowDefaultSingleTableStorageUnit{Database: p.fromDatabase()}
	case show("RULES", "USED", "STORAGE", "UNIT"):
		st := &ShowRulesUsedStorageUnit{Unit: p.identOrString("storage unit name")}
		st.Database = p.fromDatabase()
		return st
	}
	return nil
}

// singleTableRef reads a LOAD SINGLE TABLE reference: name or * parts
// joined with dots, returned as typed ("*.*", "ds_0.t_order").
func (p *parser) singleTableRef() string {
	part := func() string {
		if p.symbol("*") {
			return "*"
		}
		return p.identifier("storage unit, schema or table name")
	}
	parts := []string{part()}
	for p.symbol(".") {
		parts = append(parts, part())
	}
	if len(parts) < 2 || len(parts) > 3 {
		p.fail("storage_unit.table or storage_unit.schema.table expected")
	}
	return strings.Join(parts, ".")
}
