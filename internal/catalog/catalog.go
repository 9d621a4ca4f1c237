// Package catalog answers the catalog queries the tools people bring send
// to a shardkeeper node: MySQL's information_schema and the SHOW forms of
// GUI tools and drivers (SHOW ENGINES, SHOW COLLATION, SHOW TABLE STATUS,
// ...), PostgreSQL's pg_catalog queries of psql's meta-commands (\l, \dt,
// \d, \d t, \dn, \du) and its information_schema. Answers are served from
// a View of the cluster's metadata: the logical databases a user may use
// and their logic tables with the columns the registry keeps.
//
// How queries are answered: a MySQL information_schema query is read by a
// small evaluator over in-memory relations (one relation, a select list of
// columns, literals and aliases, a WHERE of comparisons joined by AND/OR,
// ORDER BY, LIMIT); a pg_catalog query is recognised by its shape (the
// relations it reads and the columns it asks for, as psql 15 sends them),
// since psql's queries join many relations through functions nothing else
// needs. Both are bounded: MaxQueryBytes before any work, MaxRows rows out,
// MaxTables tables in a View. A catalog query neither form answers is an
// Error in the protocol's own codes, never a guess.
package catalog

import (
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// Bounds checked before the work.
const (
	// MaxQueryBytes bounds a catalog query's text.
	MaxQueryBytes = 64 << 10
	// MaxRows bounds the rows one answer holds.
	MaxRows = 10_000
	// MaxTables bounds the tables a View may list over all databases.
	MaxTables = 20_000
	// maxTokens bounds the tokens of a query the evaluator reads.
	maxTokens = 4096
)

// View is what a session may see: the logical databases it is permitted,
// in name order, with their logic tables.
type View struct {
	Databases []Database
	// Current is the session's database ("" when none).
	Current string
	// User is the session's user name, Host its client host.
	User, Host string
	// Users are the user names of the authority rule (\du, pg_roles).
	Users []string
	// Protocol is "MySQL" or "PostgreSQL".
	Protocol string
	// Variable returns a system variable's value (@@name); nil knows
	// none.
	Variable func(name string) (string, bool)
}

// Database is one logical database.
type Database struct {
	Name   string
	Tables []Table // in name order
}

// Table is one logic table (a sharding or broadcast table, a loaded single
// table) or view, with its columns in ordinal order.
type Table struct {
	Name    string
	View    bool
	Columns []datasource.Column
	Indexes []datasource.Index
}

// Type of a result column.
type Type int

const (
	// Text is a character column.
	Text Type = iota
	// Int is a BIGINT column.
	Int
)

// Column is one result column.
type Column struct {
	Name string
	Type Type
}

// Result is a result set; a nil *string is NULL.
type Result struct {
	Columns []Column
	Rows    [][]*string
}

// unsupportedMySQL is a catalog query this node cannot answer, on the
// MySQL port: ER_NOT_SUPPORTED_YET (1235, 42000).
func unsupportedMySQL(what string) *sqlerr.Error {
	return &sqlerr.Error{Code: 1235, SQLState: "42000", Message: "This version of shardkeeper doesn't yet support '" + what + "': the catalog answers the queries listed in docs/distsql.md (Clients)"}
}

// unsupportedPostgreSQL is a catalog query this node cannot answer, on the
// PostgreSQL port: feature_not_supported (0A000).
func unsupportedPostgreSQL(what string) *sqlerr.Error {
	return &sqlerr.Error{Code: 1235, SQLState: "0A000", Message: "catalog query not supported: " + what + " (the catalog answers the queries listed in docs/distsql.md, Clients)"}
}

// Table returns database db's table name ("" db: the current one), found
// in any case, and whether it exists.
func (v *View) Table(db, name string) (Table, bool) {
	if db == "" {
		db = v.Current
	}
	for _, d := range v.Databases {
		if d.Name != db {
			continue
		}
		for _, t := range d.Tables {
			if strings.EqualFold(t.Name, name) {
				return t, true
			}
		}
	}
	return Table{}, false
}

func str(s string) *string { return &s }
