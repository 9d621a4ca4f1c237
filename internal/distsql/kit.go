package distsql

// The parser kit the rule families read their statements with (see
// internal/rule): a family's Reader gets a *Parser at the start of a
// statement and reads it with the grammar's pieces below, which fail as
// the built-in statements do (a *SyntaxError naming the line and column).

// Reader reads one statement of a rule family when one starts at p; ok is
// false, with nothing consumed, when none does. A Reader fails a
// statement it recognises but cannot read with p.Fail or the pieces that
// expect something.
type Reader func(p *Parser) (st Statement, ok bool)

// Parser is the parser of one statement, as a Reader sees it.
type Parser struct{ p *parser }

// At reports whether the keywords kws are next, consuming nothing.
func (p *Parser) At(kws ...string) bool {
	for n, kw := range kws {
		if !isKeyword(p.p.peekAt(n), kw) {
			return false
		}
	}
	return true
}

// Keywords consumes the keywords kws when all of them are next.
func (p *Parser) Keywords(kws ...string) bool { return p.p.keywords(kws...) }

// Expect consumes the keywords kws or fails naming the first missing one.
func (p *Parser) Expect(kws ...string) { p.p.expect(kws...) }

// Symbol consumes the symbol s ("(", ",", "=") when it is next.
func (p *Parser) Symbol(s string) bool { return p.p.symbol(s) }

// ExpectSymbol consumes the symbol s or fails.
func (p *Parser) ExpectSymbol(s string) { p.p.expectSymbol(s) }

// Identifier reads upstream's identifier (a word, a backtick-quoted name,
// double-quoted text) or fails naming what was expected.
func (p *Parser) Identifier(what string) string { return p.p.identifier(what) }

// Names reads identifier (, identifier)*.
func (p *Parser) Names(what string) []string { return p.p.names(what) }

// IfExists consumes IF EXISTS when it is next.
func (p *Parser) IfExists() bool { return p.p.keywords("IF", "EXISTS") }

// IfNotExists consumes IF NOT EXISTS when it is next.
func (p *Parser) IfNotExists() bool { return p.p.keywords("IF", "NOT", "EXISTS") }

// Algorithm reads TYPE(NAME=type [, PROPERTIES(...)]).
func (p *Parser) Algorithm() Algorithm { return p.p.algorithm() }

// FromDatabase reads an optional FROM db (or IN db); "" when absent.
func (p *Parser) FromDatabase() string { return p.p.fromDatabase() }

// AtEnd reports whether the statement ends here (its end, a ';' or FROM /
// IN db follows).
func (p *Parser) AtEnd() bool {
	t := p.p.peek()
	return t.Kind == EOF || p.p.isSymbol(";") || isKeyword(t, "FROM") || isKeyword(t, "IN")
}

// Fail fails the statement at the next token with the message.
func (p *Parser) Fail(format string, args ...any) { p.p.fail(format, args...) }

// Named is the scope of a statement acting on database db, the session's
// when db is "" (FROM db left out): a family's queries.
func Named(db string) Scope { return named(db) }

// SessionDatabase is the scope of a statement acting on the session's
// database: a family's changes.
var SessionDatabase = sessionDatabase
