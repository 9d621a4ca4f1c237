package catalog

import (
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The evaluator: SELECT [DISTINCT] items FROM [schema.]relation [[AS] alias]
// [WHERE cond] [ORDER BY expr [ASC|DESC], ...] [LIMIT n [OFFSET m] | LIMIT
// m, n] over one in-memory relation. Items are *, alias.*, or expressions
// with an optional alias; expressions are columns (qualified or not),
// literals, NULL, a few functions (UPPER, LOWER, IFNULL, COALESCE, IF,
// CONCAT, DATABASE, SCHEMA, pg_get_userbyid), comparisons (=, <>, !=, <,
// >, <=, >=, LIKE, NOT LIKE, IN, NOT IN, IS [NOT] NULL, and PostgreSQL's
// regular-expression ~, !~, ~*, !~*) joined by AND, OR, NOT and
// parentheses. The work is bounded by maxTokens, maxDepth and MaxRows.

// maxDepth bounds the parser's recursion: about five levels a nested
// expression (a function call, parentheses, CASE), so 40 nested
// expressions; Connector/J's getColumns nests eight.
const maxDepth = 200

type tokKind int

const (
	tEOF tokKind = iota
	tWord
	tQuoted // `x` or "x": an identifier
	tString
	tNumber
	tSymbol
)

type token struct {
	kind     tokKind
	text     string
	pos, end int // byte offsets in the query
}

// lexQuery splits q into tokens; ok is false past maxTokens or on an
// unterminated quote.
func lexQuery(q string) ([]token, error) {
	var out []token
	for i := 0; i < len(q); {
		if n := len(out); n > 0 && out[n-1].end == 0 {
			out[n-1].end = i
		}
		if len(out) > maxTokens {
			return nil, fmt.Errorf("query longer than %d tokens", maxTokens)
		}
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '-' && i+1 < len(q) && q[i+1] == '-', c == '#':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("unterminated comment")
			}
			i += end + 4
		case c == '\'' || (c == 'E' || c == 'e') && i+1 < len(q) && q[i+1] == '\'':
			if c != '\'' {
				i++
			}
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(q) {
					return nil, fmt.Errorf("unterminated string")
				}
				if q[j] == '\\' && j+1 < len(q) {
					switch q[j+1] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					default:
						b.WriteByte(q[j+1])
					}
					j += 2
					continue
				}
				if q[j] == '\'' {
					if j+1 < len(q) && q[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(q[j])
				j++
			}
			out = append(out, token{kind: tString, text: b.String(), pos: i})
			i = j + 1
		case c == '`' || c == '"':
			end := strings.IndexByte(q[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated quoted name")
			}
			out = append(out, token{kind: tQuoted, text: q[i+1 : i+1+end], pos: i})
			i += end + 2
		case c >= '0' && c <= '9':
			j := i
			for j < len(q) && (q[j] >= '0' && q[j] <= '9' || q[j] == '.') {
				j++
			}
			out = append(out, token{kind: tNumber, text: q[i:j], pos: i})
			i = j
		case c == '_' || c == '$' || c == '@' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			j := i
			for j < len(q) && (q[j] == '_' || q[j] == '$' || q[j] == '@' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= 'A' && q[j] <= 'Z' || q[j] >= '0' && q[j] <= '9' || q[j] >= 0x80) {
				j++
			}
			out = append(out, token{kind: tWord, text: q[i:j], pos: i})
			i = j
		default:
			for _, op := range []string{"!~*", "<>", "!=", "<=", ">=", "!~", "~*", "::"} {
				if strings.HasPrefix(q[i:], op) {
					out = append(out, token{kind: tSymbol, text: op, pos: i})
					i += len(op)
					goto next
				}
			}
			out = append(out, token{kind: tSymbol, text: string(c), pos: i})
			i++
		next:
		}
	}
	if n := len(out); n > 0 && out[n-1].end == 0 {
		out[n-1].end = len(q)
	}
	return append(out, token{kind: tEOF, pos: len(q), end: len(q)}), nil
}

// expr is an expression over one row.
type expr interface{}

type (
	colRef struct{ qual, name string }
	lit    struct{ v *string }
	call   struct {
		name string
		args []expr
	}
	binary struct {
		op   string
		l, r expr
	}
	notExpr struct{ x expr }
	inExpr  struct {
		x    expr
		list []expr
		not  bool
	}
	isNull struct {
		x   expr
		not bool
	}
	star struct{ qual string }
	// caseExpr is CASE [subject] WHEN w THEN t ... [ELSE e] END: the
	// first WHEN equal to subject (or true, without one) gives its THEN.
	caseExpr struct {
		subject     expr
		whens, then []expr
		els         expr
	}
	// convert is CAST(x AS type) or CONVERT(x, type): integer types
	// truncate x to an integer, other types keep it.
	convert struct {
		x       expr
		integer bool
	}
)

type item struct {
	x     expr
	alias string
	text  string
}

type order struct {
	x    expr
	desc bool
}

// selectQuery is one parsed query.
type selectQuery struct {
	distinct bool
	items    []item
	schema   string // information_schema, pg_catalog, "" (unqualified)
	relation string
	alias    string
	joined   []source // FROM a, b, ...: the relations after the first
	where    expr
	orderBy  []order
	limit    int // -1: none
	offset   int
}

type qparser struct {
	toks []token
	i    int
	src  string
}

type parseError struct{ msg string }

func (p *qparser) peek() token { return p.toks[p.i] }

func (p *qparser) fail(format string, args ...any) {
	panic(parseError{fmt.Sprintf(format, args...)})
}

func (p *qparser) word(w string) bool {
	t := p.peek()
	if t.kind == tWord && strings.EqualFold(t.text, w) {
		p.i++
		return true
	}
	return false
}

func (p *qparser) sym(s string) bool {
	t := p.peek()
	if t.kind == tSymbol && t.text == s {
		p.i++
		return true
	}
	return false
}

func (p *qparser) name() string {
	t := p.peek()
	if t.kind == tWord || t.kind == tQuoted {
		p.i++
		return t.text
	}
	p.fail("name expected")
	return ""
}

// reserved are the words that end an item or a relation name.
var reserved = map[string]bool{"FROM": true, "WHERE": true, "ORDER": true, "LIMIT": true, "OFFSET": true, "GROUP": true,
	"AND": true, "OR": true, "NOT": true, "AS": true, "ON": true, "JOIN": true, "LEFT": true, "INNER": true, "UNION": true,
	"IS": true, "IN": true, "LIKE": true, "ASC": true, "DESC": true, "HAVING": true, "FOR": true, "COLLATE": true,
	"OUTER": true, "CROSS": true}

// parseSelect reads a query; err is a parse failure.
func parseSelect(q string) (sq *selectQuery, err error) {
	toks, err := lexQuery(q)
	if err != nil {
		return nil, err
	}
	p := &qparser{toks: toks, src: q}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(parseError)
			if !ok {
				panic(r)
			}
			sq, err = nil, fmt.Errorf("%s", pe.msg)
		}
	}()
	sq = &selectQuery{limit: -1}
	if !p.word("SELECT") {
		p.fail("SELECT expected")
	}
	sq.distinct = p.word("DISTINCT")
	for {
		var it item
		if p.sym("*") {
			it.x = star{}
		} else if t, n, n2 := p.peek(), p.toks[p.i+1], p.toks[min(p.i+2, len(p.toks)-1)]; (t.kind == tWord || t.kind == tQuoted) && n.kind == tSymbol && n.text == "." && n2.kind == tSymbol && n2.text == "*" {
			p.i += 3
			it.x = star{qual: t.text}
		} else {
			start := p.peek().pos
			it.x = p.expr(0)
			it.text = strings.TrimSpace(p.src[start:p.toks[max(p.i-1, 0)].end])
			if p.word("AS") {
				it.alias = p.name()
			} else if t := p.peek(); t.kind == tQuoted || t.kind == tString || t.kind == tWord && !reserved[strings.ToUpper(t.text)] {
				p.i++
				it.alias = t.text
			}
		}
		sq.items = append(sq.items, it)
		if !p.sym(",") {
			break
		}
	}
	if !p.word("FROM") {
		for p.sym(";") {
		}
		if p.peek().kind != tEOF {
			p.fail("FROM expected")
		}
		return sq, nil
	}
	sq.relation = p.name()
	if p.sym(".") {
		sq.schema, sq.relation = sq.relation, p.name()
	}
	if p.word("AS") {
		sq.alias = p.name()
	} else if t := p.peek(); (t.kind == tWord || t.kind == tQuoted) && !reserved[strings.ToUpper(t.text)] {
		p.i++
		sq.alias = t.text
	}
	for {
		var j source
		switch {
		case p.sym(","), p.word("CROSS") && p.word("JOIN"):
		case p.word("LEFT"):
			p.word("OUTER")
			if !p.word("JOIN") {
				p.fail("JOIN expected")
			}
			j.left = true
		case p.word("INNER"), isWord(p.peek(), "JOIN"):
			if !p.word("JOIN") {
				p.fail("JOIN expected")
			}
		default:
			goto joined
		}
		if len(sq.joined) >= maxJoined {
			p.fail("more than %d relations in FROM", maxJoined+1)
		}
		j.relation = p.name()
		if p.sym(".") {
			j.schema, j.relation = j.relation, p.name()
		}
		if p.word("AS") {
			j.alias = p.name()
		} else if t := p.peek(); (t.kind == tWord || t.kind == tQuoted) && !reserved[strings.ToUpper(t.text)] {
			p.i++
			j.alias = t.text
		}
		if p.word("ON") {
			j.on = p.expr(0)
		} else if j.left {
			p.fail("ON expected")
		}
		sq.joined = append(sq.joined, j)
	}
joined:
	if p.word("WHERE") {
		sq.where = p.expr(0)
	}
	if p.word("ORDER") {
		if !p.word("BY") {
			p.fail("BY expected")
		}
		for {
			o := order{x: p.expr(0)}
			if p.word("DESC") {
				o.desc = true
			} else {
				p.word("ASC")
			}
			sq.orderBy = append(sq.orderBy, o)
			if !p.sym(",") {
				break
			}
		}
	}
	if p.word("LIMIT") {
		sq.limit = p.integer()
		if p.sym(",") {
			sq.offset, sq.limit = sq.limit, p.integer()
		} else if p.word("OFFSET") {
			sq.offset = p.integer()
		}
	}
	for p.sym(";") {
	}
	if p.peek().kind != tEOF {
		p.fail("unexpected %q", p.peek().text)
	}
	return sq, nil
}

func (p *qparser) integer() int {
	t := p.peek()
	n, err := strconv.Atoi(t.text)
	if t.kind != tNumber || err != nil || n < 0 {
		p.fail("number expected")
	}
	p.i++
	return n
}

func (p *qparser) expr(depth int) expr {
	if depth > maxDepth {
		p.fail("expression nested too deeply")
	}
	l := p.and(depth + 1)
	for p.word("OR") {
		l = binary{"OR", l, p.and(depth + 1)}
	}
	return l
}

func (p *qparser) and(depth int) expr {
	l := p.not(depth + 1)
	for p.word("AND") {
		l = binary{"AND", l, p.not(depth + 1)}
	}
	return l
}

func (p *qparser) not(depth int) expr {
	if depth > maxDepth {
		p.fail("expression nested too deeply")
	}
	if p.word("NOT") {
		return notExpr{p.not(depth + 1)}
	}
	return p.comparison(depth + 1)
}

func (p *qparser) comparison(depth int) expr {
	l := p.operand(depth + 1)
	for {
		t := p.peek()
		switch {
		case t.kind == tSymbol && slices.Contains([]string{"=", "<>", "!=", "<", ">", "<=", ">=", "~", "!~", "~*", "!~*"}, t.text):
			p.i++
			l = binary{t.text, l, p.operand(depth + 1)}
			continue
		case p.word("LIKE"):
			l = binary{"LIKE", l, p.operand(depth + 1)}
			continue
		case p.word("IS"):
			not := p.word("NOT")
			if !p.word("NULL") {
				p.fail("NULL expected")
			}
			l = isNull{l, not}
			continue
		case p.word("IN"):
			l = inExpr{x: l, list: p.list(depth)}
			continue
		case isWord(t, "NOT") && (isWord(p.toks[p.i+1], "LIKE") || isWord(p.toks[p.i+1], "IN")):
			p.i++
			if p.word("LIKE") {
				l = notExpr{binary{"LIKE", l, p.operand(depth + 1)}}
			} else {
				p.word("IN")
				l = inExpr{x: l, list: p.list(depth), not: true}
			}
			continue
		case p.word("COLLATE"):
			p.name()
			for p.sym(".") {
				p.name()
			}
			continue
		}
		return l
	}
}

func isWord(t token, w string) bool { return t.kind == tWord && strings.EqualFold(t.text, w) }

func (p *qparser) list(depth int) []expr {
	if !p.sym("(") {
		p.fail("( expected")
	}
	var out []expr
	for {
		out = append(out, p.operand(depth+1))
		if !p.sym(",") {
			break
		}
	}
	if !p.sym(")") {
		p.fail(") expected")
	}
	return out
}

func (p *qparser) operand(depth int) expr {
	if depth > maxDepth {
		p.fail("expression nested too deeply")
	}
	x := p.cast(depth + 1)
	for {
		t := p.peek()
		if t.kind != tSymbol || t.text != "+" && t.text != "-" {
			return x
		}
		p.i++
		x = binary{t.text, x, p.cast(depth + 1)}
	}
}

func (p *qparser) cast(depth int) expr {
	x := p.primary(depth)
	for p.sym("::") { // PostgreSQL casts: the value as it is
		p.name()
		for p.sym(".") {
			p.name()
		}
	}
	return x
}

func (p *qparser) primary(depth int) expr {
	t := p.peek()
	switch t.kind {
	case tString, tNumber:
		p.i++
		return lit{str(t.text)}
	case tSymbol:
		if t.text == "(" {
			p.i++
			x := p.expr(depth + 1)
			if !p.sym(")") {
				p.fail(") expected")
			}
			return x
		}
		if t.text == "-" && p.toks[p.i+1].kind == tNumber {
			p.i += 2
			return lit{str("-" + p.toks[p.i-1].text)}
		}
	case tWord, tQuoted:
		if t.kind == tWord {
			switch strings.ToUpper(t.text) {
			case "NULL":
				p.i++
				return lit{}
			case "TRUE":
				p.i++
				return lit{str("1")}
			case "FALSE":
				p.i++
				return lit{str("0")}
			}
		}
		p.i++
		name := t.text
		qual := ""
		for p.sym(".") {
			qual, name = name, p.name()
		}
		if t.kind == tWord && qual == "" && niladic[strings.ToUpper(name)] && !(p.peek().kind == tSymbol && p.peek().text == "(") {
			return call{name: strings.ToLower(name)} // CURRENT_USER without parentheses
		}
		if t.kind == tWord && qual == "" && strings.EqualFold(name, "CASE") {
			return p.caseExpr(depth)
		}
		if t.kind == tWord && qual == "" && (strings.EqualFold(name, "CAST") || strings.EqualFold(name, "CONVERT")) && p.sym("(") {
			return p.convert(depth, strings.EqualFold(name, "CAST"))
		}
		if t.kind == tWord && p.sym("(") {
			c := call{name: strings.ToLower(name)}
			if !p.sym(")") {
				for {
					c.args = append(c.args, p.expr(depth+1))
					if !p.sym(",") {
						break
					}
				}
				if !p.sym(")") {
					p.fail(") expected")
				}
			}
			return c
		}
		return colRef{qual: qual, name: name}
	}
	p.fail("expression expected")
	return nil
}

// niladic are the functions SQL calls without parentheses.
var niladic = map[string]bool{"CURRENT_USER": true, "SESSION_USER": true, "CURRENT_SCHEMA": true, "CURRENT_CATALOG": true, "CURRENT_ROLE": true}

// caseExpr reads a CASE expression after its CASE.
func (p *qparser) caseExpr(depth int) expr {
	var c caseExpr
	if !isWord(p.peek(), "WHEN") {
		c.subject = p.expr(depth + 1)
	}
	for p.word("WHEN") {
		c.whens = append(c.whens, p.expr(depth+1))
		if !p.word("THEN") {
			p.fail("THEN expected")
		}
		c.then = append(c.then, p.expr(depth+1))
	}
	if len(c.whens) == 0 {
		p.fail("WHEN expected")
	}
	if p.word("ELSE") {
		c.els = p.expr(depth + 1)
	}
	if !p.word("END") {
		p.fail("END expected")
	}
	return c
}

// convert reads CAST(x AS type) or CONVERT(x, type) after its "(".
func (p *qparser) convert(depth int, cast bool) expr {
	c := convert{x: p.expr(depth + 1)}
	if cast && !p.word("AS") || !cast && !p.sym(",") {
		p.fail("AS or , expected")
	}
	for t := p.peek(); t.kind == tWord || t.kind == tNumber || t.kind == tSymbol && t.text != ")"; t = p.peek() {
		if t.kind == tEOF {
			break
		}
		switch strings.ToUpper(t.text) {
		case "SIGNED", "UNSIGNED", "INTEGER", "INT", "BIGINT":
			c.integer = true
		}
		p.i++
	}
	if !p.sym(")") {
		p.fail(") expected")
	}
	return c
}

// relation is a table of values.
type relation struct {
	cols []Column
	rows [][]*string
	// quals name each column's relation (its alias, else its name) in a
	// join; nil for one relation, whose columns any qualifier reaches.
	quals []string
}

// env evaluates expressions over one row of a relation.
type env struct {
	rel   *relation
	alias string
	row   []*string
	view  *View
}

func (e *env) column(c colRef) (*string, Type, error) {
	if name, ok := systemVariable(c); ok {
		if e.view.Variable != nil {
			if v, ok := e.view.Variable(name); ok {
				return str(v), Text, nil
			}
		}
		return nil, Text, &sqlerr.Error{Code: 1193, SQLState: "HY000", Message: fmt.Sprintf("Unknown system variable '%s'", name)}
	}
	found := -1
	for i, col := range e.rel.cols {
		if !strings.EqualFold(col.Name, c.name) || e.rel.quals != nil && c.qual != "" && !strings.EqualFold(e.rel.quals[i], c.qual) {
			continue
		}
		if found >= 0 {
			return nil, Text, fmt.Errorf("column '%s' is ambiguous", c.name)
		}
		found = i
	}
	if found < 0 {
		return nil, Text, fmt.Errorf("unknown column '%s'", c.name)
	}
	return e.row[found], e.rel.cols[found].Type, nil
}

func truth(v *string) bool {
	if v == nil {
		return false
	}
	switch strings.ToLower(*v) {
	case "", "0", "f", "false", "no", "off":
		return false
	}
	return true
}

func boolean(b bool) *string {
	if b {
		return str("1")
	}
	return str("0")
}

// compare compares a and b as numbers when both are, else as strings
// without case, as MySQL's utf8mb4_general_ci compares.
func compare(a, b string) int {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 == nil && err2 == nil {
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return strings.Compare(strings.ToLower(a), strings.ToLower(b))
}

func (e *env) eval(x expr) (*string, Type, error) {
	switch x := x.(type) {
	case lit:
		return x.v, Text, nil
	case colRef:
		return e.column(x)
	case notExpr:
		v, _, err := e.eval(x.x)
		if err != nil || v == nil {
			return nil, Int, err
		}
		return boolean(!truth(v)), Int, nil
	case isNull:
		v, _, err := e.eval(x.x)
		return boolean((v == nil) != x.not), Int, err
	case inExpr:
		v, _, err := e.eval(x.x)
		if err != nil || v == nil {
			return nil, Int, err
		}
		found := false
		for _, y := range x.list {
			w, _, err := e.eval(y)
			if err != nil {
				return nil, Int, err
			}
			if w != nil && compare(*v, *w) == 0 {
				found = true
			}
		}
		return boolean(found != x.not), Int, nil
	case binary:
		l, _, err := e.eval(x.l)
		if err != nil {
			return nil, Int, err
		}
		r, _, err := e.eval(x.r)
		if err != nil {
			return nil, Int, err
		}
		switch x.op {
		case "AND":
			if l != nil && !truth(l) || r != nil && !truth(r) {
				return boolean(false), Int, nil
			}
			if l == nil || r == nil {
				return nil, Int, nil
			}
			return boolean(true), Int, nil
		case "OR":
			if truth(l) || truth(r) {
				return boolean(true), Int, nil
			}
			if l == nil || r == nil {
				return nil, Int, nil
			}
			return boolean(false), Int, nil
		}
		if l == nil || r == nil {
			return nil, Int, nil
		}
		switch x.op {
		case "=":
			return boolean(compare(*l, *r) == 0), Int, nil
		case "<>", "!=":
			return boolean(compare(*l, *r) != 0), Int, nil
		case "<":
			return boolean(compare(*l, *r) < 0), Int, nil
		case ">":
			return boolean(compare(*l, *r) > 0), Int, nil
		case "<=":
			return boolean(compare(*l, *r) <= 0), Int, nil
		case ">=":
			return boolean(compare(*l, *r) >= 0), Int, nil
		case "LIKE":
			return boolean(Like(*r, *l)), Int, nil
		case "+", "-":
			a, err1 := strconv.ParseInt(*l, 10, 64)
			b, err2 := strconv.ParseInt(*r, 10, 64)
			if err1 != nil || err2 != nil {
				return nil, Text, fmt.Errorf("arithmetic on values that are not integers")
			}
			if x.op == "-" {
				b = -b
			}
			return str(strconv.FormatInt(a+b, 10)), Int, nil
		case "~", "!~", "~*", "!~*":
			pat := *r
			if strings.HasSuffix(x.op, "*") {
				pat = "(?i)" + pat
			}
			if len(pat) > 1024 {
				return nil, Int, fmt.Errorf("regular expression longer than 1024 bytes")
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				return nil, Int, fmt.Errorf("invalid regular expression: %v", err)
			}
			return boolean(re.MatchString(*l) != strings.HasPrefix(x.op, "!")), Int, nil
		}
	case call:
		return e.call(x)
	case caseExpr:
		var subject *string
		if x.subject != nil {
			v, _, err := e.eval(x.subject)
			if err != nil {
				return nil, Text, err
			}
			subject = v
		}
		for i, w := range x.whens {
			v, _, err := e.eval(w)
			if err != nil {
				return nil, Text, err
			}
			if x.subject == nil && truth(v) || x.subject != nil && subject != nil && v != nil && compare(*subject, *v) == 0 {
				return e.eval(x.then[i])
			}
		}
		if x.els == nil {
			return nil, Text, nil
		}
		return e.eval(x.els)
	case convert:
		v, typ, err := e.eval(x.x)
		if err != nil || v == nil || !x.integer {
			return v, typ, err
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(*v), 64)
		if err != nil {
			return str("0"), Int, nil
		}
		return str(strconv.FormatInt(int64(n), 10)), Int, nil
	}
	return nil, Text, fmt.Errorf("expression not supported")
}

func (e *env) call(c call) (*string, Type, error) {
	args := make([]*string, len(c.args))
	for i, a := range c.args {
		v, _, err := e.eval(a)
		if err != nil {
			return nil, Text, err
		}
		args[i] = v
	}
	argn := func(n int) error {
		if len(args) != n {
			return fmt.Errorf("function %s takes %d arguments", c.name, n)
		}
		return nil
	}
	switch c.name {
	case "database", "schema", "current_database", "current_catalog":
		if e.view.Current == "" {
			return nil, Text, nil
		}
		return str(e.view.Current), Text, nil
	case "current_schema":
		return str("public"), Text, nil
	case "upper", "lower", "ucase", "lcase":
		if err := argn(1); err != nil || args[0] == nil {
			return nil, Text, err
		}
		if c.name == "upper" || c.name == "ucase" {
			return str(strings.ToUpper(*args[0])), Text, nil
		}
		return str(strings.ToLower(*args[0])), Text, nil
	case "ifnull", "coalesce", "nvl":
		for _, a := range args {
			if a != nil {
				return a, Text, nil
			}
		}
		return nil, Text, nil
	case "if":
		if err := argn(3); err != nil {
			return nil, Text, err
		}
		if truth(args[0]) {
			return args[1], Text, nil
		}
		return args[2], Text, nil
	case "concat":
		var b strings.Builder
		for _, a := range args {
			if a == nil {
				return nil, Text, nil
			}
			b.WriteString(*a)
		}
		return str(b.String()), Text, nil
	case "user", "current_user", "session_user", "system_user", "current_role":
		if e.view.Host == "" || c.name == "session_user" && e.view.Protocol == "PostgreSQL" || e.view.Protocol == "PostgreSQL" {
			return str(e.view.User), Text, nil
		}
		return str(e.view.User + "@" + e.view.Host), Text, nil
	case "left", "right":
		if err := argn(2); err != nil || args[0] == nil || args[1] == nil {
			return nil, Text, err
		}
		n, err := strconv.Atoi(*args[1])
		if err != nil {
			return nil, Text, fmt.Errorf("%s: length %q is not an integer", c.name, *args[1])
		}
		r := []rune(*args[0])
		n = max(0, min(n, len(r)))
		if c.name == "left" {
			return str(string(r[:n])), Text, nil
		}
		return str(string(r[len(r)-n:])), Text, nil
	case "instr", "locate", "position", "strpos":
		if err := argn(2); err != nil || args[0] == nil || args[1] == nil {
			return nil, Text, err
		}
		hay, needle := *args[0], *args[1]
		if c.name == "locate" {
			hay, needle = needle, hay
		}
		i := strings.Index(hay, needle)
		if i < 0 {
			return str("0"), Int, nil
		}
		return str(strconv.Itoa(len([]rune(hay[:i])) + 1)), Int, nil
	case "length", "char_length", "character_length":
		if err := argn(1); err != nil || args[0] == nil {
			return nil, Int, err
		}
		if c.name == "length" && e.view.Protocol != "PostgreSQL" {
			return str(strconv.Itoa(len(*args[0]))), Int, nil
		}
		return str(strconv.Itoa(len([]rune(*args[0])))), Int, nil
	case "version":
		name, prefix := "version", ""
		if e.view.Protocol == "PostgreSQL" {
			name, prefix = "server_version", "PostgreSQL "
		}
		if e.view.Variable != nil {
			if v, ok := e.view.Variable(name); ok {
				return str(prefix + v), Text, nil
			}
		}
		return nil, Text, nil
	case "least", "greatest":
		if len(args) == 0 {
			return nil, Text, fmt.Errorf("function %s takes at least 1 argument", c.name)
		}
		best := args[0]
		for _, a := range args { // args[0] first: best is not nil past it
			if a == nil {
				return nil, Text, nil
			}
			if d := compare(*a, *best); c.name == "least" && d < 0 || c.name == "greatest" && d > 0 {
				best = a
			}
		}
		return best, Text, nil
	case "substring", "substr":
		if len(args) != 2 && len(args) != 3 {
			return nil, Text, fmt.Errorf("function %s takes 2 or 3 arguments", c.name)
		}
		for _, a := range args {
			if a == nil {
				return nil, Text, nil
			}
		}
		r := []rune(*args[0])
		pos, err := strconv.Atoi(*args[1])
		if err != nil {
			return nil, Text, fmt.Errorf("%s: position %q is not an integer", c.name, *args[1])
		}
		if pos < 0 {
			pos = len(r) + pos + 1
		}
		if pos < 1 || pos > len(r) {
			return str(""), Text, nil
		}
		end := len(r)
		if len(args) == 3 {
			n, err := strconv.Atoi(*args[2])
			if err != nil {
				return nil, Text, fmt.Errorf("%s: length %q is not an integer", c.name, *args[2])
			}
			end = min(end, pos-1+max(n, 0))
		}
		return str(string(r[pos-1 : end])), Text, nil
	case "current_setting":
		if len(args) < 1 || len(args) > 2 || args[0] == nil {
			return nil, Text, fmt.Errorf("function current_setting takes a setting name")
		}
		if v, ok := e.view.pgSetting(*args[0]); ok {
			return str(v), Text, nil
		}
		if len(args) == 2 && truth(args[1]) { // missing_ok
			return nil, Text, nil
		}
		return nil, Text, &sqlerr.Error{Code: 1193, SQLState: "42704", Message: fmt.Sprintf("unrecognized configuration parameter \"%s\"", *args[0])}
	case "pg_encoding_to_char":
		return str("UTF8"), Text, nil
	case "pg_is_in_recovery":
		return str("f"), Text, nil
	case "format_type":
		if err := argn(2); err != nil || args[0] == nil {
			return nil, Text, err
		}
		mod := "-1"
		if args[1] != nil {
			mod = *args[1]
		}
		return formatType(*args[0], mod), Text, nil
	case "obj_description", "col_description", "shobj_description", "pg_get_expr":
		return nil, Text, nil
	case "pg_get_userbyid":
		return str(e.view.User), Text, nil
	case "pg_table_is_visible", "has_schema_privilege", "has_table_privilege", "has_database_privilege":
		return str("t"), Text, nil
	}
	return nil, Text, fmt.Errorf("function %s is not supported by the catalog", c.name)
}

// run evaluates sq over rel. view supplies DATABASE() and the user.
func run(sq *selectQuery, rel *relation, view *View) (*Result, error) {
	type out struct {
		vals []*string
		keys []*string
	}
	var items []item
	for _, it := range sq.items {
		if s, ok := it.x.(star); ok && rel.quals != nil {
			n := len(items)
			for i, c := range rel.cols {
				if s.qual == "" || strings.EqualFold(s.qual, rel.quals[i]) {
					items = append(items, item{x: colRef{qual: rel.quals[i], name: c.Name}, alias: c.Name})
				}
			}
			if len(items) == n {
				return nil, fmt.Errorf("unknown table '%s'", s.qual)
			}
			continue
		} else if ok && (s.qual == "" || strings.EqualFold(s.qual, sq.alias) || strings.EqualFold(s.qual, sq.relation)) {
			for _, c := range rel.cols {
				items = append(items, item{x: colRef{name: c.Name}, alias: c.Name})
			}
			continue
		} else if ok {
			return nil, fmt.Errorf("unknown table '%s'", s.qual)
		}
		items = append(items, it)
	}
	res := &Result{}
	for _, it := range items {
		name := it.alias
		if c, ok := it.x.(colRef); name == "" && view.Protocol != "PostgreSQL" && it.text != "" && (!ok || c.qual == "") {
			name = it.text // MySQL names a column as typed, a qualified column by its name
		}
		if name == "" {
			if c, ok := it.x.(call); ok {
				name = c.name
			} else if c, ok := it.x.(colRef); ok {
				name = c.name
				for _, col := range rel.cols {
					if strings.EqualFold(col.Name, c.name) {
						name = col.Name
					}
				}
			} else {
				name = "?column?"
			}
		}
		res.Columns = append(res.Columns, Column{Name: name})
	}
	var rows []out
	typed := make([]bool, len(items))
	for i := range typed {
		typed[i] = true
	}
	for _, row := range rel.rows {
		e := &env{rel: rel, alias: sq.alias, row: row, view: view}
		if sq.where != nil {
			v, _, err := e.eval(sq.where)
			if err != nil {
				return nil, err
			}
			if !truth(v) {
				continue
			}
		}
		var o out
		for i, it := range items {
			v, typ, err := e.eval(it.x)
			if err != nil {
				return nil, err
			}
			if typ != Int {
				typed[i] = false
			}
			o.vals = append(o.vals, v)
		}
		for _, ob := range sq.orderBy {
			var v *string
			var err error
			if l, ok := ob.x.(lit); ok && l.v != nil {
				n, _ := strconv.Atoi(*l.v)
				if n < 1 || n > len(o.vals) {
					return nil, fmt.Errorf("ORDER BY position %s is not in the select list", *l.v)
				}
				v = o.vals[n-1]
			} else if c, ok := ob.x.(colRef); ok && c.qual == "" && slices.IndexFunc(items, func(it item) bool { return strings.EqualFold(it.alias, c.name) }) >= 0 {
				v = o.vals[slices.IndexFunc(items, func(it item) bool { return strings.EqualFold(it.alias, c.name) })]
			} else if v, _, err = e.eval(ob.x); err != nil {
				return nil, err
			}
			o.keys = append(o.keys, v)
		}
		if sq.distinct && slices.ContainsFunc(rows, func(r out) bool { return sameValues(r.vals, o.vals) }) {
			continue
		}
		rows = append(rows, o)
		if len(rows) > MaxRows {
			return nil, fmt.Errorf("more than %d rows", MaxRows)
		}
	}
	if len(sq.orderBy) > 0 {
		slices.SortStableFunc(rows, func(a, b out) int {
			for i, ob := range sq.orderBy {
				c := compareNullable(a.keys[i], b.keys[i])
				if ob.desc {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
			return 0
		})
	}
	if sq.offset > 0 {
		rows = rows[min(sq.offset, len(rows)):]
	}
	if sq.limit >= 0 && len(rows) > sq.limit {
		rows = rows[:sq.limit]
	}
	for i, it := range items {
		if c, ok := it.x.(colRef); ok {
			for _, col := range rel.cols {
				if strings.EqualFold(col.Name, c.name) {
					res.Columns[i].Type = col.Type
				}
			}
		}
	}
	res.Rows = make([][]*string, 0, len(rows))
	for _, r := range rows {
		res.Rows = append(res.Rows, r.vals)
	}
	return res, nil
}

func sameValues(a, b []*string) bool {
	return slices.EqualFunc(a, b, func(x, y *string) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y })
}

func compareNullable(a, b *string) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return compare(*a, *b)
}

// Like reports whether s matches the SQL LIKE pattern (% any run, _ one
// character, \ escapes), case-insensitively.
func Like(pattern, s string) bool {
	var re strings.Builder
	re.WriteString("(?is)^")
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '%':
			re.WriteString(".*")
		case '_':
			re.WriteString(".")
		case '\\':
			if i+1 < len(pattern) {
				i++
				re.WriteString(regexp.QuoteMeta(string(pattern[i])))
			}
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	ok, err := regexp.MatchString(re.String(), s)
	return err == nil && ok
}

// systemVariable is the name of a @@variable reference (@@x, @@session.x,
// @@global.x), lower case.
func systemVariable(c colRef) (string, bool) {
	switch {
	case strings.HasPrefix(c.qual, "@@"):
		return strings.ToLower(c.name), true
	case c.qual == "" && strings.HasPrefix(c.name, "@@"):
		return strings.ToLower(c.name[2:]), true
	}
	return "", false
}
