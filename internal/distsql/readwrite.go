package distsql

import "strings"

// The readwrite-splitting rules' states (SHOW STATUS), SHOW RULES USED
// STORAGE UNIT, COUNT, and CREATE / DROP DATABASE: upstream's
// RDL and RQL for them (docs/distsql.md lists them; the readwrite-splitting
// rule's own statements are internal/rule/readwrite's).

// ShowReadwriteSplittingStatus is SHOW STATUS FROM READWRITE_SPLITTING
// RULES [FROM db] or ... RULE name [FROM db].
type ShowReadwriteSplittingStatus struct {
	Name     string // "" for every rule
	Database string
}

// ShowRulesUsedStorageUnit is SHOW RULES USED STORAGE UNIT unit [FROM db].
type ShowRulesUsedStorageUnit struct {
	Unit     string
	Database string
}

// CountRule is COUNT type RULE [FROM db] (and a family's other COUNT
// forms: COUNT SINGLE TABLE): Type is the rule's lower-case name
// (sharding, readwrite_splitting, encrypt, ...).
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
	case isKeyword(p.peek(), "COUNT") && isKeyword(p.peekAt(2), "RULE"):
		p.i++
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
	case show("RULES", "USED", "STORAGE", "UNIT"):
		st := &ShowRulesUsedStorageUnit{Unit: p.identOrString("storage unit name")}
		st.Database = p.fromDatabase()
		return st
	}
	return nil
}
