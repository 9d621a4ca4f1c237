// Package distsql reads the DistSQL statements a shardkeeper node answers
// (SHOW COMPUTE NODES, SET DIST VARIABLE, REGISTER STORAGE UNIT, ...) and
// the statements MySQL and PostgreSQL clients send on connect, following
// Apache ShardingSphere's DistSQL grammar: keywords are case-insensitive,
// identifiers may be quoted with backticks or double quotes, strings with
// single (or double) quotes and MySQL's backslash escapes.
//
// Parse is a hand-written recursive-descent parser over a token slice: it
// reads every token at most once plus a bounded look-ahead, so its time is
// linear in the statement's length.
package distsql

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads one statement, optionally followed by semicolons. It returns
// a pointer to one of the statement types of this package or of a rule
// family whose reader families has (*Empty for a statement of only
// comments and semicolons) or a *SyntaxError. The families' readers are
// tried in order before the statements of this package. Parse is safe for
// concurrent use.
func Parse(sql string, families ...Reader) (Statement, error) {
	if len(sql) > MaxStatementBytes {
		return nil, &SyntaxError{Line: 1, Column: 1, Msg: fmt.Sprintf("statement longer than %d bytes", MaxStatementBytes)}
	}
	toks, err := lex(sql)
	if err != nil {
		return nil, err
	}
	p := &parser{sql: sql, toks: toks, families: families}
	for p.symbol(";") {
	}
	if p.peek().Kind == EOF {
		return &Empty{}, nil
	}
	st, err := p.statement()
	if err != nil {
		return nil, err
	}
	for p.symbol(";") {
	}
	if t := p.peek(); t.Kind != EOF {
		return nil, p.errorf(t, "unexpected %s after the statement", describe(t))
	}
	return st, nil
}

type parser struct {
	sql      string
	toks     []Token
	i        int
	families []Reader
}

// bail is what a parse function panics with; statement recovers it.
type bail struct{ err *SyntaxError }

func (p *parser) statement() (st Statement, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bail)
			if !ok {
				panic(r)
			}
			st, err = nil, b.err
		}
	}()
	return p.top(), nil
}

func (p *parser) peek() Token { return p.toks[p.i] }

func (p *parser) peekAt(n int) Token {
	if p.i+n >= len(p.toks) {
		return p.toks[len(p.toks)-1]
	}
	return p.toks[p.i+n]
}

func (p *parser) next() Token {
	t := p.toks[p.i]
	if t.Kind != EOF {
		p.i++
	}
	return t
}

func (p *parser) errorf(t Token, format string, args ...any) *SyntaxError {
	return syntaxErrorAt(p.sql, t.Pos, fmt.Sprintf(format, args...))
}

func (p *parser) fail(format string, args ...any) {
	panic(bail{p.errorf(p.peek(), format, args...)})
}

// isKeyword reports whether t is the bare word kw (upper case).
func isKeyword(t Token, kw string) bool { return t.Kind == Ident && strings.EqualFold(t.Text, kw) }

// keyword consumes the keyword kw if it is next.
func (p *parser) keyword(kw string) bool {
	if isKeyword(p.peek(), kw) {
		p.i++
		return true
	}
	return false
}

// keywords consumes the keyword sequence kws if all of it is next.
func (p *parser) keywords(kws ...string) bool {
	for n, kw := range kws {
		if !isKeyword(p.peekAt(n), kw) {
			return false
		}
	}
	p.i += len(kws)
	return true
}

// expect consumes the keywords kws or fails naming the first missing one.
func (p *parser) expect(kws ...string) {
	for _, kw := range kws {
		if !p.keyword(kw) {
			p.fail("%s expected", kw)
		}
	}
}

func (p *parser) symbol(s string) bool {
	if t := p.peek(); t.Kind == Symbol && t.Text == s {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectSymbol(s string) {
	if !p.symbol(s) {
		p.fail("'%s' expected", s)
	}
}

// oneOf fails with the alternatives the grammar allows at this point.
func (p *parser) oneOf(alts ...string) {
	p.fail("%s expected", strings.Join(alts, " or "))
}

func describe(t Token) string {
	switch t.Kind {
	case EOF:
		return "end of statement"
	case Symbol:
		return "'" + t.Text + "'"
	default:
		return fmt.Sprintf("%s '%s'", t.Kind, t.Text)
	}
}

// identifier reads upstream's distSQLIdentifier: a word, a backtick-quoted
// name or double-quoted text.
func (p *parser) identifier(what string) string {
	t := p.peek()
	switch t.Kind {
	case Ident, QuotedIdent, DoubleQuoted:
		p.i++
		return t.Text
	}
	p.fail("%s expected", what)
	return ""
}

// str reads upstream's STRING_: single- or double-quoted text.
func (p *parser) str(what string) string {
	t := p.peek()
	if t.Kind == String || t.Kind == DoubleQuoted {
		p.i++
		return t.Text
	}
	p.fail("%s expected (a quoted string)", what)
	return ""
}

// identOrString reads upstream's IDENTIFIER_ | STRING_ (instance ids,
// variable names).
func (p *parser) identOrString(what string) string {
	t := p.peek()
	switch t.Kind {
	case Ident, QuotedIdent, DoubleQuoted, String:
		p.i++
		return t.Text
	}
	p.fail("%s expected", what)
	return ""
}

// integer reads an unsigned integer that fits an int64.
func (p *parser) integer(what string) int64 {
	t := p.peek()
	if t.Kind != Number || strings.Contains(t.Text, ".") {
		p.fail("%s expected (an integer)", what)
	}
	n, err := strconv.ParseInt(t.Text, 10, 64)
	if err != nil {
		p.fail("%s out of range", what)
	}
	p.i++
	return n
}

// literal reads upstream's literal: a string, an optionally negative
// integer, TRUE or FALSE.
func (p *parser) literal(what string) Value {
	t := p.peek()
	switch {
	case t.Kind == String || t.Kind == DoubleQuoted:
		p.i++
		return Value{Kind: StringValue, Text: t.Text}
	case t.Kind == Number:
		p.i++
		return Value{Kind: IntValue, Text: t.Text}
	case t.Kind == Symbol && t.Text == "-" && p.peekAt(1).Kind == Number:
		p.i += 2
		return Value{Kind: IntValue, Text: "-" + p.toks[p.i-1].Text}
	case isKeyword(t, "TRUE") || isKeyword(t, "FALSE"):
		p.i++
		return Value{Kind: BoolValue, Text: strings.ToLower(t.Text)}
	}
	p.fail("%s expected (a string, a number, TRUE or FALSE)", what)
	return Value{}
}

// like reads an optional LIKE 'pattern'.
func (p *parser) like() *string {
	if !p.keyword("LIKE") {
		return nil
	}
	s := p.str("LIKE pattern")
	return &s
}

// fromDatabase reads an optional FROM db (or IN db).
func (p *parser) fromDatabase() string {
	if p.keyword("FROM") || p.keyword("IN") {
		return p.identifier("database name")
	}
	return ""
}

func (p *parser) top() Statement {
	t := p.peek()
	if t.Kind != Ident {
		p.fail("statement expected")
	}
	if st, ok := p.noEngine(); ok { // catalog.go
		return st
	}
	if st, ok := p.readwriteStatus(); ok { // catalog.go
		return st
	}
	if st, ok := p.ral(); ok { // ral.go
		return st
	}
	if st := p.ruleStatement(); st != nil { // readwrite.go
		return st
	}
	for _, read := range p.families {
		if st, ok := read(&Parser{p}); ok {
			return st
		}
	}
	switch strings.ToUpper(t.Text) {
	case "SHOW":
		p.i++
		return p.show()
	case "SET":
		p.i++
		return p.set()
	case "ENABLE":
		p.i++
		p.expect("COMPUTE", "NODE")
		return &EnableComputeNode{InstanceID: p.identOrString("instance id")}
	case "DISABLE":
		p.i++
		p.expect("COMPUTE", "NODE")
		return &DisableComputeNode{InstanceID: p.identOrString("instance id")}
	case "LABEL", "RELABEL":
		p.i++
		p.expect("COMPUTE", "NODE")
		st := &LabelComputeNode{InstanceID: p.identOrString("instance id"), Relabel: strings.EqualFold(t.Text, "RELABEL")}
		p.expect("WITH")
		st.Labels = p.labels()
		return st
	case "UNLABEL":
		p.i++
		p.expect("COMPUTE", "NODE")
		st := &UnlabelComputeNode{InstanceID: p.identOrString("instance id")}
		if p.keyword("WITH") {
			st.Labels = p.labels()
		}
		return st
	case "LOCK":
		p.i++
		return p.lockCluster()
	case "UNLOCK":
		p.i++
		p.expect("CLUSTER")
		st := &UnlockCluster{}
		if p.keyword("TIMEOUT") {
			st.TimeoutMillis = p.integer("TIMEOUT milliseconds")
		}
		return st
	case "FORCE", "REFRESH":
		st := &RefreshDatabaseMetadata{Force: p.keyword("FORCE")}
		p.expect("REFRESH", "DATABASE", "METADATA")
		if p.peek().Kind != EOF && !p.isSymbol(";") {
			st.Database = p.identifier("database name")
		}
		return st
	case "EXPORT":
		p.i++
		return p.export()
	case "IMPORT":
		p.i++
		return p.importStatement()
	case "REGISTER":
		p.i++
		p.expect("STORAGE", "UNIT")
		st := &RegisterStorageUnit{IfNotExists: p.keywords("IF", "NOT", "EXISTS")}
		st.Units = p.storageUnits()
		return st
	case "ALTER":
		p.i++
		p.expect("STORAGE", "UNIT")
		return &AlterStorageUnit{Units: p.storageUnits()}
	case "UNREGISTER":
		p.i++
		p.expect("STORAGE", "UNIT")
		st := &UnregisterStorageUnit{IfExists: p.keywords("IF", "EXISTS")}
		st.Names = append(st.Names, p.identifier("storage unit name"))
		for p.symbol(",") {
			st.Names = append(st.Names, p.identifier("storage unit name"))
		}
		if p.keyword("IGNORE") {
			// IGNORE SINGLE TABLES, IGNORE BROADCAST TABLES, IGNORE SINGLE,
			// BROADCAST TABLES (either order).
			for {
				if p.keyword("BROADCAST") {
					st.IgnoreBroadcastTables = true
				} else {
					p.expect("SINGLE")
					st.IgnoreSingleTables = true
				}
				if !p.symbol(",") {
					break
				}
			}
			p.expect("TABLES")
		}
		return st
	case "KILL":
		p.i++
		st := &Kill{}
		if p.keyword("QUERY") {
			st.Query = true
		} else {
			p.keyword("CONNECTION")
		}
		t := p.peek()
		switch t.Kind {
		case Ident, QuotedIdent, DoubleQuoted, String, Number:
			p.i++
			st.ProcessID = t.Text
		default:
			p.fail("process id expected")
		}
		return st
	case "SELECT":
		p.i++
		return p.selectStatement()
	case "USE":
		p.i++
		return &Use{Database: p.identifier("database name")}
	case "BEGIN", "START":
		p.i++
		if strings.EqualFold(t.Text, "START") {
			p.expect("TRANSACTION")
		} else {
			p.keyword("WORK")
			p.keyword("TRANSACTION")
		}
		return &Transaction{Verb: "begin"}
	case "COMMIT", "ROLLBACK":
		p.i++
		p.keyword("WORK")
		p.keyword("TRANSACTION")
		return &Transaction{Verb: strings.ToLower(t.Text)}
	}
	p.fail("unknown statement %s", strings.ToUpper(t.Text))
	return nil
}

func (p *parser) isSymbol(s string) bool {
	t := p.peek()
	return t.Kind == Symbol && t.Text == s
}

// labels reads label (, label)*: upstream's label is an IDENTIFIER_
// (a word or a backtick-quoted name); quoted strings are accepted too.
func (p *parser) labels() []string {
	out := []string{p.identOrString("label")}
	for p.symbol(",") {
		out = append(out, p.identOrString("label"))
	}
	return out
}

func (p *parser) show() Statement {
	switch {
	case p.keyword("COMPUTE"):
		switch {
		case p.keyword("NODES"):
			return &ShowComputeNodes{}
		case p.keyword("NODE"):
			switch {
			case p.keyword("INFO"):
				return &ShowComputeNodeInfo{}
			case p.keyword("MODE"):
				return &ShowComputeNodeMode{}
			}
			p.oneOf("INFO", "MODE")
		}
		p.oneOf("NODES", "NODE")
	case p.keyword("TEMP"):
		p.expect("DIST", "VARIABLES")
		return &ShowDistVariables{Temp: true, Like: p.like()}
	case p.keyword("DIST"):
		switch {
		case p.keyword("VARIABLES"):
			return &ShowDistVariables{Like: p.like()}
		case p.keyword("VARIABLE"):
			p.expect("WHERE", "NAME")
			p.expectSymbol("=")
			return &ShowDistVariable{Name: p.identOrString("variable name")}
		}
		p.oneOf("VARIABLES", "VARIABLE")
	case p.keywords("STORAGE", "UNITS"):
		st := &ShowStorageUnits{Database: p.fromDatabase(), Like: p.like()}
		if p.keyword("WHERE") {
			p.expect("USAGE_COUNT")
			p.expectSymbol("=")
			n := p.integer("usage count")
			st.UsageCount = &n
		}
		return st
	case p.keywords("KEY", "GENERATE", "ALGORITHM", "PLUGINS"):
		return &ShowKeyGenerateAlgorithmPlugins{}
	case p.keyword("PROCESSLIST"):
		return &ShowProcesslist{}
	case p.keywords("FULL", "PROCESSLIST"):
		return &ShowProcesslist{Full: true}
	case p.keywords("NEXT", "KEYS"):
		st := &ShowNextKeys{Count: 1}
		if p.keyword("COUNT") {
			st.Count = p.integer("COUNT")
		}
		return st
	case p.keyword("DATABASES") || p.keyword("SCHEMAS"):
		return &ShowDatabases{Like: p.like()}
	case p.keywords("LOGICAL", "TABLES"), p.keywords("FULL", "LOGICAL", "TABLES"):
		st := &ShowLogicalTables{Full: isKeyword(p.toks[p.i-3], "FULL"), Database: p.fromDatabase()}
		st.Like = p.like()
		return st
	case p.keywords("FULL", "TABLES"):
		st := &ShowTables{Full: true, Database: p.fromDatabase()}
		st.Like = p.like()
		return st
	case p.keyword("TABLES"):
		st := &ShowTables{Database: p.fromDatabase()}
		st.Like = p.like()
		return st
	case p.keyword("WARNINGS"):
		return &ShowWarnings{}
	case p.keyword("VARIABLES"),
		p.keywords("SESSION", "VARIABLES"),
		p.keywords("GLOBAL", "VARIABLES"),
		p.keywords("LOCAL", "VARIABLES"):
		return &ShowVariables{Like: p.like()}
	}
	// PostgreSQL's SHOW name (SHOW server_version, SHOW search_path).
	if t, n := p.peek(), p.peekAt(1); (t.Kind == Ident || t.Kind == QuotedIdent || t.Kind == DoubleQuoted) &&
		(n.Kind == EOF || n.Kind == Symbol && n.Text == ";") {
		p.i++
		return &ShowVariables{Name: strings.ToLower(t.Text)}
	}
	p.fail("unknown SHOW statement")
	return nil
}

func (p *parser) set() Statement {
	if p.keywords("DIST", "VARIABLE") {
		st := &SetDistVariable{Name: p.identOrString("variable name")}
		p.expectSymbol("=")
		st.Value = p.literal("variable value")
		return st
	}
	st := &SetVariables{}
	for {
		st.Assignments = append(st.Assignments, p.assignment())
		if !p.symbol(",") {
			return st
		}
	}
}

// assignment reads one client SET assignment.
func (p *parser) assignment() Assignment {
	var a Assignment
	switch {
	case p.keyword("NAMES"):
		a.Name = "names"
		a.Value = p.setValue()
		if p.keyword("COLLATE") {
			a.Collate = p.setValue().Text
		}
		return a
	case p.keywords("CHARACTER", "SET"), p.keyword("CHARSET"):
		a.Name = "character_set"
		a.Value = p.setValue()
		return a
	}
	t := p.peek()
	switch {
	case t.Kind == SysVar:
		p.i++
		a.Scope, a.Name = splitScope(t.Text)
	case t.Kind == UserVar:
		p.i++
		a.Name = strings.ToLower(t.Text)
		a.Scope = "user"
	default:
		for _, scope := range []string{"SESSION", "GLOBAL", "LOCAL", "PERSIST"} {
			next := p.peekAt(1)
			if isKeyword(t, scope) && next.Kind != Symbol {
				p.i++
				a.Scope = strings.ToLower(scope)
				break
			}
		}
		if p.keywords("TIME", "ZONE") {
			a.Name = "time_zone"
			a.Value = p.setValue()
			return a
		}
		if p.keywords("TRANSACTION") {
			// SET [SESSION] TRANSACTION ISOLATION LEVEL ... / READ ONLY
			a.Name = "transaction"
			var words []string
			for t := p.peek(); t.Kind == Ident; t = p.peek() {
				p.i++
				words = append(words, strings.ToUpper(t.Text))
				if p.isSymbol(",") {
					p.i++
					words = append(words, ",")
				}
			}
			a.Value = Value{Kind: WordValue, Text: strings.Join(words, " ")}
			return a
		}
		a.Name = strings.ToLower(p.identifier("variable name"))
		for p.symbol(".") {
			a.Name += "." + strings.ToLower(p.identifier("variable name"))
		}
	}
	if !p.symbol("=") && !p.symbol(":=") && !p.keyword("TO") {
		p.oneOf("'='", "TO")
	}
	if t := p.peek(); t.Kind == Ident && p.peekAt(1).Kind == Symbol && p.peekAt(1).Text == "(" {
		a.Expr = p.expr(0)
		return a
	}
	a.Value = p.setValue()
	for p.symbol(",") {
		// PostgreSQL list values: SET search_path = a, b. A comma
		// followed by another assignment ends the value instead.
		if p.assignmentNext() {
			p.i--
			break
		}
		a.Value.Text += ", " + p.setValue().Text
	}
	return a
}

// setValue reads a client SET value: a literal, a word (ON, utf8mb4,
// DEFAULT), a variable or NULL.
func (p *parser) setValue() Value {
	t := p.peek()
	switch t.Kind {
	case String, Number:
		return p.literal("value")
	case Symbol:
		if t.Text == "-" || t.Text == "+" {
			p.i++
			n := p.integer("value")
			if t.Text == "-" {
				n = -n
			}
			return Value{Kind: IntValue, Text: strconv.FormatInt(n, 10)}
		}
	case Ident, QuotedIdent, DoubleQuoted:
		p.i++
		switch {
		case t.Kind != Ident:
			return Value{Kind: StringValue, Text: t.Text}
		case strings.EqualFold(t.Text, "TRUE"), strings.EqualFold(t.Text, "FALSE"):
			return Value{Kind: BoolValue, Text: strings.ToLower(t.Text)}
		case strings.EqualFold(t.Text, "NULL"):
			return Value{Kind: NullValue}
		}
		return Value{Kind: WordValue, Text: t.Text}
	case SysVar, UserVar:
		p.i++
		return Value{Kind: WordValue, Text: "@" + t.Text}
	}
	p.fail("value expected")
	return Value{}
}

func splitScope(name string) (scope, rest string) {
	name = strings.ToLower(name)
	for _, s := range []string{"session.", "global.", "local.", "persist."} {
		if strings.HasPrefix(name, s) {
			return strings.TrimSuffix(s, "."), name[len(s):]
		}
	}
	return "", name
}

func (p *parser) lockCluster() Statement {
	p.expect("CLUSTER", "WITH")
	st := &LockCluster{}
	if p.keyword("LOCK_STRATEGY") {
		// LOCK_STRATEGY(TYPE(NAME='WRITE')) or LOCK_STRATEGY(TYPE='WRITE')
		p.expectSymbol("(")
		p.expect("TYPE")
		if p.symbol("=") {
			st.Strategy = strings.ToUpper(p.str("lock strategy name"))
		} else {
			p.expectSymbol("(")
			p.expect("NAME")
			p.expectSymbol("=")
			st.Strategy = strings.ToUpper(p.str("lock strategy name"))
			if p.symbol(",") {
				p.properties()
			}
			p.expectSymbol(")")
		}
		p.expectSymbol(")")
	} else {
		st.Strategy = strings.ToUpper(p.identOrString("lock strategy (WRITE or READ_WRITE)"))
	}
	if p.keyword("TIMEOUT") {
		st.TimeoutMillis = p.integer("TIMEOUT milliseconds")
	}
	return st
}

func (p *parser) export() Statement {
	switch {
	case p.keywords("DATABASE", "CONFIGURATION"):
		st := &ExportDatabaseConfiguration{}
		if p.keyword("FROM") {
			st.Database = p.identifier("database name")
		}
		if p.keywords("TO", "FILE") {
			st.File = p.str("file path")
		}
		return st
	case p.keyword("METADATA"):
		st := &ExportMetadata{}
		if p.keywords("TO", "FILE") {
			st.File = p.str("file path")
		}
		return st
	}
	p.oneOf("DATABASE CONFIGURATION", "METADATA")
	return nil
}

func (p *parser) importStatement() Statement {
	switch {
	case p.keywords("DATABASE", "CONFIGURATION"):
		p.expect("FROM", "FILE")
		return &ImportDatabaseConfiguration{File: p.str("file path")}
	case p.keyword("METADATA"):
		if p.keywords("FROM", "FILE") {
			return &ImportMetadata{File: p.str("file path")}
		}
		return &ImportMetadata{Value: p.str("metadata (a Base64 string) or FROM FILE")}
	}
	p.oneOf("DATABASE CONFIGURATION", "METADATA")
	return nil
}

// storageUnits reads storageUnitDefinition (, storageUnitDefinition)*.
func (p *parser) storageUnits() []StorageUnit {
	units := []StorageUnit{p.storageUnit()}
	for p.symbol(",") {
		units = append(units, p.storageUnit())
	}
	return units
}

// storageUnit reads name(HOST=..., PORT=..., DB=... | URL=..., USER=...
// [, PASSWORD=...] [, PROPERTIES(...)]).
func (p *parser) storageUnit() StorageUnit {
	u := StorageUnit{Name: p.identifier("storage unit name")}
	p.expectSymbol("(")
	switch {
	case p.keyword("HOST"):
		p.expectSymbol("=")
		u.Host = p.str("HOST")
		p.expectSymbol(",")
		p.expect("PORT")
		p.expectSymbol("=")
		port := p.integer("PORT")
		if port < 1 || port > 65535 {
			p.i--
			p.fail("PORT must be between 1 and 65535")
		}
		u.Port = int(port)
		p.expectSymbol(",")
		p.expect("DB")
		p.expectSymbol("=")
		u.DB = p.str("DB")
	case p.keyword("URL"):
		p.expectSymbol("=")
		u.URL = p.str("URL")
	default:
		p.oneOf("HOST", "URL")
	}
	p.expectSymbol(",")
	p.expect("USER")
	p.expectSymbol("=")
	u.User = p.str("USER")
	for p.symbol(",") {
		switch {
		case !u.HasPassword && u.Properties == nil && p.keyword("PASSWORD"):
			p.expectSymbol("=")
			u.Password, u.HasPassword = p.str("PASSWORD"), true
		case u.Properties == nil && p.isKeywordNext("PROPERTIES"):
			u.Properties = p.properties()
		default:
			if u.Properties == nil {
				p.oneOf("PASSWORD", "PROPERTIES")
			}
			p.fail("')' expected")
		}
	}
	p.expectSymbol(")")
	return u
}

func (p *parser) isKeywordNext(kw string) bool { return isKeyword(p.peek(), kw) }

// properties reads PROPERTIES([key=value(, key=value)*]).
func (p *parser) properties() []Property {
	p.expect("PROPERTIES")
	p.expectSymbol("(")
	props := []Property{}
	if p.symbol(")") {
		return props
	}
	for {
		key := p.str("property key")
		p.expectSymbol("=")
		props = append(props, Property{Key: key, Value: p.literal("property value")})
		if !p.symbol(",") {
			break
		}
	}
	p.expectSymbol(")")
	return props
}

// maxSelectDepth bounds nested function calls in SELECT.
const maxSelectDepth = 16

func (p *parser) selectStatement() Statement {
	st := &Select{Limit: -1}
	for {
		start := p.peek().Pos
		item := SelectItem{Expr: p.expr(0)}
		item.Text = strings.TrimSpace(p.sql[start:p.peek().Pos])
		if p.keyword("AS") {
			item.Alias = p.identOrString("alias")
		} else if t := p.peek(); t.Kind == QuotedIdent || t.Kind == DoubleQuoted || t.Kind == String ||
			t.Kind == Ident && !isKeyword(t, "LIMIT") && !isKeyword(t, "FROM") {
			p.i++
			item.Alias = t.Text
		}
		st.Items = append(st.Items, item)
		if !p.symbol(",") {
			break
		}
	}
	if p.keyword("FROM") {
		p.expect("DUAL")
	}
	if p.keyword("LIMIT") {
		st.Limit = p.integer("LIMIT")
		if p.symbol(",") {
			// LIMIT offset, count
			st.Limit = p.integer("LIMIT count")
		}
	}
	return st
}

func (p *parser) expr(depth int) Expr {
	if depth > maxSelectDepth {
		p.fail("expression nested too deeply")
	}
	t := p.peek()
	switch t.Kind {
	case String, Number:
		return Literal{Value: p.literal("value")}
	case Symbol:
		if t.Text == "-" && p.peekAt(1).Kind == Number {
			return Literal{Value: p.literal("value")}
		}
	case SysVar:
		p.i++
		scope, name := splitScope(t.Text)
		return Variable{Name: name, Scope: scope, System: true}
	case UserVar:
		p.i++
		return Variable{Name: strings.ToLower(t.Text)}
	case Ident:
		switch {
		case isKeyword(t, "TRUE"), isKeyword(t, "FALSE"):
			return Literal{Value: p.literal("value")}
		case isKeyword(t, "NULL"):
			p.i++
			return Literal{Value: Value{Kind: NullValue}}
		}
		p.i++
		name := t.Text
		for p.isSymbol(".") && p.peekAt(1).Kind == Ident {
			p.i++
			name = p.next().Text
		}
		call := Call{Name: strings.ToLower(name)}
		if !p.symbol("(") {
			// CURRENT_USER, CURRENT_DATE and the like without parentheses.
			return call
		}
		if p.symbol(")") {
			return call
		}
		for {
			call.Args = append(call.Args, p.expr(depth+1))
			if !p.symbol(",") {
				break
			}
		}
		p.expectSymbol(")")
		return call
	}
	p.fail("expression expected")
	return nil
}

// assignmentNext reports whether the tokens after a comma start another
// assignment rather than continue a list value.
func (p *parser) assignmentNext() bool {
	t, n := p.peek(), p.peekAt(1)
	switch {
	case t.Kind == SysVar || t.Kind == UserVar:
		return true
	case n.Kind == Symbol && (n.Text == "=" || n.Text == ":="), isKeyword(n, "TO"):
		return true
	case isKeyword(t, "NAMES"), isKeyword(t, "CHARSET"), isKeyword(t, "CHARACTER") && isKeyword(n, "SET"):
		return true
	}
	for _, scope := range []string{"SESSION", "GLOBAL", "LOCAL", "PERSIST"} {
		if isKeyword(t, scope) && n.Kind == Ident {
			return true
		}
	}
	return false
}
