package console

import (
	"context"
	"errors"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"testing"
)

// TestSyntaxErrorPosition: a syntax error carries the character position
// of the error in the statement, across lines and multi-byte characters,
// for PostgreSQL's error position.
func TestSyntaxErrorPosition(t *testing.T) {
	e := New(Deps{})
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"SHOW COMPUTE NODEZ", 14},
		{"SHOW\nCOMPUTE NODEZ", 14},
		{"SHOW\r\n  COMPUTE\n NODEZ", 18},
		{"SET DIST VARIABLE sql_show = 'é' xyz", 34},
	} {
		_, err := e.Execute(context.Background(), &Session{}, tc.query)
		var ce *sqlerr.Error
		if !errors.As(err, &ce) || ce.SQLState != "42000" {
			t.Fatalf("%q: %v, want a syntax error", tc.query, err)
		}
		if ce.Position != tc.want {
			t.Errorf("%q: position %d, want %d (%s)", tc.query, ce.Position, tc.want, ce.Message)
		}
	}
}
