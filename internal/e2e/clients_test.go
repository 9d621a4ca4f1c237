package e2e

import (
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestClients runs a node with both consoles on real etcd and on real
// ZooKeeper, a SQLite unit registered, a sharding table t_order over its
// t_order_0 and t_order_1 and the single table t_user loaded, and drives it
// with the clients people bring: the mariadb client sends the connect
// queries of MySQL Workbench, DataGrip and Connector/J 5.1 and browses
// information_schema; psql runs \l, \dt, \d, \d t_order, \dn and \du;
// each port answers errors in its own dialect, PostgreSQL's command tags,
// and NULL for the SQLite unit's port; upstream's table, plugin, SQL
// translator and readwrite-splitting state statements run, and the
// default single table unit goes with the unit UNREGISTER removes.
func TestClients(t *testing.T) {
	requireMariaDB(t)
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql not found: scripts/servers.sh installs Debian postgresql-client")
	}
	eachRegistry(t, func(t *testing.T, typ string) {
		n, pgAddr := startClientsNode(t, typ)
		my := func(statement string, extra ...string) ([][]string, string, error) {
			t.Helper()
			return mariadb(t, localCmd, "127.0.0.1", n.port, "root", "", statement, extra...)
		}
		must := func(statement string, extra ...string) [][]string {
			t.Helper()
			rows, errOut, err := my(statement, extra...)
			if err != nil {
				t.Fatalf("%s: %v\n%s", statement, err, errOut)
			}
			return rows
		}
		// SHOW TABLES lists the logic tables, as a Proxy does.
		testenv.Eventually(t, "SHOW FULL TABLES to list the logic tables with their columns", func() bool {
			rows := must("SHOW FULL TABLES", "-D", "sharding_db")
			cols := must("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_NAME = 't_order'", "-D", "sharding_db")
			return slices.EqualFunc(rows[1:], [][]string{{"t_auto", "BASE TABLE"}, {"t_order", "BASE TABLE"}, {"t_user", "BASE TABLE"}}, slices.Equal) && len(cols) == 4
		})

		// The logic tables through upstream's statement; the auto table
		// among the rules using the unit.
		if rows := must("SHOW FULL LOGICAL TABLES", "-D", "sharding_db"); !slices.EqualFunc(rows, [][]string{{"table_name", "table_type"},
			{"t_auto", "TABLE"}, {"t_order", "TABLE"}, {"t_user", "TABLE"}}, slices.Equal) {
			t.Errorf("SHOW FULL LOGICAL TABLES: %q", rows)
		}
		if rows := must("SHOW RULES USED STORAGE UNIT ds_0", "-D", "sharding_db"); !slices.EqualFunc(rows[1:], [][]string{{"sharding", "t_order"}, {"sharding", "t_auto"}, {"single", "t_user"}}, slices.Equal) {
			t.Errorf("SHOW RULES USED STORAGE UNIT ds_0: %q", rows)
		}
		for q, want := range map[string]string{
			"PREVIEW SELECT * FROM t_order": "ERROR 30001 (0A000) at line 1: Unsupported SQL operation: PREVIEW: this shardkeeper node has no SQL engine",
			"SHOW MIGRATION LIST":           "ERROR 30001 (0A000) at line 1: Unsupported SQL operation: SHOW MIGRATION: this shardkeeper node runs no data migration",
		} {
			if _, errOut, err := my(q, "-D", "sharding_db"); err == nil || !strings.Contains(errOut, want) {
				t.Errorf("%s: %v %q, want %q", q, err, errOut, want)
			}
		}

		// Upstream's table, storage node and plugin statements.
		must("REFRESH TABLE METADATA t_user FROM STORAGE UNIT ds_0", "-D", "sharding_db")
		for q, want := range map[string]string{
			"SHOW UNLOADED SINGLE TABLES":            "table_name\tstorage_unit_name\nt_log\tds_0",
			"SHOW TABLE METADATA t_order_0, t_order": "sharding_db\tt_order\tCOLUMN\torder_id",
			"EXPORT STORAGE NODES FROM sharding_db":  `{"storage_nodes":{"sharding_db":[{"ip":"","port":"","database":"`,
			"SHOW SQL_TRANSLATOR RULE":               "NATIVE\t\ttrue",
			"SHOW SHARDING ALGORITHM PLUGINS":        "HASH_MOD",
			"SHOW PLUGINS OF 'ShardingAlgorithm'":    "INLINE",
			"SHOW ENCRYPT ALGORITHM IMPLEMENTATIONS": "AES",
		} {
			if out := tsv(must(q, "-D", "sharding_db")); !strings.Contains(out, want) {
				t.Errorf("%s: no %q in\n%s", q, want, out)
			}
		}
		for q, want := range map[string]string{
			"ALTER COMPUTE NODE 'x' SET XA_RECOVERY_NODES = 'x'":     "ERROR 30001 (0A000) at line 1: Unsupported SQL operation: ALTER COMPUTE NODE ... SET XA_RECOVERY_NODES: this shardkeeper node runs no XA transactions",
			"CONVERT YAML CONFIGURATION FROM FILE 'database-x.yaml'": "ERROR 30020",
			"PARSE SELECT 1":      "ERROR 30001 (0A000) at line 1: Unsupported SQL operation: PARSE: this shardkeeper node has no SQL engine",
			"FORMAT SELECT 1":     "ERROR 30001 (0A000) at line 1: Unsupported SQL operation: FORMAT: this shardkeeper node has no SQL engine",
			"SHOW STREAMING LIST": "ERROR 30001 (0A000) at line 1: Unsupported SQL operation: SHOW STREAMING: this shardkeeper node runs no data migration",
		} {
			if _, errOut, err := my(q, "-D", "sharding_db"); err == nil || !strings.Contains(errOut, want) {
				t.Errorf("%s: %v %q, want %q", q, err, errOut, want)
			}
		}

		// What MySQL Workbench, DataGrip and Connector/J 5.1 send on
		// connect and when browsing, each answered as MySQL would.
		for q, want := range map[string]string{
			"SHOW SESSION STATUS LIKE 'Ssl_cipher'":                "Ssl_cipher",
			"SHOW SESSION VARIABLES LIKE 'lower_case_table_names'": "lower_case_table_names\t0",
			"SELECT current_user()":                                "root",
			"SET CHARACTER SET utf8":                               "",
			"SELECT CONNECTION_ID()":                               "",
			"/* mysql-connector-java-5.1.49 ( Revision: ad86f36e100e104cd926c6b81c8cab9565750116 ) */SHOW VARIABLES WHERE Variable_name ='language' OR Variable_name = 'net_write_timeout' OR Variable_name = 'interactive_timeout' OR Variable_name = 'wait_timeout' OR Variable_name = 'character_set_client' OR Variable_name = 'character_set_connection' OR Variable_name = 'character_set' OR Variable_name = 'character_set_server' OR Variable_name = 'tx_isolation' OR Variable_name = 'transaction_isolation' OR Variable_name = 'character_set_results' OR Variable_name = 'timezone' OR Variable_name = 'time_zone' OR Variable_name = 'system_time_zone' OR Variable_name = 'lower_case_table_names' OR Variable_name = 'max_allowed_packet' OR Variable_name = 'net_buffer_length' OR Variable_name = 'sql_mode' OR Variable_name = 'query_cache_type' OR Variable_name = 'query_cache_size' OR Variable_name = 'license' OR Variable_name = 'init_connect'": "net_write_timeout\t60",
			"SELECT @@session.auto_increment_increment":                                                    "1",
			"select database(), schema(), left(user(),instr(concat(user(),'@'),'@')-1), @@version_comment": "sharding_db\tsharding_db\troot\tshardkeeper",
			"SHOW ENGINES":                                   "InnoDB\tDEFAULT",
			"SHOW STORAGE ENGINES":                           "InnoDB\tDEFAULT",
			"SHOW CHARSET":                                   "utf8mb4\tUTF-8 Unicode",
			"SHOW CHARACTER SET":                             "utf8mb4\tUTF-8 Unicode",
			"SHOW COLLATION":                                 "utf8mb4_general_ci\tutf8mb4\t45",
			"SHOW STATUS":                                    "Uptime",
			"SHOW GLOBAL STATUS LIKE 'Uptime'":               "Uptime",
			"SHOW GRANTS":                                    "GRANT ALL PRIVILEGES ON `sharding_db`.* TO 'root'@'127.0.0.1'",
			"SHOW PLUGINS":                                   "mysql_native_password\tACTIVE",
			"SHOW TABLE STATUS":                              "t_order\tInnoDB",
			"SHOW CREATE DATABASE sharding_db":               "CREATE DATABASE `sharding_db`",
			"SHOW CREATE TABLE t_order":                      "PRIMARY KEY (`order_id`)",
			"SHOW COLUMNS FROM t_order":                      "order_id\tbigint\tNO\tPRI",
			"SHOW FULL COLUMNS FROM t_user":                  "name\tvarchar(64)",
			"SHOW KEYS FROM t_order":                         "t_order\t0\tPRIMARY\t1\torder_id",
			"SHOW INDEX FROM t_user FROM sharding_db":        "t_user\t0\tPRIMARY",
			"SHOW ENGINE INNODB STATUS":                      "InnoDB",
			"SHOW PROCEDURE STATUS WHERE Db = 'sharding_db'": "",
			"SELECT * FROM information_schema.SCHEMATA":      "def\tsharding_db\tutf8mb4",
			"SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN ('information_schema')":                 "sharding_db",
			"SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'sharding_db' ORDER BY TABLE_NAME": "t_user\tBASE TABLE",
			"SELECT * FROM information_schema.ENGINES":                                         "InnoDB",
			"SELECT * FROM information_schema.CHARACTER_SETS":                                  "utf8mb4",
			"SELECT * FROM information_schema.COLLATIONS WHERE COLLATION_NAME LIKE 'utf8mb4%'": "utf8mb4_bin",
		} {
			rows, errOut, err := my(q, "-D", "sharding_db")
			if err != nil {
				t.Errorf("%.80s: %v\n%s", q, err, errOut)
				continue
			}
			if out := tsv(rows); !strings.Contains(out, want) {
				t.Errorf("%.80s: no %q in\n%s", q, want, out)
			}
		}
		// MySQL's codes on the MySQL port.
		for q, want := range map[string]string{
			"SHOW no_such_parameter":                           "ERROR 1193 (HY000) at line 1: Unknown system variable 'no_such_parameter'",
			"SELECT * FROM information_schema.NO_SUCH":         "ERROR 1109 (42S02) at line 1: Unknown table 'NO_SUCH' in information_schema",
			"SHOW COLUMNS FROM no_such":                        "ERROR 1146 (42S02) at line 1: Table 'sharding_db.no_such' doesn't exist",
			"SELECT a FROM information_schema.TABLES t JOIN x": "ERROR 1235 (42000) at line 1: This version of shardkeeper doesn't yet support",
		} {
			_, errOut, err := my(q, "-D", "sharding_db")
			if err == nil || !strings.Contains(errOut, want) {
				t.Errorf("%s: %v %q, want %q", q, err, errOut, want)
			}
		}

		// psql's meta-commands show the cluster's objects.
		dsn := fmt.Sprintf("host=127.0.0.1 port=%s user=root dbname=sharding_db sslmode=disable connect_timeout=10", pgAddr[strings.LastIndexByte(pgAddr, ':')+1:])
		psql := func(args ...string) string {
			t.Helper()
			out, err := psqlRun(t, "", append([]string{dsn}, args...)...)
			if err != nil {
				t.Fatalf("psql %q: %v\n%s", args, err, out)
			}
			return out
		}
		for cmd, wants := range map[string][]string{
			`\l`:         {"sharding_db | root  | UTF8"},
			`\dt`:        {"public | t_order | table | root", "public | t_user  | table | root"},
			`\d`:         {"public | t_order | table | root"},
			`\d t_order`: {`Table "public.t_order"`, "order_id | bigint                |           | not null |", "status   | character varying(32) |", `"t_order_pkey" PRIMARY KEY, btree (order_id)`},
			`\dn`:        {"public | root"},
			`\du`:        {"root"},
		} {
			out := psql("-c", cmd)
			for _, w := range wants {
				if !strings.Contains(out, w) {
					t.Errorf("psql %s: no %q in\n%s", cmd, w, out)
				}
			}
		}
		for q, want := range map[string]string{
			"SHOW server_version_num":                                              "140000",
			"SHOW TRANSACTION ISOLATION LEVEL":                                     "read committed",
			"SELECT set_config('bytea_output','hex',false)":                        "hex",
			"SELECT table_name FROM information_schema.tables ORDER BY table_name": "t_order\nt_user",
			"SELECT datname FROM pg_catalog.pg_database":                           "sharding_db",
			"SHOW STORAGE UNITS":                                                   "ds_0|SQLite||(null)|",
			// What pgAdmin and DBeaver send on connect and when browsing.
			"SELECT version()":                                            "PostgreSQL 14.0",
			"SELECT current_schema(),session_user":                        "public|root",
			"SELECT setting FROM pg_settings WHERE name='max_index_keys'": "32",
			"SELECT pg_catalog.current_setting('server_version_num')":     "140000",
			"SELECT db.oid as did, db.datname, db.datallowconn, pg_catalog.pg_encoding_to_char(db.encoding) AS serverencoding, " +
				"pg_catalog.has_database_privilege(db.oid, 'CREATE') as cancreate, datistemplate FROM pg_catalog.pg_database db WHERE db.datname = current_database()": "sharding_db|t|UTF8|t|f",
			"SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 " +
				"AND d.classoid='pg_namespace'::regclass ORDER BY nspname": "2200|2200|public|10|(null)|(null)",
			"SELECT rolname FROM pg_catalog.pg_roles WHERE rolname = current_user": "root",
			"SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid " +
				"WHERE c.relname = 't_order' AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum": "status|character varying(32)",
		} {
			if out := psql("-A", "-t", "-P", "null=(null)", "-c", q); !strings.Contains(out, want) {
				t.Errorf("psql -c %q: no %q in\n%s", q, want, out)
			}
		}
		// PostgreSQL's command tags and codes on the PostgreSQL port.
		// The loopback-only notice (this node has no users) comes first; the tags follow it.
		out := psql("-c", "CREATE DATABASE tagged_db", "-c", "DROP DATABASE tagged_db")
		if tags := strings.TrimPrefix(out, loopbackNotice(out)); tags != "CREATE DATABASE\nDROP DATABASE\n" {
			t.Errorf("command tags: %q", out)
		}
		for q, want := range map[string]string{
			"SHOW no_such_parameter":                                         `ERROR:  42704: unrecognized configuration parameter "no_such_parameter"`,
			"SELECT * FROM pg_catalog.pg_no_such":                            `ERROR:  42P01: relation "pg_catalog.pg_no_such" does not exist`,
			"SELECT no_such_function()":                                      "ERROR:  42883: function no_such_function() does not exist",
			"select string_agg(word, ',') from pg_catalog.pg_get_keywords()": "ERROR:  0A000: catalog query not supported",
		} {
			out, err := psqlRun(t, "", dsn, "-v", "VERBOSITY=verbose", "-c", q)
			if err == nil || !strings.Contains(out, want) {
				t.Errorf("psql -c %q: %v\n%s, want %q", q, err, out, want)
			}
		}
		// Python's typed drivers read every SHOW without an exception.
		for _, driver := range []string{"pymysql", "psycopg2"} {
			if out, err := pythonShows(t, driver, n.port, pgAddr); err != nil {
				t.Errorf("%s: %v\n%s", driver, err, out)
			} else {
				t.Logf("%s: %s", driver, strings.TrimSpace(out))
			}
		}
		if _, errOut, _ := my("SHOW STORAGE UNITS", "-D", "sharding_db"); errOut != "" {
			t.Errorf("SHOW STORAGE UNITS: %s", errOut)
		}
		if rows := must("SHOW STORAGE UNITS", "-D", "sharding_db"); column(t, rows, "port")[0] != "NULL" {
			t.Errorf("SQLite unit's port %q, want NULL", column(t, rows, "port")[0])
		}

		// Upstream's ENABLE / DISABLE of a read data source, and the
		// default single table unit that goes with its unit.
		for _, u := range []string{"ds_1", "ds_2"} {
			must(fmt.Sprintf("REGISTER STORAGE UNIT %s (URL='jdbc:sqlite:%s', USER='', PASSWORD='')", u, filepath.Join(t.TempDir(), u+".db")), "-D", "sharding_db")
		}
		must("CREATE READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1))", "-D", "sharding_db")
		for _, state := range []string{"DISABLE", "ENABLE"} {
			must("ALTER READWRITE_SPLITTING RULE rw "+state+" ds_1", "-D", "sharding_db")
			testenv.Eventually(t, "ds_1 to be "+state+"D", func() bool {
				rows := must("SHOW STATUS FROM READWRITE_SPLITTING RULE rw", "-D", "sharding_db")
				return slices.EqualFunc(rows[1:], [][]string{{"rw", "ds_1", state + "D"}}, slices.Equal)
			})
		}
		must("SET DEFAULT SINGLE TABLE STORAGE UNIT = ds_2", "-D", "sharding_db")
		must("UNREGISTER STORAGE UNIT ds_2 IGNORE SINGLE TABLES", "-D", "sharding_db")
		testenv.Eventually(t, "the default single table unit to go with ds_2", func() bool {
			rows := must("SHOW DEFAULT SINGLE TABLE STORAGE UNIT", "-D", "sharding_db")
			return slices.EqualFunc(rows, [][]string{{"storage_unit_name"}, {"RANDOM"}}, slices.Equal)
		})
	})
}

// tsv is rows as the mariadb client prints them: tab-separated lines.
func tsv(rows [][]string) string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = strings.Join(r, "\t")
	}
	return strings.Join(lines, "\n")
}

// startClientsNode runs a node with both consoles on a fresh namespace of
// the real registry typ, with the logical database sharding_db on a SQLite
// unit ds_0: the sharding table t_order over t_order_0 and t_order_1, the
// auto table t_auto, the loaded single table t_user and the table t_log no
// rule loads. It returns the
// node (its MySQL port) and the PostgreSQL console's address.
func startClientsNode(t *testing.T, typ string) (*mysqlNode, string) {
	t.Helper()
	conf := writeConf(t, typ, registryServers(t, typ))
	unit := filepath.Join(t.TempDir(), "ds_0.db")
	db, err := sql.Open("sqlite", unit)
	if err != nil {
		t.Fatal(err)
	}
	for _, ddl := range []string{
		"CREATE TABLE t_order_0 (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, status VARCHAR(32))",
		"CREATE TABLE t_order_1 (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, status VARCHAR(32))",
		"CREATE TABLE t_user (user_id INT PRIMARY KEY, name VARCHAR(64))",
		"CREATE TABLE t_log (id INT)",
	} {
		if _, err := db.Exec(ddl); err != nil {
			t.Fatal(err)
		}
	}
	_ = db.Close()
	pgAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	n := startMySQLNode(t, conf, "e2e-clients-"+strings.ToLower(typ), "127.0.0.1", "--postgresql", pgAddr, "--allow-sqlite-units")
	for _, q := range []string{
		"CREATE DATABASE sharding_db",
		fmt.Sprintf("REGISTER STORAGE UNIT ds_0 (URL='jdbc:sqlite:%s', USER='', PASSWORD='')", unit),
		"CREATE SHARDING TABLE RULE t_order (DATANODES('ds_0.t_order_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=order_id, " +
			"SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='t_order_${order_id % 2}')))))",
		"CREATE SHARDING TABLE RULE t_auto (STORAGE_UNITS(ds_0), SHARDING_COLUMN=order_id, TYPE(NAME='hash_mod', PROPERTIES('sharding-count'='2')))",
		"LOAD SINGLE TABLE ds_0.t_user",
		"REFRESH DATABASE METADATA sharding_db",
	} {
		var db []string
		if !strings.HasPrefix(q, "CREATE DATABASE") {
			db = []string{"-D", "sharding_db"}
		}
		if _, errOut, err := mariadb(t, localCmd, "127.0.0.1", n.port, "root", "", q, db...); err != nil {
			t.Fatalf("%s: %v\n%s", q, err, errOut)
		}
	}
	return n, pgAddr
}

// clientShows are the SHOW statements of docs/distsql.md, as a user types
// them against the database TestClients sets up.
var clientShows = []string{
	"SHOW COMPUTE NODES", "SHOW COMPUTE NODE INFO", "SHOW COMPUTE NODE MODE", "SHOW DIST VARIABLES",
	"SHOW TEMP DIST VARIABLES", "SHOW DIST VARIABLE WHERE NAME = sql_show", "SHOW STORAGE UNITS",
	"SHOW STORAGE UNITS WHERE USAGE_COUNT = 0", "SHOW SHARDING TABLE RULES", "SHOW SHARDING TABLE RULE t_order",
	"SHOW SHARDING TABLE NODES", "SHOW SHARDING ALGORITHMS", "SHOW SHARDING KEY GENERATORS", "SHOW SHARDING AUDITORS",
	"SHOW UNUSED SHARDING ALGORITHMS", "SHOW UNUSED SHARDING KEY GENERATORS", "SHOW UNUSED SHARDING AUDITORS",
	"SHOW DEFAULT SHARDING STRATEGY", "SHOW SHARDING TABLE REFERENCE RULES", "SHOW SHARDING TABLE RULES USED ALGORITHM t_order_inline",
	"SHOW BROADCAST TABLE RULES", "COUNT SHARDING RULE", "SHOW READWRITE_SPLITTING RULES", "SHOW STATUS FROM READWRITE_SPLITTING RULES",
	"SHOW SINGLE TABLES", "SHOW SINGLE TABLE t_user", "SHOW DEFAULT SINGLE TABLE STORAGE UNIT", "COUNT SINGLE TABLE",
	"SHOW RULES USED STORAGE UNIT ds_0", "SHOW MASK RULES", "SHOW ENCRYPT RULES", "SHOW AUTHORITY RULE", "SHOW TRANSACTION RULE",
	"SHOW SQL_PARSER RULE", "SHOW GLOBAL CLOCK RULE", "SHOW SQL_FEDERATION RULE", "SHOW PROCESSLIST", "SHOW NEXT KEYS COUNT 2",
	"SHOW KEY GENERATE ALGORITHM PLUGINS", "SHOW DATABASES", "SHOW TABLES", "SHOW FULL TABLES", "SHOW LOGICAL TABLES",
	"SHOW UNLOADED SINGLE TABLES", "SHOW TABLE METADATA t_order_0", "SHOW SQL_TRANSLATOR RULE", "SHOW SHARDING ALGORITHM PLUGINS",
	"SHOW PLUGINS OF 'ShardingAlgorithm'", "EXPORT STORAGE NODES FROM sharding_db",
}

// pythonShows runs every clientShows statement through Python's driver
// (pymysql on the MySQL port, psycopg2 on the PostgreSQL one), reading
// every row: a value a typed column cannot hold raises, and the script
// fails naming the statement.
func pythonShows(t *testing.T, driver string, mysqlPort int, pgAddr string) (string, error) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import "+driver).Run(); err != nil {
		t.Fatalf("python3-%s missing: bash -c 'source scripts/servers.sh && install_servers'", driver)
	}
	connect := fmt.Sprintf("pymysql.connect(host='127.0.0.1', port=%d, user='root', password='', database='sharding_db')", mysqlPort)
	if driver == "psycopg2" {
		host, port, _ := strings.Cut(pgAddr, ":")
		connect = fmt.Sprintf("psycopg2.connect(host='%s', port=%s, user='root', dbname='sharding_db', sslmode='disable')", host, port)
	}
	var script strings.Builder
	fmt.Fprintf(&script, "import sys, %s\nconn = %s\nn = 0\n", driver, connect)
	fmt.Fprintf(&script, "for q in %s:\n", pyList(clientShows))
	script.WriteString("    cur = conn.cursor()\n    try:\n        cur.execute(q)\n        n += len(cur.fetchall())\n" +
		"    except Exception as e:\n        print('%s: %s: %s' % (q, type(e).__name__, e))\n        sys.exit(1)\n" +
		"    cur.close()\nprint('%d statements, %d rows' % (len(" + pyList(clientShows) + "), n))\n")
	out, err := exec.Command("/usr/bin/python3", "-c", script.String()).CombinedOutput()
	return string(out), err
}

func pyList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = "'" + strings.ReplaceAll(s, "'", "\\'") + "'"
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// loopbackNotice returns the first line of out, newline included, when it
// is the WARNING a node without users sends each PostgreSQL session, else "".
func loopbackNotice(out string) string {
	if first, _, ok := strings.Cut(out, "\n"); ok && strings.HasPrefix(first, "WARNING:") && strings.Contains(first, "no users are configured") {
		return first + "\n"
	}
	return ""
}
