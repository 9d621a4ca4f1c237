package distsql

// The encrypt rule statements (RDL and RQL), as upstream 5.5's
// EncryptDistSQLStatement.g4 has them, in the shape of the mask rule's
// (mask.go).

// EncryptColumnItem is a column an encrypt column derives (cipher,
// assisted query, like query): its name and the algorithm that computes
// it. Algorithm is nil for a query column given without its algorithm.
type EncryptColumnItem struct {
	Name      string
	Algorithm *Algorithm
}

// EncryptColumn is (NAME=c, CIPHER=cc [, ASSISTED_QUERY=aq] [,
// LIKE_QUERY=lq], ENCRYPT_ALGORITHM(TYPE(...)) [,
// ASSISTED_QUERY_ALGORITHM(TYPE(...))] [, LIKE_QUERY_ALGORITHM(TYPE(...))])
// of an encrypt rule. AssistedQuery and LikeQuery are nil when not given;
// Cipher's Algorithm is never nil.
type EncryptColumn struct {
	Name                     string
	Cipher                   EncryptColumnItem
	AssistedQuery, LikeQuery *EncryptColumnItem
}

// EncryptRule is one rule definition of CREATE or ALTER ENCRYPT RULE:
// table (COLUMNS(column, ...)).
type EncryptRule struct {
	Table   string
	Columns []EncryptColumn
}

// CreateEncryptRule is CREATE ENCRYPT RULE [IF NOT EXISTS] rule, ...
type CreateEncryptRule struct {
	IfNotExists bool
	Rules       []EncryptRule
}

// AlterEncryptRule is ALTER ENCRYPT RULE rule, ...
type AlterEncryptRule struct{ Rules []EncryptRule }

// DropEncryptRule is DROP ENCRYPT RULE [IF EXISTS] table, ...
type DropEncryptRule struct {
	IfExists bool
	Tables   []string
}

// ShowEncryptRules is SHOW ENCRYPT RULES [table] [FROM db] or SHOW ENCRYPT
// [TABLE] RULE table [FROM db].
type ShowEncryptRules struct {
	Table    string // "" for every table
	Database string
}

// Scope implements Statement: the session's database.
func (CreateEncryptRule) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (AlterEncryptRule) Scope() Scope { return sessionDatabase }

// Scope implements Statement: the session's database.
func (DropEncryptRule) Scope() Scope { return sessionDatabase }

// Scope implements Statement.
func (st ShowEncryptRules) Scope() Scope { return named(st.Database) }

// encryptStatement reads an encrypt rule statement when one starts here;
// ok is false, with nothing consumed, otherwise.
func (p *parser) encryptStatement() (st Statement, ok bool) {
	verb, plural := p.tableRuleVerb("ENCRYPT")
	switch verb {
	case "CREATE":
		st := &CreateEncryptRule{IfNotExists: p.keywords("IF", "NOT", "EXISTS")}
		st.Rules = p.encryptRules()
		return st, true
	case "ALTER":
		return &AlterEncryptRule{Rules: p.encryptRules()}, true
	case "DROP":
		st := &DropEncryptRule{IfExists: p.keywords("IF", "EXISTS")}
		st.Tables = p.names("table name")
		return st, true
	case "SHOW":
		st := &ShowEncryptRules{}
		st.Table, st.Database = p.showTableRule(plural)
		return st, true
	}
	return nil, false
}

// encryptRules reads table (COLUMNS((NAME=c, CIPHER=cc, ...), ...)) (, ...)*.
func (p *parser) encryptRules() []EncryptRule {
	var out []EncryptRule
	p.tableColumnRules(func(table string) { out = append(out, EncryptRule{Table: table}) }, func() {
		r := &out[len(out)-1]
		r.Columns = append(r.Columns, p.encryptColumn())
	})
	return out
}

// encryptColumn reads the inside of an encrypt column's parentheses:
// NAME=c first, then its other settings in any order, each at most once.
func (p *parser) encryptColumn() EncryptColumn {
	p.expect("NAME")
	p.expectSymbol("=")
	c := EncryptColumn{Name: p.identifier("column name")}
	var assisted, like *Algorithm
	var hasAssisted, hasLike bool
	seen := map[string]bool{}
	for p.symbol(",") {
		t := p.peek()
		key := ""
		switch {
		case p.keyword("CIPHER"):
			key = "CIPHER"
			p.expectSymbol("=")
			c.Cipher.Name = p.identifier("cipher column name")
		case p.keyword("ASSISTED_QUERY"), p.keyword("ASSISTED_QUERY_COLUMN"):
			key = "ASSISTED_QUERY"
			p.expectSymbol("=")
			c.AssistedQuery, hasAssisted = &EncryptColumnItem{Name: p.identifier("assisted query column name")}, true
		case p.keyword("LIKE_QUERY"), p.keyword("LIKE_QUERY_COLUMN"):
			key = "LIKE_QUERY"
			p.expectSymbol("=")
			c.LikeQuery, hasLike = &EncryptColumnItem{Name: p.identifier("like query column name")}, true
		case p.keyword("ENCRYPT_ALGORITHM"):
			key = "ENCRYPT_ALGORITHM"
			c.Cipher.Algorithm = p.wrappedAlgorithm()
		case p.keyword("ASSISTED_QUERY_ALGORITHM"):
			key = "ASSISTED_QUERY_ALGORITHM"
			assisted = p.wrappedAlgorithm()
		case p.keyword("LIKE_QUERY_ALGORITHM"):
			key = "LIKE_QUERY_ALGORITHM"
			like = p.wrappedAlgorithm()
		default:
			p.oneOf("CIPHER", "ASSISTED_QUERY", "LIKE_QUERY", "ENCRYPT_ALGORITHM", "ASSISTED_QUERY_ALGORITHM", "LIKE_QUERY_ALGORITHM")
		}
		if seen[key] {
			panic(bail{p.errorf(t, "%s given twice", key)})
		}
		seen[key] = true
	}
	switch {
	case c.Cipher.Name == "":
		p.fail("CIPHER expected")
	case c.Cipher.Algorithm == nil:
		p.fail("ENCRYPT_ALGORITHM expected")
	case assisted != nil && !hasAssisted:
		p.fail("ASSISTED_QUERY_ALGORITHM without ASSISTED_QUERY")
	case like != nil && !hasLike:
		p.fail("LIKE_QUERY_ALGORITHM without LIKE_QUERY")
	}
	if hasAssisted {
		c.AssistedQuery.Algorithm = assisted
	}
	if hasLike {
		c.LikeQuery.Algorithm = like
	}
	return c
}

// wrappedAlgorithm reads (TYPE(NAME=type[, PROPERTIES(...)])) after
// ENCRYPT_ALGORITHM and the like.
func (p *parser) wrappedAlgorithm() *Algorithm {
	p.expectSymbol("(")
	a := p.algorithm()
	p.expectSymbol(")")
	return &a
}
