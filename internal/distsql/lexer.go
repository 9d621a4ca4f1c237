package distsql

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Kind is the kind of a token.
type Kind int

// The token kinds. Keywords are Ident tokens: a word is a keyword only
// where the grammar expects that keyword, as in upstream's grammar, so
// that most keywords remain usable as names.
const (
	EOF          Kind = iota
	Ident             // a bare word: letters, digits, '_' and '$', not all digits
	QuotedIdent       // `name`: Text is the name without the backticks
	DoubleQuoted      // "text": an identifier or a string, as upstream's DOUBLE_QUOTED_TEXT
	String            // 'text' with its escapes decoded
	Number            // decimal digits, with an optional fraction
	SysVar            // @@[scope.]name: Text is what follows @@
	UserVar           // @name: Text is what follows @
	Symbol            // punctuation: ( ) , = ; . * - + :=
)

func (k Kind) String() string {
	switch k {
	case EOF:
		return "end of statement"
	case Ident, QuotedIdent:
		return "identifier"
	case DoubleQuoted:
		return "double-quoted text"
	case String:
		return "string"
	case Number:
		return "number"
	case SysVar:
		return "system variable"
	case UserVar:
		return "user variable"
	default:
		return "symbol"
	}
}

// Token is one lexical token of a statement.
type Token struct {
	Kind Kind
	// Text is the token's value: the word, the decoded string or the
	// quoted name without its quotes, the digits, the symbol.
	Text string
	// Pos is the byte offset of the token's first character.
	Pos int
}

// MaxStatementBytes bounds the statements Parse accepts: a longer input
// is refused before it is lexed.
const MaxStatementBytes = 1 << 20

// lex splits sql into tokens, ending with an EOF token. Comments (`-- `,
// `#`, `/* */`) are skipped. It returns a *SyntaxError for an unterminated
// quote or comment and for a character no token starts with.
func lex(sql string) ([]Token, error) {
	var toks []Token
	i := 0
	for {
		// Skip white space and comments.
		for i < len(sql) {
			c := sql[i]
			switch {
			case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
				i++
				continue
			case c == '#':
				i = skipLine(sql, i)
				continue
			case c == '-' && strings.HasPrefix(sql[i:], "--") && (i+2 == len(sql) || isSpace(sql[i+2])):
				i = skipLine(sql, i)
				continue
			case c == '/' && strings.HasPrefix(sql[i:], "/*"):
				end := strings.Index(sql[i+2:], "*/")
				if end < 0 {
					return nil, syntaxErrorAt(sql, i, "unterminated comment")
				}
				i += 2 + end + 2
				continue
			}
			break
		}
		if i >= len(sql) {
			return append(toks, Token{Kind: EOF, Pos: len(sql)}), nil
		}
		start := i
		c := sql[i]
		switch {
		case isWord(c):
			for i < len(sql) && isWord(sql[i]) {
				i++
			}
			word := sql[start:i]
			if allDigits(word) {
				// A fraction makes a decimal number (1.5); a dot
				// followed by a word is a qualified name (db.t).
				if i+1 < len(sql) && sql[i] == '.' && isDigit(sql[i+1]) {
					i++
					for i < len(sql) && isDigit(sql[i]) {
						i++
					}
				}
				toks = append(toks, Token{Kind: Number, Text: sql[start:i], Pos: start})
			} else {
				toks = append(toks, Token{Kind: Ident, Text: word, Pos: start})
			}
		case c == '`':
			text, end, err := quoted(sql, i, '`', false)
			if err != nil {
				return nil, err
			}
			if text == "" {
				return nil, syntaxErrorAt(sql, start, "empty quoted identifier")
			}
			toks = append(toks, Token{Kind: QuotedIdent, Text: text, Pos: start})
			i = end
		case c == '"':
			text, end, err := quoted(sql, i, '"', true)
			if err != nil {
				return nil, err
			}
			toks = append(toks, Token{Kind: DoubleQuoted, Text: text, Pos: start})
			i = end
		case c == '\'':
			text, end, err := quoted(sql, i, '\'', true)
			if err != nil {
				return nil, err
			}
			toks = append(toks, Token{Kind: String, Text: text, Pos: start})
			i = end
		case c == '@':
			kind := UserVar
			i++
			if i < len(sql) && sql[i] == '@' {
				kind = SysVar
				i++
			}
			nameStart := i
			for i < len(sql) && (isWord(sql[i]) || sql[i] == '.') {
				i++
			}
			if i == nameStart {
				return nil, syntaxErrorAt(sql, start, "variable name expected after @")
			}
			toks = append(toks, Token{Kind: kind, Text: sql[nameStart:i], Pos: start})
		case c == ':' && i+1 < len(sql) && sql[i+1] == '=':
			toks = append(toks, Token{Kind: Symbol, Text: ":=", Pos: start})
			i += 2
		case strings.IndexByte("(),=;.*-+", c) >= 0:
			toks = append(toks, Token{Kind: Symbol, Text: string(c), Pos: start})
			i++
		default:
			r, _ := utf8.DecodeRuneInString(sql[i:])
			return nil, syntaxErrorAt(sql, start, fmt.Sprintf("unexpected character %q", r))
		}
	}
}

// quoted reads the quoted text starting at sql[start] (the opening quote q)
// and returns its value and the offset after the closing quote. A doubled
// quote stands for one quote; with escapes, a backslash escapes the next
// character as MySQL does (\n, \t, \0, \r, \b, \Z, others stand for
// themselves).
func quoted(sql string, start int, q byte, escapes bool) (string, int, error) {
	var b strings.Builder
	i := start + 1
	for i < len(sql) {
		c := sql[i]
		switch {
		case c == q:
			if i+1 < len(sql) && sql[i+1] == q {
				b.WriteByte(q)
				i += 2
				continue
			}
			return b.String(), i + 1, nil
		case c == '\\' && escapes:
			if i+1 >= len(sql) {
				i++
				continue
			}
			b.WriteString(unescape(sql[i+1]))
			i += 2
		default:
			b.WriteByte(c)
			i++
		}
	}
	what := "string"
	if q == '`' {
		what = "quoted identifier"
	} else if q == '"' {
		what = "double-quoted text"
	}
	return "", 0, syntaxErrorAt(sql, start, "unterminated "+what)
}

func unescape(c byte) string {
	switch c {
	case 'n':
		return "\n"
	case 't':
		return "\t"
	case 'r':
		return "\r"
	case '0':
		return "\x00"
	case 'b':
		return "\b"
	case 'Z':
		return "\x1a"
	default:
		return string(c)
	}
}

func skipLine(sql string, i int) int {
	end := strings.IndexByte(sql[i:], '\n')
	if end < 0 {
		return len(sql)
	}
	return i + end + 1
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '_' || c == '$' || c >= 0x80
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
