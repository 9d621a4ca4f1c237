package distsql

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
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

// Coded returns err as the coded refusal every front end answers: a
// SyntaxError becomes vendor code 12000, SQL state 42000, with its
// 1-based character position in statement; any other error (nil
// included) is returned as it is.
func Coded(err error, statement string) error {
	var se *SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	return &sqlerr.Error{Code: SyntaxErrorCode, SQLState: SyntaxErrorState, Message: se.Error(), Position: se.charPosition(statement)}
}

// charPosition is the 1-based character position of the error's line and
// column in statement.
func (e *SyntaxError) charPosition(statement string) int {
	pos := 0
	for l := 1; l < e.Line; l++ {
		i := strings.IndexByte(statement, '\n')
		if i < 0 {
			break
		}
		pos += utf8.RuneCountInString(statement[:i+1])
		statement = statement[i+1:]
	}
	return pos + e.Column
}

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
