package distsql

import (
	"errors"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

func TestCodedSyntaxError(t *testing.T) {
	statement := "SHOW STORAGE UNITS\nFROM é ("
	_, err := Parse(statement)
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Parse(%q) = %v, want a syntax error", statement, err)
	}
	var coded *sqlerr.Error
	if !errors.As(Coded(err, statement), &coded) {
		t.Fatalf("Coded(%v) is not a coded refusal", err)
	}
	if coded.Code != SyntaxErrorCode || coded.SQLState != SyntaxErrorState || coded.Message != se.Error() {
		t.Errorf("Coded = %d %s %q, want %d %s %q", coded.Code, coded.SQLState, coded.Message, SyntaxErrorCode, SyntaxErrorState, se.Error())
	}
	// The position counts characters over every line before the error's.
	want := len([]rune("SHOW STORAGE UNITS\n")) + se.Column
	if se.Line != 2 || coded.Position != want {
		t.Errorf("error at line %d column %d, position %d; want line 2, position %d", se.Line, se.Column, coded.Position, want)
	}

	other := errors.New("not a syntax error")
	if got := Coded(other, statement); got != other {
		t.Errorf("Coded(other) = %v, want it unchanged", got)
	}
	if Coded(nil, statement) != nil {
		t.Error("Coded(nil) is not nil")
	}
}
