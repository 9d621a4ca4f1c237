package pgfront

import "strings"

// Split returns the statements of a query text, separated by ';' outside
// quotes ('...', "...", `...`, with doubled quotes and backslash escapes
// as DistSQL's strings have them) and comments (-- to the end of the
// line, /* ... */). Each statement is trimmed of spaces; empty statements
// (only spaces or comments) are left out.
func Split(text string) []string {
	var stmts []string
	for _, p := range split(text) {
		stmts = append(stmts, p.text)
	}
	return stmts
}

// piece is one statement of a query text and its byte offset there.
type piece struct {
	text  string
	start int
}

// split is Split with the offsets of the statements.
func split(text string) []piece {
	var (
		pieces []piece
		start  int
	)
	add := func(from, to int) {
		s := text[from:to]
		if strings.TrimSpace(stripComments(s)) == "" {
			return
		}
		lead := len(s) - len(strings.TrimLeft(s, " \t\r\n\f\v"))
		pieces = append(pieces, piece{text: strings.TrimSpace(s), start: from + lead})
	}
	scan(text, func(i int, c byte, quoted bool) {
		if c == ';' && !quoted {
			add(start, i)
			start = i + 1
		}
	})
	add(start, len(text))
	return pieces
}

// stripComments returns q with its comments replaced by a space.
func stripComments(q string) string {
	if !strings.Contains(q, "--") && !strings.Contains(q, "/*") {
		return q
	}
	var b strings.Builder
	scan(q, func(_ int, c byte, _ bool) { b.WriteByte(c) })
	return b.String()
}

// scan calls f for every byte of q outside comments, with whether it is
// part of a quoted string (its quotes included), and once with c ' ' in
// place of each whole comment. An unterminated string or comment runs to
// the end of q.
func scan(q string, f func(i int, c byte, quoted bool)) {
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(q) {
				if q[j] == '\\' && c != '`' {
					j += 2
					continue
				}
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			end := min(j, len(q)-1)
			for k := i; k <= end; k++ {
				f(k, q[k], true)
			}
			i = end
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			end := len(q)
			if j >= 0 {
				end = i + j
			}
			f(i, ' ', false)
			i = end - 1
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			end := len(q)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			f(i, ' ', false)
			i = end - 1
		default:
			f(i, c, false)
		}
	}
}
