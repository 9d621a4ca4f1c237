package catalog

import (
	"errors"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"reflect"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/datasource"
)

func testView() *View {
	order := Table{Name: "t_order", Columns: []datasource.Column{
		{Name: "order_id", DataType: -5, TypeName: "bigint", PrimaryKey: true},
		{Name: "user_id", DataType: 4, TypeName: "int"},
		{Name: "status", DataType: 12, TypeName: "varchar(32)", Nullable: true},
	}}
	return &View{
		Databases: []Database{{Name: "sharding_db", Tables: []Table{order, {Name: "t_user", Columns: []datasource.Column{{Name: "id", DataType: 4, TypeName: "int"}}}}}, {Name: "other_db"}},
		Current:   "sharding_db", User: "root", Host: "127.0.0.1", Protocol: "MySQL",
		Variable: func(name string) (string, bool) {
			if name == "version_comment" {
				return "comment", true
			}
			return "", false
		},
	}
}

func values(r *Result) [][]string {
	var out [][]string
	for _, row := range r.Rows {
		var vs []string
		for _, v := range row {
			if v == nil {
				vs = append(vs, "NULL")
			} else {
				vs = append(vs, *v)
			}
		}
		out = append(out, vs)
	}
	return out
}

func names(r *Result) []string {
	var out []string
	for _, c := range r.Columns {
		out = append(out, c.Name)
	}
	return out
}

// The queries tools send on the MySQL port, answered from the view.
func TestMySQLQueries(t *testing.T) {
	v := testView()
	for _, c := range []struct {
		q    string
		cols []string
		rows [][]string
	}{
		{"SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME", []string{"SCHEMA_NAME"},
			[][]string{{"information_schema"}, {"other_db"}, {"sharding_db"}}},
		{"select table_name, table_type from INFORMATION_SCHEMA.TABLES where table_schema = 'sharding_db' and table_name like 't\\_o%'", []string{"table_name", "table_type"},
			[][]string{{"t_order", "BASE TABLE"}}},
		{"SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY, ORDINAL_POSITION FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = database() AND TABLE_NAME = 't_order' ORDER BY ORDINAL_POSITION DESC LIMIT 2",
			[]string{"COLUMN_NAME", "DATA_TYPE", "COLUMN_TYPE", "IS_NULLABLE", "COLUMN_KEY", "ORDINAL_POSITION"},
			[][]string{{"status", "varchar", "varchar(32)", "YES", "", "3"}, {"user_id", "int", "int", "NO", "", "2"}}},
		{"SELECT ENGINE, SUPPORT FROM information_schema.ENGINES WHERE SUPPORT IN ('DEFAULT')", []string{"ENGINE", "SUPPORT"}, [][]string{{"InnoDB", "DEFAULT"}}},
		{"SELECT IF(TABLE_TYPE='BASE TABLE', 'TABLE', TABLE_TYPE) AS TABLE_TYPE, TABLE_NAME t FROM information_schema.TABLES WHERE TABLE_SCHEMA IS NOT NULL AND NOT TABLE_NAME = 't_order'",
			[]string{"TABLE_TYPE", "t"}, [][]string{{"TABLE", "t_user"}}},
		{"SHOW ENGINES", []string{"Engine", "Support", "Comment", "Transactions", "XA", "Savepoints"}, nil},
		{"SHOW CHARACTER SET LIKE 'utf8mb4'", []string{"Charset", "Description", "Default collation", "Maxlen"}, [][]string{{"utf8mb4", "UTF-8 Unicode", "utf8mb4_general_ci", "4"}}},
		{"SHOW COLLATION WHERE Charset = 'utf8mb4' AND `Default` = 'Yes'", []string{"Collation", "Charset", "Id", "Default", "Compiled", "Sortlen"}, [][]string{{"utf8mb4_general_ci", "utf8mb4", "45", "Yes", "Yes", "1"}}},
		{"SHOW SESSION STATUS LIKE 'Ssl_cipher'", []string{"Variable_name", "Value"}, [][]string{{"Ssl_cipher", ""}}},
		{"SHOW GRANTS", []string{"Grants for root@127.0.0.1"}, [][]string{{"GRANT USAGE ON *.* TO 'root'@'127.0.0.1'"},
			{"GRANT ALL PRIVILEGES ON `sharding_db`.* TO 'root'@'127.0.0.1'"}, {"GRANT ALL PRIVILEGES ON `other_db`.* TO 'root'@'127.0.0.1'"}}},
		{"SHOW CREATE DATABASE sharding_db", []string{"Database", "Create Database"}, [][]string{{"sharding_db", "CREATE DATABASE `sharding_db` /*!40100 DEFAULT CHARACTER SET utf8mb4 */"}}},
		{"SHOW FULL COLUMNS FROM t_order LIKE 'order%'", []string{"Field", "Type", "Collation", "Null", "Key", "Default", "Extra", "Privileges", "Comment"},
			[][]string{{"order_id", "bigint", "NULL", "NO", "PRI", "NULL", "", "select,insert,update,references", ""}}},
		{"SHOW KEYS FROM t_order FROM sharding_db", []string{"Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name", "Collation", "Cardinality", "Sub_part", "Packed", "Null", "Index_type", "Comment", "Index_comment"},
			[][]string{{"t_order", "0", "PRIMARY", "1", "order_id", "A", "0", "NULL", "NULL", "", "BTREE", "", ""}}},
		{"SHOW TABLE STATUS LIKE 't_user'", nil, nil},
		{"SHOW ENGINE INNODB STATUS", []string{"Type", "Name", "Status"}, nil},
		{"select database(), schema(), left(user(),instr(concat(user(),'@'),'@')-1), @@version_comment", []string{"database()", "schema()", "left(user(),instr(concat(user(),'@'),'@')-1)", "@@version_comment"},
			[][]string{{"sharding_db", "sharding_db", "root", "comment"}}},
	} {
		res, err := AnswerMySQL(v, c.q, [][2]string{{"language", "en"}})
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if c.cols != nil && !reflect.DeepEqual(names(res), c.cols) {
			t.Errorf("%s: columns %q, want %q", c.q, names(res), c.cols)
		}
		if c.rows != nil && !reflect.DeepEqual(values(res), c.rows) {
			t.Errorf("%s: rows %q, want %q", c.q, values(res), c.rows)
		}
	}
	res, err := AnswerMySQL(v, "SHOW VARIABLES WHERE Variable_name ='language' OR Variable_name = 'net_write_timeout'", [][2]string{{"language", "en"}, {"wait_timeout", "1"}})
	if err != nil || !reflect.DeepEqual(values(res), [][]string{{"language", "en"}}) {
		t.Errorf("SHOW VARIABLES WHERE: %v %v", err, res)
	}
}

// What the catalog cannot answer is refused in the protocol's own codes.
func TestRefusals(t *testing.T) {
	v := testView()
	for _, c := range []struct {
		pg    bool
		q     string
		state string
	}{
		{false, "SELECT * FROM information_schema.NO_SUCH", "42S02"},
		{false, "SELECT x FROM information_schema.TABLES", "42S22"},
		{false, "SELECT TABLE_NAME, COUNT(*) FROM information_schema.COLUMNS GROUP BY TABLE_NAME", "42000"},
		{false, "SHOW COLUMNS FROM no_such", "42S02"},
		{false, "SHOW CREATE DATABASE no_such", "42000"},
		{true, "SELECT * FROM pg_catalog.pg_no_such", "42P01"},
		{true, "SELECT datname, count(*) FROM pg_catalog.pg_database GROUP BY datname", "0A000"},
		{true, "SELECT nosuch FROM pg_catalog.pg_namespace", "42703"},
	} {
		var err error
		if c.pg {
			v.Protocol = "PostgreSQL"
			_, err = AnswerPostgreSQL(v, c.q)
		} else {
			v.Protocol = "MySQL"
			_, err = AnswerMySQL(v, c.q, nil)
		}
		var ce *sqlerr.Error
		if !errors.As(err, &ce) || ce.SQLState != c.state {
			t.Errorf("%s: %v, want SQL state %s", c.q, err, c.state)
		}
	}
}

// Bounds are checked before the work: the query's bytes, its tokens, the
// nesting of its expressions and the rows of an answer.
func TestBounds(t *testing.T) {
	v := testView()
	long := "SELECT * FROM information_schema.TABLES WHERE TABLE_NAME = '" + strings.Repeat("x", MaxQueryBytes) + "'"
	if IsMySQL(long) {
		t.Errorf("a query over MaxQueryBytes is a catalog query")
	}
	if _, err := AnswerMySQL(v, long, nil); err == nil {
		t.Errorf("a query over MaxQueryBytes was answered")
	}
	many := "SELECT * FROM information_schema.TABLES WHERE TABLE_NAME IN ('a'" + strings.Repeat(",'a'", maxTokens) + ")"
	if _, err := AnswerMySQL(v, many, nil); err == nil {
		t.Errorf("a query over maxTokens was answered")
	}
	deep := "SELECT * FROM information_schema.TABLES WHERE " + strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100)
	if _, err := AnswerMySQL(v, deep, nil); err == nil {
		t.Errorf("an expression nested 100 deep was answered")
	}
	big := &View{Current: "db"}
	d := Database{Name: "db"}
	for i := 0; i <= MaxRows; i++ {
		d.Tables = append(d.Tables, Table{Name: fmt.Sprintf("t%05d", i)})
	}
	big.Databases = []Database{d}
	if _, err := AnswerMySQL(big, "SELECT * FROM information_schema.TABLES", nil); err == nil {
		t.Errorf("an answer over MaxRows rows was given")
	}
}

// psql's \l, \dt, \dn and the queries of \d t_order (captured with psql
// -E from psql 15 against PostgreSQL 15) are answered from the view.
func TestPsqlShapes(t *testing.T) {
	v := testView()
	v.Protocol = "PostgreSQL"
	lookup := `SELECT c.oid,
  n.nspname,
  c.relname
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname OPERATOR(pg_catalog.~) '^(t_order)$' COLLATE pg_catalog.default
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 2, 3;`
	res, err := AnswerPostgreSQL(v, lookup)
	if err != nil || !reflect.DeepEqual(values(res), [][]string{{"16384", "public", "t_order"}}) {
		t.Fatalf("\\d t_order lookup: %v %v", err, res)
	}
	columns := `SELECT a.attname,
  pg_catalog.format_type(a.atttypid, a.atttypmod),
  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)
   FROM pg_catalog.pg_attrdef d
   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),
  a.attnotnull,
  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,
  a.attidentity,
  a.attgenerated
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = '16384' AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum;`
	res, err = AnswerPostgreSQL(v, columns)
	want := [][]string{{"order_id", "bigint", "NULL", "t", "NULL", "", ""}, {"user_id", "integer", "NULL", "t", "NULL", "", ""}, {"status", "character varying(32)", "NULL", "f", "NULL", "", ""}}
	if err != nil || !reflect.DeepEqual(values(res), want) {
		t.Fatalf("\\d t_order columns: %v %v", err, values(res))
	}
	dn := `SELECT n.nspname AS "Name",
  pg_catalog.pg_get_userbyid(n.nspowner) AS "Owner"
FROM pg_catalog.pg_namespace n
WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
ORDER BY 1;`
	res, err = AnswerPostgreSQL(v, dn)
	if err != nil || !reflect.DeepEqual(values(res), [][]string{{"public", "root"}}) || !reflect.DeepEqual(names(res), []string{"Name", "Owner"}) {
		t.Fatalf("\\dn: %v %v", err, res)
	}
	res, err = AnswerPostgreSQL(v, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name DESC")
	if err != nil || !reflect.DeepEqual(values(res), [][]string{{"t_user"}, {"t_order"}}) {
		t.Fatalf("information_schema.tables: %v %v", err, res)
	}
}

// What JDBC drivers' DatabaseMetaData sends: MariaDB Connector/J's
// information_schema queries with CASE, CAST, CONVERT, LEAST, SUBSTRING
// and a join; PostgreSQL JDBC's pg_catalog queries, recognised by shape.
func TestJDBCQueries(t *testing.T) {
	v := testView()
	for _, c := range []struct {
		q    string
		rows [][]string
	}{
		{"SELECT '' TABLE_SCHEM, '' TABLE_catalog FROM DUAL WHERE 1=0", nil},
		{"SELECT COLUMN_NAME, CASE data_type WHEN 'int' THEN 4 WHEN 'bigint' THEN -5 ELSE 1111 END DATA_TYPE, " +
			"UCASE(IF(COLUMN_TYPE LIKE '%(%)%', CONCAT(SUBSTRING(COLUMN_TYPE, 1, LOCATE('(', COLUMN_TYPE) - 1), SUBSTRING(COLUMN_TYPE, 1+locate(')', COLUMN_TYPE))), COLUMN_TYPE)) TYPE_NAME, " +
			"CASE WHEN NUMERIC_PRECISION IS NULL THEN LEAST(CHARACTER_MAXIMUM_LENGTH, 2147483647) ELSE NUMERIC_PRECISION END COLUMN_SIZE, " +
			"CONVERT(CASE DATA_TYPE WHEN 'tinyint' THEN 0 ELSE NUMERIC_SCALE END, UNSIGNED INTEGER) DECIMAL_DIGITS, CAST('7.9' AS SIGNED INTEGER) c " +
			"FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA='sharding_db' AND TABLE_NAME LIKE 't_order' ORDER BY ORDINAL_POSITION",
			[][]string{{"order_id", "-5", "BIGINT", "19", "0", "7"}, {"user_id", "4", "INT", "10", "0", "7"}, {"status", "1111", "VARCHAR", "32", "NULL", "7"}}},
		{"SELECT A.TABLE_NAME, A.COLUMN_NAME, B.SEQ_IN_INDEX KEY_SEQ, B.INDEX_NAME PK_NAME FROM INFORMATION_SCHEMA.COLUMNS A, INFORMATION_SCHEMA.STATISTICS B " +
			"WHERE A.COLUMN_KEY in ('PRI','pri') AND B.INDEX_NAME='PRIMARY' AND A.TABLE_NAME LIKE 't_order' AND B.TABLE_NAME LIKE 't_order' " +
			"AND A.TABLE_SCHEMA = B.TABLE_SCHEMA AND A.TABLE_NAME = B.TABLE_NAME AND A.COLUMN_NAME = B.COLUMN_NAME ORDER BY A.COLUMN_NAME",
			[][]string{{"t_order", "order_id", "1", "PRIMARY"}}},
	} {
		res, err := AnswerMySQL(v, c.q, nil)
		if err != nil {
			t.Errorf("%.60s: %v", c.q, err)
			continue
		}
		if !reflect.DeepEqual(values(res), c.rows) {
			t.Errorf("%.60s: rows %q, want %q", c.q, values(res), c.rows)
		}
	}
	if res, err := AnswerMySQL(v, "SELECT A.TABLE_NAME FROM INFORMATION_SCHEMA.COLUMNS A, INFORMATION_SCHEMA.STATISTICS B", nil); err != nil || len(res.Rows) != 4*1 {
		t.Errorf("cross join: %v %v", err, res)
	}
	if _, err := AnswerMySQL(v, "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.COLUMNS A, INFORMATION_SCHEMA.TABLES B", nil); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("ambiguous column: %v", err)
	}

	pg := testView()
	pg.Protocol = "PostgreSQL"
	for _, c := range []struct {
		q    string
		rows [][]string
	}{
		{"SELECT nspname AS TABLE_SCHEM, NULL AS TABLE_CATALOG FROM pg_catalog.pg_namespace WHERE nspname <> 'pg_toast' AND nspname LIKE 'pub%' ORDER BY TABLE_SCHEM",
			[][]string{{"public", "NULL"}}},
		{"SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME, CASE n.nspname ~ '^pg_' OR n.nspname = 'information_schema' WHEN true THEN NULL END AS TABLE_TYPE " +
			"FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c WHERE c.relnamespace = n.oid AND n.nspname LIKE 'public' AND c.relname LIKE 't\\_u%' " +
			"AND (false OR ( c.relkind = 'r' AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' )) ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME",
			[][]string{{"NULL", "public", "t_user", "TABLE", "NULL", "", "", "", "", ""}}},
		{"SELECT * FROM (SELECT n.nspname,c.relname,a.attname,a.atttypid FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_class c ON (c.relnamespace = n.oid) " +
			"WHERE a.attnum > 0 AND n.nspname LIKE 'public' AND c.relname LIKE 't_order') c WHERE true AND attname LIKE 'status' ORDER BY nspname,c.relname,attnum",
			[][]string{{"public", "t_order", "status", "1043", "f", "36", "-1", "-1", "3", "NULL", "NULL", "NULL", "NULL", "0", "b"}}},
		{"SELECT result.TABLE_CAT, result.TABLE_SCHEM, result.TABLE_NAME, result.COLUMN_NAME, result.KEY_SEQ, result.PK_NAME FROM (SELECT NULL AS TABLE_CAT " +
			"FROM pg_catalog.pg_class ct WHERE true AND n.nspname = E'public' AND ct.relname = E't_order' AND i.indisprimary ) result where result.A_ATTNUM = (result.KEYS).x",
			[][]string{{"NULL", "public", "t_order", "order_id", "1", "t_order_pkey"}}},
	} {
		res, err := AnswerPostgreSQL(pg, c.q)
		if err != nil {
			t.Errorf("%.60s: %v", c.q, err)
			continue
		}
		if !reflect.DeepEqual(values(res), c.rows) {
			t.Errorf("%.60s: rows %q, want %q", c.q, values(res), c.rows)
		}
	}
}

// What pgAdmin and DBeaver send on connect and when browsing, on the
// PostgreSQL port: settings, functions called without parentheses,
// current_setting, joins with pg_description, pg_type, pg_attribute and
// pg_index; an aggregate over a set-returning function is refused with
// PostgreSQL's feature_not_supported.
func TestGUIQueries(t *testing.T) {
	v := testView()
	v.Protocol = "PostgreSQL"
	for _, c := range []struct {
		q    string
		rows [][]string
	}{
		{"SELECT current_schema(),session_user", [][]string{{"public", "root"}}},
		{"SELECT setting FROM pg_settings WHERE name='max_index_keys'", [][]string{{"32"}}},
		{"SELECT pg_catalog.current_setting('server_version_num')", [][]string{{"140000"}}},
		{"SELECT db.oid as did, db.datname, pg_catalog.pg_encoding_to_char(db.encoding) AS serverencoding, pg_catalog.has_database_privilege(db.oid, 'CREATE') as cancreate " +
			"FROM pg_catalog.pg_database db WHERE db.datname = current_database()", [][]string{{"1", "sharding_db", "UTF8", "t"}}},
		{"SELECT n.oid,n.nspname,d.description FROM pg_catalog.pg_namespace n LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 " +
			"AND d.classoid='pg_namespace'::regclass ORDER BY nspname", [][]string{{"13000", "information_schema", "NULL"}, {"11", "pg_catalog", "NULL"}, {"2200", "public", "NULL"}}},
		{"SELECT rolname FROM pg_catalog.pg_roles WHERE rolname = current_user", [][]string{{"root"}}},
		{"SELECT c.relname, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), t.typname FROM pg_catalog.pg_class c " +
			"JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid JOIN pg_catalog.pg_type t ON t.oid = a.atttypid WHERE c.relname = 't_order' AND a.attnum > 0 ORDER BY a.attnum",
			[][]string{{"t_order", "order_id", "bigint", "int8"}, {"t_order", "user_id", "integer", "int4"}, {"t_order", "status", "character varying(32)", "varchar"}}},
		{"SELECT i.indkey, i.indisprimary FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indrelid WHERE c.relname = 't_order'", [][]string{{"1", "t"}}},
	} {
		res, err := AnswerPostgreSQL(v, c.q)
		if err != nil {
			t.Errorf("%.60s: %v", c.q, err)
			continue
		}
		if !reflect.DeepEqual(values(res), c.rows) {
			t.Errorf("%.60s: rows %q, want %q", c.q, values(res), c.rows)
		}
	}
	var e *sqlerr.Error
	if _, err := AnswerPostgreSQL(v, "select string_agg(word, ',') from pg_catalog.pg_get_keywords()"); !errors.As(err, &e) || e.SQLState != "0A000" {
		t.Errorf("pg_get_keywords(): %v", err)
	}
	if _, err := AnswerPostgreSQL(v, "SELECT current_setting('no_such')"); !errors.As(err, &e) || e.SQLState != "42704" {
		t.Errorf("current_setting of an unknown setting: %v", err)
	}
}
