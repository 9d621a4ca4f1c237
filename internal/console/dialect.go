package console

import (
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// The errors below name what a MySQL or a PostgreSQL server answers for the
// same failure: the MySQL port gets MySQL's code, SQL state and message,
// the PostgreSQL port PostgreSQL's SQL state and message (its Code, which
// the PostgreSQL protocol does not carry, stays MySQL's for logs). Neither
// port ever gets the other's.

// postgres reports whether s speaks the PostgreSQL protocol.
func postgres(s *Session) bool { return s != nil && s.Protocol == "PostgreSQL" }

// unknownSystemVariable is MySQL's ER_UNKNOWN_SYSTEM_VARIABLE (1193, HY000)
// or PostgreSQL's undefined_object (42704) for a parameter nobody has.
func unknownSystemVariable(s *Session, name string) *sqlerr.Error {
	if postgres(s) {
		return &sqlerr.Error{Code: 1193, SQLState: "42704", Message: fmt.Sprintf("unrecognized configuration parameter \"%s\"", name)}
	}
	return &sqlerr.Error{Code: 1193, SQLState: "HY000", Message: fmt.Sprintf("Unknown system variable '%s'", name)}
}

// unknownFunction is MySQL's ER_SP_DOES_NOT_EXIST (1305, 42000) or
// PostgreSQL's undefined_function (42883).
func unknownFunction(s *Session, name string) *sqlerr.Error {
	if postgres(s) {
		return &sqlerr.Error{Code: 1305, SQLState: "42883", Message: fmt.Sprintf("function %s() does not exist", name)}
	}
	return &sqlerr.Error{Code: 1305, SQLState: "42000", Message: fmt.Sprintf("FUNCTION %s does not exist", name)}
}

// databaseExists is MySQL's ER_DB_CREATE_EXISTS (1007, HY000) or
// PostgreSQL's duplicate_database (42P04).
func databaseExists(s *Session, name string) *sqlerr.Error {
	if postgres(s) {
		return &sqlerr.Error{Code: 1007, SQLState: "42P04", Message: fmt.Sprintf("database \"%s\" already exists", name)}
	}
	return &sqlerr.Error{Code: 1007, SQLState: "HY000", Message: fmt.Sprintf("Can't create database '%s'; database exists", name)}
}

// databaseMissing is DROP DATABASE's MySQL ER_DB_DROP_EXISTS (1008, HY000)
// or PostgreSQL's invalid_catalog_name (3D000).
func databaseMissing(s *Session, name string) *sqlerr.Error {
	if postgres(s) {
		return &sqlerr.Error{Code: 1008, SQLState: "3D000", Message: fmt.Sprintf("database \"%s\" does not exist", name)}
	}
	return &sqlerr.Error{Code: 1008, SQLState: "HY000", Message: fmt.Sprintf("Can't drop database '%s'; database doesn't exist", name)}
}

// nullMissing returns res with every empty value of a BIGINT column as
// NULL: a typed column never carries an empty string, which a driver
// reading an integer fails on. Shared results are copied, never modified.
func nullMissing(res *Result) *Result {
	if res == nil {
		return nil
	}
	var typed []int
	for i, c := range res.Columns {
		if c.Type == Int64 {
			typed = append(typed, i)
		}
	}
	if len(typed) == 0 {
		return res
	}
	var out *Result
	copied := map[int]bool{}
	for r, row := range res.Rows {
		for _, i := range typed {
			if i >= len(row) || row[i] == nil || *row[i] != "" {
				continue
			}
			if out == nil {
				cp := *res
				cp.Rows = append([][]*string(nil), res.Rows...)
				cp.Shared = false
				out = &cp
			}
			if !copied[r] {
				out.Rows[r] = append([]*string(nil), row...)
				copied[r] = true
			}
			out.Rows[r][i] = nil
		}
	}
	if out == nil {
		return res
	}
	return out
}

// nullIfEmpty is v, or NULL when v is empty.
func nullIfEmpty(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

// setConfig is PostgreSQL's set_config(name, value, is_local): the
// session's variable name becomes value, which it returns.
func setConfig(s *Session, args []distsql.Expr) (*string, ColumnType, error) {
	if len(args) != 3 {
		return nil, Text, &sqlerr.Error{Code: 1305, SQLState: "42883", Message: fmt.Sprintf("function set_config() takes 3 arguments, not %d", len(args))}
	}
	var vals [2]string
	for i := range vals {
		l, ok := args[i].(distsql.Literal)
		if !ok || l.Value.Kind == distsql.NullValue {
			return nil, Text, &sqlerr.Error{Code: 1305, SQLState: "22023", Message: "set_config takes a literal name and value"}
		}
		vals[i] = l.Value.Text
	}
	if s.Variables == nil {
		s.Variables = map[string]string{}
	}
	if _, ok := s.Variables[vals[0]]; !ok && len(s.Variables) >= maxSessionVariables {
		return nil, Text, unsupported(fmt.Sprintf("a session keeps at most %d variables", maxSessionVariables))
	}
	s.Variables[strings.ToLower(vals[0])] = vals[1]
	return str(vals[1]), Text, nil
}
