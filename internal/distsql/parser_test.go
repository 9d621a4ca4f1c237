package distsql

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// parseCase is a statement and what Parse makes of it.
type parseCase struct {
	sql  string
	want Statement
}

// checkParses parses each case's statement and compares the result.
func checkParses(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		got, err := Parse(tc.sql)
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %#v\nwant %#v", tc.sql, got, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want Statement
	}{
		// Compute nodes.
		{"SHOW COMPUTE NODES", &ShowComputeNodes{}},
		{"show compute nodes;", &ShowComputeNodes{}},
		{"  Show\n\tCompute  Nodes ; ;", &ShowComputeNodes{}},
		{"/* hi */ SHOW COMPUTE NODES -- trailing\n", &ShowComputeNodes{}},
		{"# comment\nSHOW COMPUTE NODE INFO", &ShowComputeNodeInfo{}},
		{"SHOW COMPUTE NODE MODE", &ShowComputeNodeMode{}},
		{"ENABLE COMPUTE NODE '734bb036-13fd-4d3c-9bbb-c3f3f1c1ea60'", &EnableComputeNode{InstanceID: "734bb036-13fd-4d3c-9bbb-c3f3f1c1ea60"}},
		{"DISABLE COMPUTE NODE `node-1`", &DisableComputeNode{InstanceID: "node-1"}},
		{"DISABLE COMPUTE NODE node1", &DisableComputeNode{InstanceID: "node1"}},
		{`DISABLE COMPUTE NODE "n""1"`, &DisableComputeNode{InstanceID: `n"1`}},
		{"LABEL COMPUTE NODE 'n1' WITH sh1, sh2", &LabelComputeNode{InstanceID: "n1", Labels: []string{"sh1", "sh2"}}},
		{"RELABEL COMPUTE NODE 'n1' WITH sh3", &LabelComputeNode{InstanceID: "n1", Labels: []string{"sh3"}, Relabel: true}},
		{"UNLABEL COMPUTE NODE 'n1'", &UnlabelComputeNode{InstanceID: "n1"}},
		{"UNLABEL COMPUTE NODE 'n1' WITH sh1", &UnlabelComputeNode{InstanceID: "n1", Labels: []string{"sh1"}}},

		// Variables.
		{"SHOW DIST VARIABLES", &ShowDistVariables{}},
		{"SHOW DIST VARIABLES LIKE 'sql_%'", &ShowDistVariables{Like: ptr("sql_%")}},
		{"SHOW TEMP DIST VARIABLES", &ShowDistVariables{Temp: true}},
		{"SHOW DIST VARIABLE WHERE NAME = sql_show", &ShowDistVariable{Name: "sql_show"}},
		{"SHOW DIST VARIABLE WHERE NAME='sql_show'", &ShowDistVariable{Name: "sql_show"}},
		{"SET DIST VARIABLE sql_show = true", &SetDistVariable{Name: "sql_show", Value: Value{Kind: BoolValue, Text: "true"}}},
		{"SET DIST VARIABLE sql_show = 'false'", &SetDistVariable{Name: "sql_show", Value: Value{Kind: StringValue, Text: "false"}}},
		{"SET DIST VARIABLE kernel_executor_size = 16", &SetDistVariable{Name: "kernel_executor_size", Value: Value{Kind: IntValue, Text: "16"}}},
		{"SET DIST VARIABLE x = -1", &SetDistVariable{Name: "x", Value: Value{Kind: IntValue, Text: "-1"}}},

		// Lock.
		{"LOCK CLUSTER WITH WRITE", &LockCluster{Strategy: "WRITE"}},
		{"LOCK CLUSTER WITH read_write TIMEOUT 2000", &LockCluster{Strategy: "READ_WRITE", TimeoutMillis: 2000}},
		{"LOCK CLUSTER WITH LOCK_STRATEGY(TYPE(NAME='WRITE'))", &LockCluster{Strategy: "WRITE"}},
		{"LOCK CLUSTER WITH LOCK_STRATEGY(TYPE(NAME=\"READ_WRITE\")) TIMEOUT 10", &LockCluster{Strategy: "READ_WRITE", TimeoutMillis: 10}},
		{`LOCK CLUSTER WITH LOCK_STRATEGY(TYPE="WRITE") TIMEOUT 2000`, &LockCluster{Strategy: "WRITE", TimeoutMillis: 2000}},
		{"UNLOCK CLUSTER", &UnlockCluster{}},
		{"UNLOCK CLUSTER TIMEOUT 500", &UnlockCluster{TimeoutMillis: 500}},

		// Storage units.
		{"SHOW STORAGE UNITS", &ShowStorageUnits{}},
		{"SHOW STORAGE UNITS FROM sharding_db WHERE USAGE_COUNT = 0", &ShowStorageUnits{Database: "sharding_db", UsageCount: ptr(int64(0))}},
		{"SHOW STORAGE UNITS FROM `db` LIKE 'ds%'", &ShowStorageUnits{Database: "db", Like: ptr("ds%")}},
		{"REGISTER STORAGE UNIT ds_0 (HOST='127.0.0.1', PORT=3306, DB='db0', USER='root', PASSWORD='p''w')",
			&RegisterStorageUnit{Units: []StorageUnit{{Name: "ds_0", Host: "127.0.0.1", Port: 3306, DB: "db0", User: "root", Password: "p'w", HasPassword: true}}}},
		{"REGISTER STORAGE UNIT IF NOT EXISTS ds_0 (URL='jdbc:mysql://h:3306/db0?useSSL=false', USER='root', PROPERTIES('maximumPoolSize'=10, 'readOnly'=false)), ds_1 (HOST='h', PORT=5432, DB='d', USER='u')",
			&RegisterStorageUnit{IfNotExists: true, Units: []StorageUnit{
				{Name: "ds_0", URL: "jdbc:mysql://h:3306/db0?useSSL=false", User: "root", Properties: []Property{
					{Key: "maximumPoolSize", Value: Value{Kind: IntValue, Text: "10"}},
					{Key: "readOnly", Value: Value{Kind: BoolValue, Text: "false"}}}},
				{Name: "ds_1", Host: "h", Port: 5432, DB: "d", User: "u"}}}},
		{"ALTER STORAGE UNIT ds_0 (URL='jdbc:mysql://h/db', USER='root', PASSWORD='', PROPERTIES())",
			&AlterStorageUnit{Units: []StorageUnit{{Name: "ds_0", URL: "jdbc:mysql://h/db", User: "root", HasPassword: true, Properties: []Property{}}}}},
		{"UNREGISTER STORAGE UNIT ds_0", &UnregisterStorageUnit{Names: []string{"ds_0"}}},
		{"UNREGISTER STORAGE UNIT IF EXISTS ds_0, ds_1 IGNORE SINGLE TABLES", &UnregisterStorageUnit{IfExists: true, Names: []string{"ds_0", "ds_1"}, IgnoreSingleTables: true}},
		{"UNREGISTER STORAGE UNIT ds_0 IGNORE BROADCAST TABLES", &UnregisterStorageUnit{Names: []string{"ds_0"}, IgnoreBroadcastTables: true}},
		{"UNREGISTER STORAGE UNIT ds_0 IGNORE BROADCAST, SINGLE TABLES", &UnregisterStorageUnit{Names: []string{"ds_0"}, IgnoreSingleTables: true, IgnoreBroadcastTables: true}},

		{"SHOW KEY GENERATE ALGORITHM PLUGINS", &ShowKeyGenerateAlgorithmPlugins{}},

		// Refresh, export, import.
		{"REFRESH DATABASE METADATA", &RefreshDatabaseMetadata{}},
		{"FORCE REFRESH DATABASE METADATA sharding_db;", &RefreshDatabaseMetadata{Force: true, Database: "sharding_db"}},
		{"EXPORT DATABASE CONFIGURATION", &ExportDatabaseConfiguration{}},
		{"EXPORT DATABASE CONFIGURATION FROM db TO FILE '/tmp/db.yaml'", &ExportDatabaseConfiguration{Database: "db", File: "/tmp/db.yaml"}},
		{"IMPORT DATABASE CONFIGURATION FROM FILE '/tmp/db.yaml'", &ImportDatabaseConfiguration{File: "/tmp/db.yaml"}},
		{"EXPORT METADATA", &ExportMetadata{}},
		{"EXPORT METADATA TO FILE '/tmp/m'", &ExportMetadata{File: "/tmp/m"}},
		{"IMPORT METADATA 'ZXhhbXBsZQ=='", &ImportMetadata{Value: "ZXhhbXBsZQ=="}},
		{"IMPORT METADATA FROM FILE '/tmp/m'", &ImportMetadata{File: "/tmp/m"}},

		// Processes and keys.
		{"SHOW PROCESSLIST", &ShowProcesslist{}},
		{"show full processlist", &ShowProcesslist{Full: true}},
		{"KILL 3e84d33ecb9742f2b6cef78fea0ded89", &Kill{ProcessID: "3e84d33ecb9742f2b6cef78fea0ded89"}},
		{"KILL '3e84d33e'", &Kill{ProcessID: "3e84d33e"}},
		{"KILL QUERY 12", &Kill{ProcessID: "12", Query: true}},
		{"KILL CONNECTION abc", &Kill{ProcessID: "abc"}},
		{"SHOW NEXT KEYS", &ShowNextKeys{Count: 1}},
		{"SHOW NEXT KEYS COUNT 1000", &ShowNextKeys{Count: 1000}},

		// Client statements.
		{"select @@version_comment limit 1", &Select{Limit: 1, Items: []SelectItem{{Expr: Variable{Name: "version_comment", System: true}, Text: "@@version_comment"}}}},
		{"SELECT DATABASE()", &Select{Limit: -1, Items: []SelectItem{{Expr: Call{Name: "database"}, Text: "DATABASE()"}}}},
		{"SELECT @@session.auto_increment_increment AS auto_increment_increment, @@max_allowed_packet",
			&Select{Limit: -1, Items: []SelectItem{
				{Expr: Variable{Name: "auto_increment_increment", Scope: "session", System: true}, Alias: "auto_increment_increment", Text: "@@session.auto_increment_increment"},
				{Expr: Variable{Name: "max_allowed_packet", System: true}, Text: "@@max_allowed_packet"}}}},
		{"SELECT 1", &Select{Limit: -1, Items: []SelectItem{{Expr: Literal{Value: Value{Kind: IntValue, Text: "1"}}, Text: "1"}}}},
		{"select pg_catalog.version()", &Select{Limit: -1, Items: []SelectItem{{Expr: Call{Name: "version"}, Text: "pg_catalog.version()"}}}},
		{"SET NAMES utf8mb4", &SetVariables{Assignments: []Assignment{{Name: "names", Value: Value{Kind: WordValue, Text: "utf8mb4"}}}}},
		{"SET NAMES 'utf8mb4' COLLATE 'utf8mb4_general_ci'", &SetVariables{Assignments: []Assignment{{Name: "names", Value: Value{Kind: StringValue, Text: "utf8mb4"}, Collate: "utf8mb4_general_ci"}}}},
		{"SET autocommit=1, @@session.sql_mode = 'X', SESSION time_zone = '+00:00'", &SetVariables{Assignments: []Assignment{
			{Name: "autocommit", Value: Value{Kind: IntValue, Text: "1"}},
			{Scope: "session", Name: "sql_mode", Value: Value{Kind: StringValue, Text: "X"}},
			{Scope: "session", Name: "time_zone", Value: Value{Kind: StringValue, Text: "+00:00"}}}}},
		{"SET search_path TO a, b", &SetVariables{Assignments: []Assignment{{Name: "search_path", Value: Value{Kind: WordValue, Text: "a, b"}}}}},
		{"set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')", &SetVariables{Assignments: []Assignment{
			{Name: "autocommit", Value: Value{Kind: IntValue, Text: "1"}},
			{Name: "sql_mode", Expr: Call{Name: "concat", Args: []Expr{Variable{Name: "sql_mode", System: true}, Literal{Value: Value{Kind: StringValue, Text: ",STRICT_TRANS_TABLES"}}}}}}}},
		{"REFRESH TABLE METADATA", &RefreshTableMetadata{}},
		{"REFRESH TABLE METADATA FROM STORAGE UNIT ds_0", &RefreshTableMetadata{Unit: "ds_0"}},
		{"REFRESH TABLE METADATA t_order FROM STORAGE UNIT ds_0 SCHEMA public", &RefreshTableMetadata{Table: "t_order", Unit: "ds_0", Schema: "public"}},
		{"SHOW TABLE METADATA t_order, t_order_0 FROM db", &ShowTableMetadata{Tables: []string{"t_order", "t_order_0"}, Database: "db"}},
		{"EXPORT STORAGE NODES FROM db TO FILE '/x/nodes.json'", &ExportStorageNodes{Database: "db", File: "/x/nodes.json"}},
		{"CONVERT YAML CONFIGURATION FROM FILE 'config-sharding.yaml'", &ConvertYamlConfiguration{File: "config-sharding.yaml"}},
		{"ALTER COMPUTE NODE 'id-1' SET xa_recovery_nodes = 'a', 'b'", &AlterComputeNode{InstanceID: "id-1", Name: "XA_RECOVERY_NODES", Values: []string{"a", "b"}}},
		{"SHOW PLUGINS OF 'ShardingAlgorithm'", &ShowPlugins{SPI: "ShardingAlgorithm"}},
		{"SHOW IMPLEMENTATIONS OF ShardingAlgorithm", &ShowPlugins{SPI: "ShardingAlgorithm"}},
		{"SHOW LOAD BALANCE ALGORITHM IMPLEMENTATIONS", &ShowPlugins{SPI: "LOAD BALANCE", Family: true}},
		{"SET extra_float_digits = 3", &SetVariables{Assignments: []Assignment{{Name: "extra_float_digits", Value: Value{Kind: IntValue, Text: "3"}}}}},
		{"SHOW DATABASES", &ShowDatabases{}},
		{"SHOW TABLES", &ShowTables{}},
		{"SHOW FULL TABLES FROM db LIKE 't%'", &ShowTables{Full: true, Database: "db", Like: ptr("t%")}},
		{"SHOW VARIABLES LIKE 'lower_case_%'", &ShowVariables{Like: ptr("lower_case_%")}},
		{"SHOW server_version", &ShowVariables{Name: "server_version"}},
		{"SHOW WARNINGS", &ShowWarnings{}},
		{"USE sharding_db", &Use{Database: "sharding_db"}},
		{"use `sharding db`", &Use{Database: "sharding db"}},
		{"BEGIN", &Transaction{Verb: "begin"}},
		{"COMMIT", &Transaction{Verb: "commit"}},
		{"", &Empty{}},
		{" ; -- nothing\n", &Empty{}},
	} {
		got, err := Parse(tc.sql)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.sql, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q)\n got %#v\nwant %#v", tc.sql, got, tc.want)
		}
	}
}

func TestParseStringEscapes(t *testing.T) {
	st, err := Parse(`SET DIST VARIABLE x = 'a\'b\\c\nd''e'`)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.(*SetDistVariable).Value.Text; got != "a'b\\c\nd'e" {
		t.Errorf("value = %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		sql          string
		line, column int
		near, msg    string
	}{
		{"SHOW COMPUTE NODEZ", 1, 14, "NODEZ", "NODES or NODE expected"},
		{"SHOW COMPUTE NODE", 1, 18, "", "INFO or MODE expected"},
		{"SHOW COMPUTE", 1, 13, "", "NODES or NODE expected"},
		{"SHOW COMPUTE NODES extra", 1, 20, "extra", "unexpected identifier 'extra' after the statement"},
		{"FROB", 1, 1, "FROB", "unknown statement FROB"},
		{"SET DIST VARIABLE sql_show", 1, 27, "", "'=' expected"},
		{"SHOW DIST VARIABLES LIKE sql", 1, 26, "sql", "LIKE pattern expected (a quoted string)"},
		{"SHOW\n  STORAGE UNITS WHERE USAGE_COUNT = x", 2, 37, "x", "usage count expected (an integer)"},
		{"SET DIST VARIABLE a = 'unterminated", 1, 23, "'unterminated", "unterminated string"},
		{"SHOW COMPUTE NODES /* open", 1, 20, "/* open", "unterminated comment"},
		{"REGISTER STORAGE UNIT ds (HOST='h', PORT=99999, DB='d', USER='u')", 1, 42, "99999, DB='d', USER='u')", "PORT must be between 1 and 65535"},
		{"REGISTER STORAGE UNIT ds (USER='u')", 1, 27, "USER='u')", "HOST or URL expected"},
		{"LOCK CLUSTER WITH", 1, 18, "", "lock strategy (WRITE or READ_WRITE) expected"},
		{"SHOW NEXT KEYS COUNT 99999999999999999999", 1, 22, "99999999999999999999", "COUNT out of range"},
		{"ENABLE COMPUTE NODE ü!", 1, 22, "!", "unexpected character '!'"},
		{"SELECT @", 1, 8, "@", "variable name expected after @"},
	} {
		_, err := Parse(tc.sql)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a *SyntaxError", tc.sql, err)
			continue
		}
		if se.Line != tc.line || se.Column != tc.column || se.Near != tc.near || se.Msg != tc.msg {
			t.Errorf("Parse(%q) = line %d column %d near %q: %q\nwant line %d column %d near %q: %q",
				tc.sql, se.Line, se.Column, se.Near, se.Msg, tc.line, tc.column, tc.near, tc.msg)
		}
		if !strings.HasPrefix(se.Error(), "You have an error in your SQL syntax: ") {
			t.Errorf("Error() = %q", se.Error())
		}
	}
}

func TestParseBounds(t *testing.T) {
	if _, err := Parse("SHOW COMPUTE NODES " + strings.Repeat(" ", MaxStatementBytes)); err == nil {
		t.Error("a statement over MaxStatementBytes parsed")
	}
	deep := "SELECT " + strings.Repeat("f(", 1000) + strings.Repeat(")", 1000)
	if _, err := Parse(deep); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("deep nesting: %v", err)
	}
	// A long list parses in linear time.
	long := "UNREGISTER STORAGE UNIT a" + strings.Repeat(", a", 100_000)
	start := time.Now()
	st, err := Parse(long)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.(*UnregisterStorageUnit).Names); n != 100_001 {
		t.Errorf("%d names", n)
	}
	t.Logf("100,001 names in %v", time.Since(start))
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SHOW COMPUTE NODES", "SET DIST VARIABLE sql_show = true",
		"REGISTER STORAGE UNIT ds (HOST='h', PORT=3306, DB='d', USER='u', PASSWORD='p', PROPERTIES('a'=1))",
		"LOCK CLUSTER WITH LOCK_STRATEGY(TYPE(NAME='WRITE')) TIMEOUT 1",
		"select @@version_comment limit 1", "SET NAMES utf8mb4 COLLATE x, autocommit = 1",
		"SELECT f(g(1, 'a'), @x) AS y", "KILL 'x'", "SHOW NEXT KEYS COUNT 10", "/* */ -- \n# x\n;",
		"`a``b` \"c\"\"d\" 'e\\'f'",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		if len(sql) > 4096 {
			return
		}
		st, err := Parse(sql)
		if err == nil && st == nil {
			t.Fatalf("Parse(%q) returned neither a statement nor an error", sql)
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %T %v, want *SyntaxError", sql, err, err)
			}
			if se.Line < 1 || se.Column < 1 {
				t.Fatalf("Parse(%q): position %d:%d", sql, se.Line, se.Column)
			}
		}
	})
}

// TestScope: every statement with FROM db names db in its Scope (the
// privilege model and the rule front ends rely on it), one that leaves it
// out acts on the session's database, and every statement whose effect
// reaches beyond one database says it is cluster-wide.
func TestScope(t *testing.T) {
	for _, q := range []string{
		"SHOW STORAGE UNITS FROM other_db", "SHOW TABLES FROM other_db", "SHOW FULL TABLES FROM other_db",
		"EXPORT DATABASE CONFIGURATION FROM other_db", "COUNT SHARDING RULE FROM other_db",
		"SHOW STATUS FROM READWRITE_SPLITTING RULES FROM other_db", "SHOW RULES USED STORAGE UNIT ds_0 FROM other_db",
		"COUNT MASK RULE FROM other_db",
	} {
		st, err := Parse(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if sc := st.Scope(); sc != (Scope{Database: "other_db", Session: true}) {
			t.Errorf("%s: Scope = %+v", q, sc)
		}
		without, err := Parse(strings.TrimSuffix(q, " FROM other_db"))
		if err != nil {
			t.Fatalf("%s without FROM: %v", q, err)
		}
		if sc := without.Scope(); sc != (Scope{Session: true}) {
			t.Errorf("%s without FROM: Scope = %+v", q, sc)
		}
	}
	for q, what := range map[string]string{
		"LOCK CLUSTER WITH LOCK_STRATEGY(TYPE(NAME='READ_WRITE'))": "LOCK CLUSTER",
		"UNLOCK CLUSTER":                                         "UNLOCK CLUSTER",
		"SET DIST VARIABLE sql_show = true":                      "SET DIST VARIABLE",
		"ENABLE COMPUTE NODE 'n1'":                               "ENABLE COMPUTE NODE",
		"DISABLE COMPUTE NODE 'n1'":                              "DISABLE COMPUTE NODE",
		"LABEL COMPUTE NODE 'n1' WITH sh1":                       "LABEL COMPUTE NODE",
		"RELABEL COMPUTE NODE 'n1' WITH sh1":                     "RELABEL COMPUTE NODE",
		"UNLABEL COMPUTE NODE 'n1'":                              "UNLABEL COMPUTE NODE",
		"REFRESH DATABASE METADATA":                              "REFRESH DATABASE METADATA of every database",
		"IMPORT METADATA 'e30='":                                 "IMPORT METADATA",
		"EXPORT METADATA":                                        "EXPORT METADATA",
		"IMPORT DATABASE CONFIGURATION FROM FILE 'a.yaml'":       "IMPORT DATABASE CONFIGURATION",
		"EXPORT DATABASE CONFIGURATION FROM db TO FILE 'a.yaml'": "EXPORT ... TO FILE",
	} {
		st, err := Parse(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got := st.Scope().Cluster; got != what {
			t.Errorf("%s: Scope().Cluster = %q, want %q", q, got, what)
		}
	}
	for _, q := range []string{
		"REGISTER STORAGE UNIT ds_0 (URL='jdbc:mysql://h/db', USER='u')", "UNREGISTER STORAGE UNIT ds_0",
		"REFRESH DATABASE METADATA db", "CREATE DATABASE db", "DROP DATABASE db",
		"SHOW COMPUTE NODES", "SHOW DIST VARIABLES", "SHOW PROCESSLIST", "KILL 1", "USE db",
	} {
		st, err := Parse(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if sc := st.Scope(); sc.Cluster != "" {
			t.Errorf("%s: cluster-wide (%+v), want confined to one database", q, sc)
		}
	}
}
