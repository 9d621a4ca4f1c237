package console

import (
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// sqliteUnitFile creates a SQLite database with the tables ddl and returns
// its path.
func sqliteUnitFile(t *testing.T, ddl ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "unit.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range ddl {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestTableAndPluginStatements runs upstream's SHOW UNLOADED SINGLE
// TABLES, REFRESH TABLE METADATA, SHOW TABLE METADATA, EXPORT STORAGE
// NODES, ALTER COMPUTE NODE ... SET and the plugin lists on a SQLite unit,
// on real etcd and ZooKeeper; and the default single table unit goes with
// the unit UNREGISTER removes.
func TestTableAndPluginStatements(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		unit := sqliteUnitFile(t,
			"CREATE TABLE t_order_0 (order_id BIGINT PRIMARY KEY, status VARCHAR(32))",
			"CREATE TABLE t_order_1 (order_id BIGINT PRIMARY KEY, status VARCHAR(32))",
			"CREATE TABLE t_user (user_id INT PRIMARY KEY)",
			"CREATE TABLE t_loose (id INT)",
			"CREATE TABLE t_auto_0 (id INT)", "CREATE TABLE t_auto_1 (id INT)")
		n := startNode(t, open(t), "ral", nil)
		s := newSession()
		exec(t, n, s, "CREATE DATABASE ral_db")
		exec(t, n, s, "USE ral_db")
		exec(t, n, s, "REGISTER STORAGE UNIT ds_0 (URL='jdbc:sqlite:"+unit+"', USER='app', PASSWORD='secret-pw')")
		exec(t, n, s, "CREATE SHARDING TABLE RULE t_order (DATANODES('ds_0.t_order_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=order_id, "+
			"SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='t_order_${order_id % 2}')))))")
		exec(t, n, s, "LOAD SINGLE TABLE ds_0.t_user")
		exec(t, n, s, "CREATE SHARDING TABLE RULE t_auto (STORAGE_UNITS(ds_0), SHARDING_COLUMN=id, TYPE(NAME='hash_mod', PROPERTIES('sharding-count'='2')))")

		if got := rowStrings(exec(t, n, s, "SHOW UNLOADED SINGLE TABLES")); !reflect.DeepEqual(got, [][]string{{"t_loose", "ds_0"}}) {
			t.Errorf("SHOW UNLOADED SINGLE TABLES: %q", got)
		}
		if e := execError(t, n, s, "REFRESH TABLE METADATA t_user FROM STORAGE UNIT ds_9"); e.Code != 10102 || e.Message != "Storage units '[ds_9]' do not exist in database 'ral_db'." {
			t.Errorf("REFRESH of a missing unit: %d %q", e.Code, e.Message)
		}
		exec(t, n, s, "REFRESH TABLE METADATA t_user FROM STORAGE UNIT ds_0")
		exec(t, n, s, "REFRESH TABLE METADATA")
		// The physical table and the logic table, whose columns are its
		// first actual table's.
		var got [][]string
		testenv.Eventually(t, "SHOW TABLE METADATA to show the refreshed tables", func() bool {
			got = rowStrings(exec(t, n, s, "SHOW TABLE METADATA t_order_0, t_order, no_such"))
			return len(got) == 4
		})
		wantCol := `{"name":"order_id","dataType":-5,"primaryKey":true,"generated":false,"caseSensitive":false,"visible":true,"unsigned":false,"nullable":false}`
		if got[0][0] != "ral_db" || got[0][1] != "t_order_0" || got[0][2] != "COLUMN" || got[0][4] != wantCol || got[2][1] != "t_order" || got[2][4] != wantCol {
			t.Errorf("SHOW TABLE METADATA: %q", got)
		}

		res := exec(t, n, s, "EXPORT STORAGE NODES FROM ral_db")
		if cols := columnNames(res); !reflect.DeepEqual(cols, []string{"id", "create_time", "storage_nodes"}) {
			t.Errorf("EXPORT STORAGE NODES columns %q", cols)
		}
		if nodes := rowStrings(res)[0][2]; !strings.Contains(nodes, `{"storage_nodes":{"ral_db":[{"ip":"","port":"","database":"`+unit+`","username":"app"}]}}`) || strings.Contains(nodes, "secret-pw") {
			t.Errorf("EXPORT STORAGE NODES: %s", nodes)
		}

		if e := execError(t, n, s, "ALTER COMPUTE NODE 'ral' SET XA_RECOVERY_NODES = 'ral', 'other'"); e.Code != 30001 || !strings.Contains(e.Message, "XA_RECOVERY_NODES: this shardkeeper node runs no XA transactions") {
			t.Errorf("ALTER COMPUTE NODE XA_RECOVERY_NODES: %d %q", e.Code, e.Message)
		}
		if e := execError(t, n, s, "ALTER COMPUTE NODE 'ral' SET NO_SUCH = 1"); e.Code != 12010 {
			t.Errorf("ALTER COMPUTE NODE NO_SUCH: %d %q", e.Code, e.Message)
		}

		for q, want := range map[string]string{
			"SHOW SHARDING ALGORITHM PLUGINS":                                            "INLINE",
			"SHOW PLUGINS OF 'org.apache.shardingsphere.sharding.spi.ShardingAlgorithm'": "HASH_MOD",
			"SHOW IMPLEMENTATIONS OF ShardingAlgorithm":                                  "INLINE",
			"SHOW ENCRYPT ALGORITHM IMPLEMENTATIONS":                                     "AES",
			"SHOW MASK ALGORITHM PLUGINS":                                                "MASK_FIRST_N_LAST_M",
			"SHOW READ QUERY LOAD BALANCE ALGORITHM PLUGINS":                             "ROUND_ROBIN",
		} {
			res := exec(t, n, s, q)
			if cols := columnNames(res); !reflect.DeepEqual(cols, []string{"type", "type_aliases", "description"}) {
				t.Errorf("%s: columns %q", q, cols)
			}
			found := false
			for _, r := range rowStrings(res) {
				found = found || r[0] == want
			}
			if !found {
				t.Errorf("%s: no %s in %q", q, want, rowStrings(res))
			}
		}
		if e := execError(t, n, s, "SHOW PLUGINS OF 'NoSuchAlgorithm'"); e.Code != 30001 || !strings.Contains(e.Message, "SHARDINGALGORITHM") {
			t.Errorf("SHOW PLUGINS OF an unknown SPI: %d %q", e.Code, e.Message)
		}

		// The default single table unit does not outlive its unit.
		exec(t, n, s, "DROP SHARDING TABLE RULE t_order, t_auto")
		exec(t, n, s, "SET DEFAULT SINGLE TABLE STORAGE UNIT = ds_0")
		exec(t, n, s, "UNREGISTER STORAGE UNIT ds_0 IGNORE SINGLE TABLES")
		testenv.Eventually(t, "the default single table unit to go with ds_0", func() bool {
			return reflect.DeepEqual(rowStrings(exec(t, n, s, "SHOW DEFAULT SINGLE TABLE STORAGE UNIT")), [][]string{{"RANDOM"}})
		})
	})
}

// TestConvertYamlConfiguration converts database configuration files of
// the conf dir to DistSQL: upstream's example file, and one on SQLite units
// whose statements, run on a node of real etcd and ZooKeeper, build the
// rules IMPORT builds from the same file. Paths outside the conf dir are
// refused, as is a node without one.
func TestConvertYamlConfiguration(t *testing.T) {
	example, err := os.ReadFile(testenv.Shared(t, "testdata", "shardingsphere", "database-sharding-mysql.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := dbconfig.Convert("database-sharding-mysql.yaml", example)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"CREATE DATABASE sharding_db;\nUSE sharding_db;\n",
		"REGISTER STORAGE UNIT ds_0 (URL='jdbc:mysql://127.0.0.1:3306/demo_ds_0?useSSL=false', USER='root', PASSWORD='', PROPERTIES('connectionTimeoutMilliseconds'='30000', 'idleTimeoutMilliseconds'='60000', 'maxLifetimeMilliseconds'='1800000', 'maxPoolSize'='50', 'minPoolSize'='1')),\n",
		"CREATE SHARDING TABLE RULE t_order (DATANODES('ds_${0..1}.t_order_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=order_id, " +
			"SHARDING_ALGORITHM(TYPE(NAME='INLINE', PROPERTIES('algorithm-expression'='t_order_${order_id % 2}')))), " +
			"KEY_GENERATE_STRATEGY(COLUMN=order_id, TYPE(NAME='SNOWFLAKE')), AUDIT_STRATEGY(TYPE(NAME='DML_SHARDING_CONDITIONS'), ALLOW_HINT_DISABLE=true));\n",
		"CREATE SHARDING TABLE REFERENCE RULE ref_0 (t_order, t_order_item);\n",
		"CREATE DEFAULT SHARDING DATABASE STRATEGY (TYPE='standard', SHARDING_COLUMN=user_id, SHARDING_ALGORITHM(TYPE(NAME='INLINE', PROPERTIES('algorithm-expression'='ds_${user_id % 2}'))));\n",
		"CREATE DEFAULT SHARDING TABLE STRATEGY (TYPE='none');\n",
		"-- not converted: the sharding rule's defaultAuditStrategy",
		"CREATE BROADCAST TABLE RULE t_address;\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}

	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		conf := t.TempDir()
		u0 := sqliteUnitFile(t, "CREATE TABLE t_order_0 (order_id BIGINT PRIMARY KEY)", "CREATE TABLE t_order_1 (order_id BIGINT PRIMARY KEY)", "CREATE TABLE t_user (id INT)")
		u1 := sqliteUnitFile(t, "CREATE TABLE t_order_0 (order_id BIGINT PRIMARY KEY)", "CREATE TABLE t_order_1 (order_id BIGINT PRIMARY KEY)")
		yaml := func(db string) []byte {
			return []byte("databaseName: " + db + `
dataSources:
  ds_0:
    url: jdbc:sqlite:` + u0 + `
    username: app
    password: it's
  ds_1:
    url: jdbc:sqlite:` + u1 + `
rules:
- !SHARDING
  tables:
    t_order:
      actualDataNodes: ds_${0..1}.t_order_${0..1}
      databaseStrategy:
        standard:
          shardingColumn: user_id
          shardingAlgorithmName: db_inline
      tableStrategy:
        standard:
          shardingColumn: order_id
          shardingAlgorithmName: t_inline
      keyGenerateStrategy:
        column: order_id
        keyGeneratorName: snowflake
  autoTables:
    t_auto:
      actualDataSources: ds_0,ds_1
      shardingStrategy:
        standard:
          shardingColumn: id
          shardingAlgorithmName: auto_mod
  shardingAlgorithms:
    db_inline:
      type: INLINE
      props:
        algorithm-expression: ds_${user_id % 2}
    t_inline:
      type: INLINE
      props:
        algorithm-expression: t_order_${order_id % 2}
    auto_mod:
      type: HASH_MOD
      props:
        sharding-count: '4'
  keyGenerators:
    snowflake:
      type: SNOWFLAKE
- !BROADCAST
  tables:
    - t_dict
- !SINGLE
  tables:
    - ds_0.t_user
- !READWRITE_SPLITTING
  dataSourceGroups:
    rw:
      writeDataSourceName: ds_0
      readDataSourceNames:
        - ds_1
      loadBalancerName: rr
  loadBalancers:
    rr:
      type: ROUND_ROBIN
- !ENCRYPT
  tables: {}
`)
		}
		if err := os.WriteFile(filepath.Join(conf, "database-conv.yaml"), yaml("converted_db"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(conf, "database-imported.yaml"), yaml("imported_db"), 0o600); err != nil {
			t.Fatal(err)
		}
		confDir, err := dbconfig.OpenConfDir(conf)
		if err != nil {
			t.Fatal(err)
		}
		n := startNode(t, open(t), "convert", nil, func(d *Deps) { d.ConfDir, d.FileDir = confDir, confDir })
		s := newSession()
		res := exec(t, n, s, "CONVERT YAML CONFIGURATION FROM FILE 'database-conv.yaml'")
		if cols := columnNames(res); !reflect.DeepEqual(cols, []string{"distsql"}) {
			t.Errorf("columns %q", cols)
		}
		script := *res.Rows[0][0]
		if !strings.Contains(script, "-- not converted: the ENCRYPT rule") || !strings.Contains(script, "PASSWORD='it''s'") {
			t.Errorf("CONVERT:\n%s", script)
		}
		for _, q := range strings.Split(script, ";\n") {
			if q = strings.TrimSpace(q); q != "" && !strings.HasPrefix(q, "--") {
				exec(t, n, s, q)
			}
		}
		exec(t, n, s, "IMPORT DATABASE CONFIGURATION FROM FILE 'database-imported.yaml'")
		for _, q := range []string{"SHOW SHARDING TABLE RULES", "SHOW BROADCAST TABLE RULES", "SHOW SINGLE TABLES", "SHOW READWRITE_SPLITTING RULES", "SHOW STORAGE UNITS"} {
			converted, imported := rowStrings(exec(t, n, s, q+" FROM converted_db")), rowStrings(exec(t, n, s, q+" FROM imported_db"))
			if len(converted) == 0 || !reflect.DeepEqual(converted, imported) {
				t.Errorf("%s: converted %q, imported %q", q, converted, imported)
			}
		}
		if e := execError(t, n, s, "CONVERT YAML CONFIGURATION FROM FILE '/etc/passwd'"); e.Code != 30020 {
			t.Errorf("CONVERT of a file outside the conf dir: %d %q", e.Code, e.Message)
		}
		bare := startNode(t, open(t), "convert-bare", nil)
		if e := execError(t, bare, newSession(), "CONVERT YAML CONFIGURATION FROM FILE 'database-conv.yaml'"); e.Code != 30001 || !strings.Contains(e.Message, "conf dir") {
			t.Errorf("CONVERT without a conf dir: %d %q", e.Code, e.Message)
		}
	})
}
