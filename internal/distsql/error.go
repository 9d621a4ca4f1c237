package distsql

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// SyntaxError is a statement Parse could not read: where it stopped and
// why. Front ends report it as ShardingSphere reports a DistSQL syntax
// error: vendor code 12000 (SyntaxErrorCode), SQL state 42000.
type SyntaxError struct {
	// Line and Column are 1-based; Column counts characters, not bytes.
	Line, Column int
	// Near is the statement's text from the error on (at most 40
	// characters), empty at the end of the statement.
	Near string
	// Msg says what was expected or what is wrong.
	Msg string
}

// SyntaxErrorCode and SyntaxErrorState are ShardingSphere's vendor code
// and SQL state of "You have an error in your SQL syntax".
const (
	SyntaxErrorCode  = 12000
	SyntaxErrorState = "42000"
)

func (e *SyntaxError) Error() string {
	near := "at the end of the statement"
	if e.Near != "" {
		near = fmt.Sprintf("near '%s'", e.Near)
	}
	return fmt.Sprintf("You have an error in your SQL syntax: %s at line %d column %d: %s", near, e.Line, e.Column, e.Msg)
}

const nearChars = 40

func syntaxErrorAt(sql string, pos int, msg string) *SyntaxError {
	if pos > len(sql) {
		pos = len(sql)
	}
	before := sql[:pos]
	line := strings.Count(before, "\n") + 1
	col := utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:]) + 1
	near := sql[pos:]
	if utf8.RuneCountInString(near) > nearChars {
		n := 0
		for i := range near {
			if n == nearChars {
				near = near[:i]
				break
			}
			n++
		}
	}
	near = strings.TrimRight(near, " \t\r\n;")
	return &SyntaxError{Line: line, Column: col, Near: near, Msg: msg}
}
