package console

import (
	"context"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
)

// Each port answers a failure in its own dialect: MySQL's code, SQL state
// and message on the MySQL port, PostgreSQL's SQL state and message on the
// PostgreSQL port, never the other's.
func TestDialectErrors(t *testing.T) {
	e := New(Deps{})
	my := newSession()
	pg := &Session{ID: NewSessionID(), User: "postgres", Protocol: "PostgreSQL"}
	for _, c := range []struct {
		s       *Session
		query   string
		code    uint16
		state   string
		message string
	}{
		{my, "SHOW no_such_parameter", 1193, "HY000", "Unknown system variable 'no_such_parameter'"},
		{pg, "SHOW no_such_parameter", 1193, "42704", `unrecognized configuration parameter "no_such_parameter"`},
		{my, "SELECT @@no_such_variable", 1193, "HY000", "Unknown system variable 'no_such_variable'"},
		{my, "SELECT no_such_function()", 1305, "42000", "FUNCTION no_such_function does not exist"},
		{pg, "SELECT no_such_function()", 1305, "42883", "function no_such_function() does not exist"},
	} {
		_, err := e.Execute(context.Background(), c.s, c.query)
		ce, ok := err.(*sqlerr.Error)
		if !ok || ce.Code != c.code || ce.SQLState != c.state || ce.Message != c.message {
			t.Errorf("%s on %s: %#v, want %d %s %q", c.query, c.s.Protocol, err, c.code, c.state, c.message)
		}
	}
}

// A BIGINT column never carries an empty string: Execute answers NULL, and
// a shared result is copied, not changed.
func TestNullMissing(t *testing.T) {
	empty, one := "", "1"
	shared := &Result{Columns: []Column{{Name: "name"}, {Name: "port", Type: Int64}},
		Rows: [][]*string{{&empty, &empty}, {&one, &one}}, Shared: true}
	got := nullMissing(shared)
	if got == shared || got.Shared {
		t.Fatalf("a shared result was not copied")
	}
	if got.Rows[0][0] == nil || *got.Rows[0][0] != "" || got.Rows[0][1] != nil || *got.Rows[1][1] != "1" {
		t.Errorf("rows %v", rowStrings(got))
	}
	if shared.Rows[0][1] == nil || *shared.Rows[0][1] != "" {
		t.Errorf("the shared result was modified")
	}
	if typed := (&Result{Columns: []Column{{Name: "n", Type: Int64}}, Rows: [][]*string{{&one}}}); nullMissing(typed) != typed {
		t.Errorf("a result without empty values was copied")
	}
}

// A SQLite unit has no host and no port: its BIGINT port is NULL, which
// typed drivers read as a missing value rather than failing on an empty string.
func TestStorageUnitRowSQLitePortNull(t *testing.T) {
	row := storageUnitRow("ds_lite", config.DataSource{URL: "jdbc:sqlite:/tmp/x.db"})
	if row[3] != nil {
		t.Errorf("port %q, want NULL", *row[3])
	}
	if *row[1] != "SQLite" || *row[4] != "/tmp/x.db" {
		t.Errorf("type %q db %q", *row[1], *row[4])
	}
}
