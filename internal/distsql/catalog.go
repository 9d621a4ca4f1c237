package distsql

import "strings"

// ShowLogicalTables is upstream's SHOW [FULL] LOGICAL TABLES [FROM db]
// [LIKE 'pattern']: the logic tables of a database.
type ShowLogicalTables struct {
	Full     bool
	Database string
	Like     *string
}

// NoEngine is a statement of upstream's that needs what a shardkeeper
// node has not: a SQL engine (PREVIEW, PARSE, FORMAT) or data migration
// and streaming (MIGRATE TABLE, SHOW MIGRATION LIST, START MIGRATION, SHOW
// STREAMING LIST, ...). The console answers it with an error naming it.
type NoEngine struct {
	// Statement is the statement's leading words, upper case ("PREVIEW",
	// "START MIGRATION").
	Statement string
	// Migration is true for the migration and streaming statements.
	Migration bool
}

// Scope implements Statement.
func (st ShowLogicalTables) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (NoEngine) Scope() Scope { return local }

// migrationVerbs start upstream's migration and streaming statements,
// whose second word is MIGRATION or STREAMING.
var migrationVerbs = map[string]bool{"SHOW": true, "START": true, "STOP": true, "COMMIT": true, "ROLLBACK": true,
	"CHECK": true, "DROP": true, "REGISTER": true, "UNREGISTER": true, "ALTER": true, "CREATE": true}

// noEngine reads a NoEngine statement when the tokens start one: it takes
// every remaining token (their grammar does not matter here).
func (p *parser) noEngine() (Statement, bool) {
	first := strings.ToUpper(p.peek().Text)
	var words []string
	for n := 0; n < 4; n++ {
		t := p.peekAt(n)
		if t.Kind != Ident {
			break
		}
		words = append(words, strings.ToUpper(t.Text))
	}
	st := &NoEngine{}
	switch {
	case first == "PREVIEW" || first == "PARSE" || first == "FORMAT":
		st.Statement = first
	case first == "MIGRATE":
		st.Statement, st.Migration = "MIGRATE TABLE", true
	case migrationVerbs[first]:
		for i, w := range words {
			if w == "MIGRATION" || w == "STREAMING" {
				st.Statement, st.Migration = strings.Join(words[:i+1], " "), true
				break
			}
			if i >= 1 { // the second word at the latest
				break
			}
		}
		if st.Statement == "" {
			return nil, false
		}
	default:
		return nil, false
	}
	for p.peek().Kind != EOF {
		p.i++
	}
	return st, true
}

// AlterReadwriteSplittingStatus is upstream's ALTER READWRITE_SPLITTING
// RULE group ENABLE|DISABLE unit [FROM db]: a read data source's state.
type AlterReadwriteSplittingStatus struct {
	Group, Unit, Database string
	Enable                bool
}

// Scope implements Statement.
func (st AlterReadwriteSplittingStatus) Scope() Scope { return named(st.Database) }

// readwriteStatus reads ALTER READWRITE_SPLITTING RULE g ENABLE|DISABLE u
// [FROM db] when the tokens start it.
func (p *parser) readwriteStatus() (Statement, bool) {
	if !isKeyword(p.peekAt(0), "ALTER") || !isKeyword(p.peekAt(1), "READWRITE_SPLITTING") || !isKeyword(p.peekAt(2), "RULE") ||
		!isKeyword(p.peekAt(4), "ENABLE") && !isKeyword(p.peekAt(4), "DISABLE") {
		return nil, false
	}
	p.i += 3
	st := &AlterReadwriteSplittingStatus{Group: p.identifier("rule name")}
	st.Enable = p.keyword("ENABLE")
	if !st.Enable {
		p.expect("DISABLE")
	}
	st.Unit = p.identOrString("storage unit name")
	st.Database = p.fromDatabase()
	return st, true
}
