package console

import (
	"context"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"reflect"
	"testing"
)

// The statements the mariadb client and the Go drivers send before the
// prompt: each answers as a MySQL server would.
func TestConnectStatements(t *testing.T) {
	e := New(Deps{})
	s := newSession()
	run := func(q string) *Result {
		t.Helper()
		res, err := e.Execute(context.Background(), s, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return res
	}
	res := run("select @@version_comment limit 1")
	if got := rowStrings(res); !reflect.DeepEqual(columnNames(res), []string{"@@version_comment"}) || !reflect.DeepEqual(got, [][]string{{VersionComment}}) {
		t.Errorf("version_comment: %v %v", columnNames(res), got)
	}
	if got := rowStrings(run("SELECT DATABASE()")); !reflect.DeepEqual(got, [][]string{{"NULL"}}) {
		t.Errorf("DATABASE() = %v", got)
	}
	run("SET NAMES utf8mb4 COLLATE utf8mb4_bin")
	run("SET autocommit = OFF, @x = 'v'")
	res = run("SELECT @@session.autocommit AS ac, @@character_set_client, @@collation_connection, @x, @missing, USER()")
	want := [][]string{{"0", "utf8mb4", "utf8mb4_bin", "v", "NULL", "root@127.0.0.1"}}
	if got := rowStrings(res); !reflect.DeepEqual(got, want) {
		t.Errorf("after SET: %v, want %v", got, want)
	}
	if got := columnNames(res); got[0] != "ac" || got[1] != "@@character_set_client" {
		t.Errorf("columns %v", got)
	}
	if res.Columns[0].Type != Int64 {
		t.Errorf("@@autocommit is not declared BIGINT")
	}
	if got := rowStrings(run("SELECT @@max_allowed_packet")); got[0][0] != "16777216" {
		t.Errorf("max_allowed_packet %v", got)
	}
	if res := run("SELECT 1 LIMIT 0"); len(res.Rows) != 0 || len(res.Columns) != 1 {
		t.Errorf("LIMIT 0: %v", rowStrings(res))
	}
	if got := rowStrings(run("SHOW VARIABLES LIKE 'lower_case_table_names'")); !reflect.DeepEqual(got, [][]string{{"lower_case_table_names", "0"}}) {
		t.Errorf("SHOW VARIABLES: %v", got)
	}
	run("BEGIN")
	run("COMMIT")
	if res := run("SHOW WARNINGS"); len(res.Rows) != 0 {
		t.Errorf("warnings %v", rowStrings(res))
	}

	for q, code := range map[string]uint16{
		"SELECT @@no_such_variable": 1193,
		"SELECT no_such_function()": 1305,
		"SET GLOBAL autocommit = 1": 30001,
		"SHOW TABLES":               1046,
	} {
		_, err := e.Execute(context.Background(), s, q)
		ce, ok := err.(*sqlerr.Error)
		if !ok || ce.Code != code {
			t.Errorf("%s: %v, want code %d", q, err, code)
		}
	}
}

// What MySQL Connector/J and the mariadb client's status command read on
// connect, as they send it.
func TestDriverConnectQueries(t *testing.T) {
	e := New(Deps{})
	s := newSession()
	for _, q := range []string{
		"/* mysql-connector-j-8.4.0 (Revision: 1c3f5c149e0bfe31c7fbeb24e2d260cd890972c4) */SELECT  @@session.auto_increment_increment AS auto_increment_increment, " +
			"@@character_set_client AS character_set_client, @@character_set_connection AS character_set_connection, @@character_set_results AS character_set_results, " +
			"@@character_set_server AS character_set_server, @@collation_server AS collation_server, @@collation_connection AS collation_connection, " +
			"@@init_connect AS init_connect, @@interactive_timeout AS interactive_timeout, @@license AS license, @@lower_case_table_names AS lower_case_table_names, " +
			"@@max_allowed_packet AS max_allowed_packet, @@net_write_timeout AS net_write_timeout, @@performance_schema AS performance_schema, " +
			"@@query_cache_size AS query_cache_size, @@query_cache_type AS query_cache_type, @@sql_mode AS sql_mode, @@system_time_zone AS system_time_zone, " +
			"@@time_zone AS time_zone, @@transaction_isolation AS transaction_isolation, @@wait_timeout AS wait_timeout",
		"SET character_set_results = NULL",
		"SET autocommit=1",
		"SELECT @@session.transaction_read_only",
		"select @@character_set_client, @@character_set_connection, @@character_set_server, @@character_set_database limit 1",
		"SHOW SESSION VARIABLES LIKE 'lower_case_table_names'",
		"SELECT current_user()",
	} {
		res, err := e.Execute(context.Background(), s, q)
		if err != nil {
			t.Errorf("%.60s...: %v", q, err)
			continue
		}
		if len(res.Columns) > 0 && len(res.Rows) != 1 {
			t.Errorf("%.60s...: %d rows", q, len(res.Rows))
		}
	}
}

func TestPostgreSQLConnectStatements(t *testing.T) {
	e := New(Deps{})
	s := &Session{ID: NewSessionID(), User: "postgres", Host: "127.0.0.1", Protocol: "PostgreSQL"}
	for q, want := range map[string]string{
		"SHOW server_version":         PostgreSQLServerVersion,
		"select pg_catalog.version()": "PostgreSQL " + PostgreSQLServerVersion,
		"SELECT current_database()":   "NULL",
		"SELECT current_user":         "postgres",
	} {
		res, err := e.Execute(context.Background(), s, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got := rowStrings(res); got[0][0] != want {
			t.Errorf("%s = %v, want %q", q, got, want)
		}
	}
	res, err := e.Execute(context.Background(), s, "SELECT version(), 1, current_user AS me")
	if err != nil {
		t.Fatal(err)
	}
	if got := columnNames(res); !reflect.DeepEqual(got, []string{"version", "?column?", "me"}) {
		t.Errorf("PostgreSQL column names %v", got)
	}
	if _, err := e.Execute(context.Background(), s, "SET application_name = 'psql'"); err != nil {
		t.Fatal(err)
	}
	res, _ = e.Execute(context.Background(), s, "SHOW application_name")
	if got := rowStrings(res); got[0][0] != "psql" {
		t.Errorf("application_name %v", got)
	}
}

func TestMatchLike(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"sql_%", "sql_show", true}, {"sql_%", "SQL_SHOW", true}, {"sql\\_%", "sqlxshow", false},
		{"s_l%", "sql", true}, {"%", "", true}, {"a*", "a*", true}, {"a*", "ab", false}, {"[x]", "[x]", true},
	} {
		if got := matchLike(tc.pattern, tc.s); got != tc.want {
			t.Errorf("matchLike(%q, %q) = %v", tc.pattern, tc.s, got)
		}
	}
}
