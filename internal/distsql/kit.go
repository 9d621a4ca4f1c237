package distsql

import "strings"

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

// Settings are the parenthesised settings of a global rule's ALTER
// (ALTER TRANSACTION RULE (DEFAULT='XA', TYPE(NAME='Narayana',
// PROPERTIES(...))), ...).
type Settings struct {
	// Values holds the settings by upper-case name (DEFAULT, TYPE,
	// PROVIDER, ENABLED, ...; a cache NAME(INITIAL_CAPACITY=n,
	// MAXIMUM_SIZE=n) as NAME.INITIAL_CAPACITY and NAME.MAXIMUM_SIZE), the
	// TYPE(NAME=..., PROPERTIES(...)) segment as TYPE and Properties.
	Values     map[string]Value
	Properties []Property
	// HasProperties tells PROPERTIES() from no PROPERTIES.
	HasProperties bool
}

// Settings reads ( [setting (, setting)*] ), each setting NAME=literal,
// NAME(KEY=literal, ...), TYPE(NAME=..., PROPERTIES(...)) or
// PROPERTIES(...).
func (p *Parser) Settings() Settings {
	pp := p.p
	st := Settings{Values: map[string]Value{}}
	pp.expectSymbol("(")
	if pp.symbol(")") {
		return st
	}
	for {
		t := pp.peek()
		if t.Kind != Ident {
			pp.fail("setting name expected")
		}
		pp.i++
		name := strings.ToUpper(t.Text)
		switch {
		case name == "TYPE" && pp.isSymbol("("):
			tname, props := "", []Property(nil)
			pp.expectSymbol("(")
			for {
				switch {
				case pp.keyword("NAME"):
					pp.expectSymbol("=")
					tname = pp.identOrString("type name")
				case pp.isKeywordNext("PROPERTIES"):
					props = pp.properties()
					st.HasProperties = true
				default:
					pp.oneOf("NAME", "PROPERTIES")
				}
				if !pp.symbol(",") {
					break
				}
			}
			pp.expectSymbol(")")
			st.Values["TYPE"] = Value{Kind: StringValue, Text: tname}
			st.Properties = props
		case name == "PROPERTIES":
			pp.i-- // properties reads the keyword
			st.Properties = pp.properties()
			st.HasProperties = true
		case pp.isSymbol("("):
			// A cache: NAME(INITIAL_CAPACITY=n, MAXIMUM_SIZE=n).
			pp.expectSymbol("(")
			for {
				k := pp.peek()
				if k.Kind != Ident {
					pp.fail("INITIAL_CAPACITY or MAXIMUM_SIZE expected")
				}
				pp.i++
				pp.expectSymbol("=")
				st.Values[name+"."+strings.ToUpper(k.Text)] = pp.literal("cache setting")
				if !pp.symbol(",") {
					break
				}
			}
			pp.expectSymbol(")")
		default:
			pp.expectSymbol("=")
			st.Values[name] = pp.literal(strings.ToLower(name))
		}
		if !pp.symbol(",") {
			break
		}
	}
	pp.expectSymbol(")")
	return st
}

// Cluster is the scope of a statement whose effect reaches beyond one
// database, named what ("ALTER TRANSACTION RULE"): a global rule's
// change, which needs an admin user.
func Cluster(what string) Scope { return cluster(what) }

// Local is the scope of a statement that acts on no database and changes
// nothing: a global rule's query.
var Local = local

// IdentOrString reads an identifier or a string literal or fails naming
// what was expected.
func (p *Parser) IdentOrString(what string) string { return p.p.identOrString(what) }

// OneOf fails naming the alternatives expected here.
func (p *Parser) OneOf(alts ...string) { p.p.oneOf(alts...) }

// Like reads an optional LIKE 'pattern'; nil when absent.
func (p *Parser) Like() *string { return p.p.like() }

// String reads a string literal or fails naming what was expected.
func (p *Parser) String(what string) string { return p.p.str(what) }

// Boolean reads TRUE or FALSE or fails naming what was expected.
func (p *Parser) Boolean(what string) bool { return p.p.boolean(what) }

// AtSymbol reports whether the symbol s is next, followed by the keywords
// kws, consuming nothing.
func (p *Parser) AtSymbol(s string, kws ...string) bool {
	if !p.p.isSymbol(s) {
		return false
	}
	for n, kw := range kws {
		if !isKeyword(p.p.peekAt(n+1), kw) {
			return false
		}
	}
	return true
}
