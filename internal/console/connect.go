package console

import (
	"context"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// What MySQL and PostgreSQL clients send on connect: SELECT @@var,
// SELECT DATABASE(), SET NAMES / autocommit / other session variables,
// SHOW DATABASES / TABLES / VARIABLES, USE.

// MySQLServerVersion is the server version a MySQL front end announces and
// SELECT @@version / VERSION() return: the MySQL version ShardingSphere-Proxy
// announces by default, then the shardkeeper version.
const MySQLServerVersion = "5.7.22-" + cluster.Version

// PostgreSQLServerVersion is the server_version a PostgreSQL front end
// announces and SHOW server_version returns.
const PostgreSQLServerVersion = "14.0 (" + cluster.Version + ")"

// VersionComment is SELECT @@version_comment: what the mysql client shows
// after "Server version:".
const VersionComment = "shardkeeper: ShardingSphere cluster mode in Go"

// sessionDefaults are the session variables a client may read, with the
// values a fresh session has: what MySQL drivers and the mysql client
// query on connect.
var sessionDefaults = map[string]string{
	"version":                  MySQLServerVersion,
	"version_comment":          VersionComment,
	"autocommit":               "1",
	"auto_increment_increment": "1",
	"character_set_client":     "utf8mb4",
	"character_set_connection": "utf8mb4",
	"character_set_results":    "utf8mb4",
	"character_set_server":     "utf8mb4",
	"character_set_database":   "utf8mb4",
	"character_set_system":     "utf8mb3",
	"character_set_filesystem": "binary",
	"collation_database":       "utf8mb4_general_ci",
	"default_storage_engine":   "InnoDB",
	"protocol_version":         "10",
	"sql_auto_is_null":         "0",
	"sql_safe_updates":         "0",
	"session_track_gtids":      "OFF",
	"collation_connection":     "utf8mb4_general_ci",
	"collation_server":         "utf8mb4_general_ci",
	"init_connect":             "",
	"interactive_timeout":      "28800",
	"license":                  "Apache-2.0",
	"lower_case_table_names":   "0",
	"max_allowed_packet":       "16777216",
	"net_buffer_length":        "16384",
	"net_write_timeout":        "60",
	"performance_schema":       "0",
	"query_cache_size":         "0",
	"query_cache_type":         "OFF",
	"sql_mode":                 "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION",
	"sql_select_limit":         "18446744073709551615",
	"system_time_zone":         "UTC",
	"time_zone":                "SYSTEM",
	"transaction_isolation":    "REPEATABLE-READ",
	"tx_isolation":             "REPEATABLE-READ",
	"transaction_read_only":    "0",
	"tx_read_only":             "0",
	"wait_timeout":             "28800",
	// PostgreSQL (SHOW name)
	"server_version":                PostgreSQLServerVersion,
	"server_version_num":            "140000",
	"bytea_output":                  "hex",
	"server_encoding":               "UTF8",
	"client_encoding":               "UTF8",
	"standard_conforming_strings":   "on",
	"search_path":                   `"$user", public`,
	"datestyle":                     "ISO, MDY",
	"integer_datetimes":             "on",
	"timezone":                      "UTC",
	"application_name":              "",
	"default_transaction_read_only": "off",
	"in_hot_standby":                "off",
}

// integerVariables are declared as BIGINT columns.
var integerVariables = map[string]bool{
	"autocommit": true, "auto_increment_increment": true, "interactive_timeout": true,
	"lower_case_table_names": true, "max_allowed_packet": true, "net_buffer_length": true,
	"net_write_timeout": true, "query_cache_size": true, "wait_timeout": true,
	"transaction_read_only": true, "tx_read_only": true, "performance_schema": true,
}

// maxSessionVariables bounds what SET can make a session remember.
const maxSessionVariables = 256

// variable returns the session's value of a system variable.
func variable(s *Session, name string) (string, bool) {
	if v, ok := s.Variables[name]; ok {
		return v, true
	}
	v, ok := sessionDefaults[name]
	return v, ok
}

func (e *Engine) selectStatement(_ context.Context, s *Session, st *distsql.Select) (*Result, error) {
	res := &Result{}
	row := make([]*string, 0, len(st.Items))
	for _, item := range st.Items {
		v, typ, err := e.eval(s, item.Expr)
		if err != nil {
			return nil, err
		}
		name := item.Alias
		if name == "" {
			name = columnName(s, item)
		}
		res.Columns = append(res.Columns, Column{Name: name, Type: typ})
		row = append(row, v)
	}
	if st.Limit != 0 {
		res.Rows = [][]*string{row}
	}
	return res, nil
}

// columnName is the column a SELECT item without an alias makes: the
// expression as typed in MySQL; the function or variable name, or
// ?column?, in PostgreSQL.
func columnName(s *Session, item distsql.SelectItem) string {
	if s.Protocol != "PostgreSQL" {
		return item.Text
	}
	switch x := item.Expr.(type) {
	case distsql.Call:
		return x.Name
	case distsql.Variable:
		return x.Name
	}
	return "?column?"
}

// eval evaluates one SELECT expression.
func (e *Engine) eval(s *Session, x distsql.Expr) (*string, ColumnType, error) {
	switch x := x.(type) {
	case distsql.Literal:
		switch x.Value.Kind {
		case distsql.NullValue:
			return nil, Text, nil
		case distsql.IntValue:
			return str(x.Value.Text), Int64, nil
		case distsql.BoolValue:
			if x.Value.Text == "true" {
				return str("1"), Int64, nil
			}
			return str("0"), Int64, nil
		}
		return str(x.Value.Text), Text, nil
	case distsql.Variable:
		if !x.System {
			v, ok := s.Variables["@"+x.Name]
			if !ok {
				return nil, Text, nil
			}
			return str(v), Text, nil
		}
		v, ok := variable(s, x.Name)
		if !ok {
			return nil, Text, unknownSystemVariable(s, x.Name)
		}
		typ := Text
		if integerVariables[x.Name] {
			typ = Int64
		}
		return str(v), typ, nil
	case distsql.Call:
		switch x.Name {
		case "database", "schema", "current_database":
			if s.Database == "" {
				return nil, Text, nil
			}
			return str(s.Database), Text, nil
		case "current_schema":
			return str("public"), Text, nil
		case "version":
			if s.Protocol == "PostgreSQL" {
				return str("PostgreSQL " + PostgreSQLServerVersion), Text, nil
			}
			return str(MySQLServerVersion), Text, nil
		case "user", "current_user", "session_user", "system_user":
			if s.Protocol == "PostgreSQL" || x.Name == "current_user" && s.Host == "" {
				return str(s.User), Text, nil
			}
			return str(s.User + "@" + s.Host), Text, nil
		case "now", "current_timestamp", "sysdate", "localtime", "localtimestamp":
			return str(time.Now().UTC().Format("2006-01-02 15:04:05")), Text, nil
		case "set_config":
			return setConfig(s, x.Args)
		case "concat":
			var b strings.Builder
			for _, arg := range x.Args {
				v, _, err := e.eval(s, arg)
				if err != nil || v == nil {
					return nil, Text, err
				}
				b.WriteString(*v)
			}
			return str(b.String()), Text, nil
		case "connection_id", "pg_backend_pid":
			return str(strconv.FormatUint(uint64(process.Number(s.ID)), 10)), Int64, nil
		}
		return nil, Text, unknownFunction(s, x.Name)
	}
	return nil, Text, unsupported(fmt.Sprintf("expression %T", x))
}

func (e *Engine) setVariables(_ context.Context, s *Session, st *distsql.SetVariables) (*Result, error) {
	for _, a := range st.Assignments {
		if a.Scope == "global" || a.Scope == "persist" {
			return nil, unsupported("SET GLOBAL: use SET DIST VARIABLE for the cluster's properties")
		}
		if s.Variables == nil {
			s.Variables = map[string]string{}
		}
		if len(s.Variables) >= maxSessionVariables {
			return nil, &sqlerr.Error{Code: 30001, SQLState: "0A000", Message: fmt.Sprintf("Unsupported SQL operation: a session keeps at most %d variables.", maxSessionVariables)}
		}
		v := a.Value.Text
		if a.Expr != nil {
			x, _, err := e.eval(s, a.Expr)
			if err != nil {
				return nil, err
			}
			a.Value = distsql.Value{Kind: distsql.StringValue}
			if x == nil {
				a.Value.Kind = distsql.NullValue
			} else {
				a.Value.Text, v = *x, *x
			}
		}
		switch a.Value.Kind {
		case distsql.BoolValue:
			v = "0"
			if a.Value.Text == "true" {
				v = "1"
			}
		case distsql.WordValue:
			switch strings.ToUpper(v) {
			case "ON":
				v = "1"
			case "OFF":
				v = "0"
			}
		}
		switch a.Name {
		case "names", "character_set":
			for _, n := range []string{"character_set_client", "character_set_connection", "character_set_results"} {
				s.Variables[n] = a.Value.Text
			}
			if a.Collate != "" {
				s.Variables["collation_connection"] = a.Collate
			}
		default:
			if a.Scope == "user" {
				s.Variables["@"+a.Name] = a.Value.Text
			} else {
				if a.Value.Kind == distsql.WordValue && strings.EqualFold(a.Value.Text, "DEFAULT") {
					delete(s.Variables, a.Name)
					continue
				}
				s.Variables[a.Name] = v
			}
		}
	}
	return &Result{}, nil
}

// matchLike reports whether s matches the SQL LIKE pattern (% any run, _
// one character, \ escapes), case-insensitively.
func matchLike(pattern, s string) bool { return rule.MatchLike(pattern, s) }

func (e *Engine) databases() []string {
	snap := e.d.Metadata.Current()
	names := make([]string, 0, len(snap.Databases))
	for n := range snap.Databases {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// showDatabases lists the databases s may use; one that an import left
// half-written (dbconfig.ImportMark) is listed with a warning saying so and
// how to drop and finish it.
func (e *Engine) showDatabases(ctx context.Context, s *Session, st *distsql.ShowDatabases) (*Result, error) {
	res := &Result{Columns: textColumns("Database")}
	g := e.grant(s)
	var marks map[string]dbconfig.ImportMark
	if e.d.Repo != nil {
		var err error
		snap := e.d.Metadata.Current()
		known := func(db string) bool { return snap.Databases[db] != nil && g.permits(db) }
		if marks, err = dbconfig.IncompleteImports(ctx, e.d.Repo, known); err != nil {
			res.Warnings = append(res.Warnings, "half-written imports cannot be checked: "+err.Error())
		}
	}
	for _, n := range e.databases() {
		if (st.Like == nil || matchLike(*st.Like, n)) && g.permits(n) {
			res.Rows = append(res.Rows, []*string{str(n)})
			if m, ok := marks[n]; ok {
				res.Warnings = append(res.Warnings, m.Advice())
			}
		}
	}
	return res, nil
}

func (e *Engine) showTables(_ context.Context, s *Session, st *distsql.ShowTables) (*Result, error) {
	db := st.Database
	if db == "" {
		db = s.Database
	}
	if db == "" {
		return nil, noDatabaseSelected()
	}
	d := e.d.Metadata.Current().Databases[db]
	if d == nil {
		return nil, unknownDatabase(s, db)
	}
	cols := textColumns("Tables_in_" + db)
	if st.Full {
		cols = append(cols, Column{Name: "Table_type"})
	}
	res := &Result{Columns: cols}
	for _, t := range logicTables(d) {
		typ := "BASE TABLE"
		if t.View {
			typ = "VIEW"
		}
		if st.Like != nil && !matchLike(*st.Like, t.Name) {
			continue
		}
		row := []*string{str(t.Name)}
		if st.Full {
			row = append(row, str(typ))
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

func (e *Engine) showVariables(_ context.Context, s *Session, st *distsql.ShowVariables) (*Result, error) {
	if st.Name != "" {
		v, ok := variable(s, st.Name)
		if !ok {
			return nil, unknownSystemVariable(s, st.Name)
		}
		return &Result{Columns: textColumns(st.Name), Rows: [][]*string{{str(v)}}}, nil
	}
	names := make([]string, 0, len(sessionDefaults)+len(s.Variables))
	for n := range sessionDefaults {
		names = append(names, n)
	}
	for n := range s.Variables {
		if _, ok := sessionDefaults[n]; !ok && !strings.HasPrefix(n, "@") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	res := &Result{Columns: textColumns("Variable_name", "Value")}
	for _, n := range names {
		if st.Like != nil && !matchLike(*st.Like, n) {
			continue
		}
		v, _ := variable(s, n)
		res.Rows = append(res.Rows, []*string{str(n), str(v)})
	}
	return res, nil
}

func (e *Engine) use(_ context.Context, s *Session, st *distsql.Use) (*Result, error) {
	if e.d.Metadata.Current().Databases[st.Database] == nil {
		return nil, unknownDatabase(s, st.Database)
	}
	s.Database = st.Database
	return &Result{}, nil
}
