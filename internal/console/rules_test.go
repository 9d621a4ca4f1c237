package console

import (
	"os"
	"reflect"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// upstreamShardingDB returns the path of upstream's example sharding
// database (database-sharding-mysql.yaml), read in place from the shared
// reference, which the project does not ship: the test skips without it
// (fails under scripts/test.sh).
func upstreamShardingDB(t *testing.T) string {
	t.Helper()
	return testenv.Shared(t, "testdata", "shardingsphere", "database-sharding-mysql.yaml")
}

// persistShardingDB writes upstream's example sharding database
// (upstreamShardingDB) plus an unused unit to the registry and waits until
// n's store has it.
func persistShardingDB(t *testing.T, repo registry.Repository, n *testNode) {
	t.Helper()
	file := upstreamShardingDB(t)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	db, err := config.ParseDatabase(file, data)
	if err != nil {
		t.Fatal(err)
	}
	db.DataSources["ds_spare"] = config.DataSource{URL: "jdbc:postgresql://db.example:5433/spare?sslmode=disable", Username: "u", Password: "never-shown", MaxPoolSize: 5}
	if err := metadatatest.CreateDatabase(testenv.Context(t), repo, paths.DefaultLayout, *db); err != nil {
		t.Fatal(err)
	}
	// The rules arrive item by item: wait for every item of the file.
	testenv.Eventually(t, "the store to load sharding_db", func() bool {
		d := n.store.Current().Databases["sharding_db"]
		if d == nil || len(d.Units) != 3 || d.Rules["broadcast"].Content == nil {
			return false
		}
		c := d.Rules["sharding"].Content
		return len(asMapT(c["tables"])) == 2 && len(asMapT(c["shardingAlgorithms"])) == 3 && len(asMapT(c["keyGenerators"])) == 1 &&
			len(asMapT(c["auditors"])) == 1 && c["defaultDatabaseStrategy"] != nil && c["defaultTableStrategy"] != nil &&
			c["defaultAuditStrategy"] != nil && c["bindingTables"] != nil
	})
}

func TestStorageUnitsAndShardingRules(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		repo := open(t)
		n := startNode(t, repo, "rules", nil)
		persistShardingDB(t, repo, n)
		s := newSession()

		if e := execError(t, n, s, "SHOW STORAGE UNITS"); e.Code != 1046 || e.SQLState != "3D000" {
			t.Errorf("without a database: %+v", e)
		}
		if e := execError(t, n, s, "USE nope"); e.Code != 1049 || e.SQLState != "42000" || e.Message != "Unknown database 'nope'" {
			t.Errorf("USE nope: %+v", e)
		}
		pg := &Session{ID: NewSessionID(), User: "postgres", Protocol: "PostgreSQL"}
		if e := execError(t, n, pg, "SHOW STORAGE UNITS FROM nope"); e.SQLState != "3D000" || e.Message != `database "nope" does not exist` {
			t.Errorf("PostgreSQL unknown database: %+v", e)
		}
		if got := rowStrings(exec(t, n, s, "SHOW DATABASES")); !reflect.DeepEqual(got, [][]string{{"sharding_db"}}) {
			t.Errorf("SHOW DATABASES %v", got)
		}
		exec(t, n, s, "USE sharding_db")
		if got := rowStrings(exec(t, n, s, "SELECT DATABASE()")); got[0][0] != "sharding_db" {
			t.Errorf("DATABASE() = %v", got)
		}

		res := exec(t, n, s, "SHOW STORAGE UNITS")
		want := []string{"name", "type", "host", "port", "db", "connection_timeout_milliseconds", "idle_timeout_milliseconds",
			"max_lifetime_milliseconds", "max_pool_size", "min_pool_size", "read_only", "other_attributes"}
		if got := columnNames(res); !reflect.DeepEqual(got, want) {
			t.Fatalf("columns %v, want upstream's %v", got, want)
		}
		rows := rowStrings(res)
		wantRows := [][]string{
			{"ds_0", "MySQL", "127.0.0.1", "3306", "demo_ds_0", "30000", "60000", "1800000", "50", "1", "false", `{"healthCheckProperties":{},"initializationFailTimeout":1,"validationTimeout":5000,"keepaliveTime":0,"leakDetectionThreshold":0,"registerMbeans":false,"allowPoolSuspension":false,"autoCommit":true,"isolateInternalQueries":false,"queryProperties":{"useSSL":"false"}}`},
			{"ds_1", "MySQL", "127.0.0.1", "3306", "demo_ds_1", "30000", "60000", "1800000", "50", "1", "false", `{"healthCheckProperties":{},"initializationFailTimeout":1,"validationTimeout":5000,"keepaliveTime":0,"leakDetectionThreshold":0,"registerMbeans":false,"allowPoolSuspension":false,"autoCommit":true,"isolateInternalQueries":false,"queryProperties":{"useSSL":"false"}}`},
			{"ds_spare", "PostgreSQL", "db.example", "5433", "spare", "0", "0", "0", "5", "0", "false", `{"healthCheckProperties":{},"initializationFailTimeout":1,"validationTimeout":5000,"keepaliveTime":0,"leakDetectionThreshold":0,"registerMbeans":false,"allowPoolSuspension":false,"autoCommit":true,"isolateInternalQueries":false,"queryProperties":{"sslmode":"disable"}}`},
		}
		if !reflect.DeepEqual(rows, wantRows) {
			t.Errorf("rows\n%v\nwant\n%v", rows, wantRows)
		}
		if got := rowStrings(exec(t, n, s, "SHOW STORAGE UNITS FROM sharding_db WHERE USAGE_COUNT = 0")); len(got) != 1 || got[0][0] != "ds_spare" {
			t.Errorf("USAGE_COUNT = 0: %v", got)
		}
		if got := rowStrings(exec(t, n, s, "SHOW STORAGE UNITS WHERE USAGE_COUNT = 1")); len(got) != 2 || got[0][0] != "ds_0" {
			t.Errorf("USAGE_COUNT = 1: %v", got)
		}
		if got := rowStrings(exec(t, n, s, "SHOW STORAGE UNITS LIKE '%spare'")); len(got) != 1 {
			t.Errorf("LIKE: %v", got)
		}

		res = exec(t, n, s, "SHOW SHARDING TABLE RULES FROM sharding_db")
		if got := columnNames(res); !reflect.DeepEqual(got, []string{"table", "actual_data_nodes", "actual_data_sources", "database_strategy_type",
			"database_sharding_column", "database_sharding_algorithm_type", "database_sharding_algorithm_props", "table_strategy_type",
			"table_sharding_column", "table_sharding_algorithm_type", "table_sharding_algorithm_props", "key_generate_column",
			"key_generator_type", "key_generator_props", "auditor_types", "allow_hint_disable"}) {
			t.Fatalf("columns %v", got)
		}
		wantRules := [][]string{
			{"t_order", "ds_${0..1}.t_order_${0..1}", "", "STANDARD", "user_id", "INLINE", `{"algorithm-expression":"ds_${user_id % 2}"}`,
				"STANDARD", "order_id", "INLINE", `{"algorithm-expression":"t_order_${order_id % 2}"}`, "order_id", "SNOWFLAKE", "",
				"DML_SHARDING_CONDITIONS", "true"},
			{"t_order_item", "ds_${0..1}.t_order_item_${0..1}", "", "STANDARD", "user_id", "INLINE", `{"algorithm-expression":"ds_${user_id % 2}"}`,
				"STANDARD", "order_id", "INLINE", `{"algorithm-expression":"t_order_item_${order_id % 2}"}`, "order_item_id", "SNOWFLAKE", "",
				"DML_SHARDING_CONDITIONS", "true"},
		}
		if got := rowStrings(res); !reflect.DeepEqual(got, wantRules) {
			t.Errorf("rules\n%v\nwant\n%v", got, wantRules)
		}
		if got := rowStrings(exec(t, n, s, "SHOW SHARDING TABLE RULE T_ORDER_ITEM")); len(got) != 1 || got[0][0] != "t_order_item" {
			t.Errorf("one rule: %v", got)
		}
		res = exec(t, n, s, "SHOW SHARDING ALGORITHMS")
		if got := columnNames(res); !reflect.DeepEqual(got, []string{"name", "type", "props"}) {
			t.Errorf("algorithm columns %v", got)
		}
		if got := rowStrings(res); len(got) != 3 || !reflect.DeepEqual(got[0], []string{"database_inline", "INLINE", `{"algorithm-expression":"ds_${user_id % 2}"}`}) {
			t.Errorf("algorithms %v", got)
		}
		if got := rowStrings(exec(t, n, s, "SHOW SHARDING KEY GENERATORS")); !reflect.DeepEqual(got, [][]string{{"snowflake", "SNOWFLAKE", ""}}) {
			t.Errorf("key generators %v", got)
		}
		res = exec(t, n, s, "SHOW KEY GENERATE ALGORITHM PLUGINS")
		if got := columnNames(res); !reflect.DeepEqual(got, []string{"type", "type_aliases", "description"}) || rowStrings(res)[0][0] != "SNOWFLAKE" {
			t.Errorf("plugins %v %v", got, rowStrings(res))
		}
		schemas := []datasource.Schema{{Name: "sharding_db",
			Tables: map[string]datasource.Table{"t_order": {Name: "t_order", Columns: []datasource.Column{{Name: "order_id", DataType: -5, TypeName: "BIGINT", PrimaryKey: true}}},
				"t_order_0":  {Name: "t_order_0", Columns: []datasource.Column{{Name: "order_id", DataType: -5, TypeName: "BIGINT", PrimaryKey: true}}},
				"t_unloaded": {Name: "t_unloaded", Columns: []datasource.Column{{Name: "id", DataType: 4, TypeName: "INT"}}}},
			Views: map[string]datasource.View{"v_order": {Name: "v_order", Definition: "SELECT order_id FROM t_order"}}}}
		if err := metadata.PersistSchemas(testenv.Context(t), repo, paths.DefaultLayout, "sharding_db", schemas); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the store to load the tables", func() bool {
			rows := rowStrings(exec(t, n, s, "SHOW TABLES"))
			return len(rows) > 0 && rows[len(rows)-1][0] == "v_order"
		})
		// The logic tables as a Proxy lists them: not the actual table
		// t_order_0, not the persisted table no rule loads.
		res = exec(t, n, s, "SHOW FULL TABLES FROM sharding_db")
		if got := columnNames(res); !reflect.DeepEqual(got, []string{"Tables_in_sharding_db", "Table_type"}) {
			t.Errorf("SHOW FULL TABLES columns %v", got)
		}
		if got := rowStrings(res); !reflect.DeepEqual(got, [][]string{{"t_address", "BASE TABLE"}, {"t_order", "BASE TABLE"}, {"t_order_item", "BASE TABLE"}, {"v_order", "VIEW"}}) {
			t.Errorf("SHOW FULL TABLES %v", got)
		}
		if got := rowStrings(exec(t, n, s, "SHOW TABLES LIKE 't\\_%'")); !reflect.DeepEqual(got, [][]string{{"t_address"}, {"t_order"}, {"t_order_item"}}) {
			t.Errorf("SHOW TABLES LIKE %v", got)
		}
	})
}

func asMapT(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// TestShardingTableRulesLayout554 persists the example sharding database in
// the 5.5.4 layout, where key generate strategies are rule-level items:
// SHOW SHARDING TABLE RULES shows each table's key generate column as it
// does for 5.5.3.
func TestShardingTableRulesLayout554(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		repo := open(t)
		file := upstreamShardingDB(t)
		n := startNode(t, repo, "rules", nil)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		db, err := config.ParseDatabase(file, data)
		if err != nil {
			t.Fatal(err)
		}
		if err := metadatatest.CreateDatabase(testenv.Context(t), repo, paths.Layout554, *db); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the store to load the rule", func() bool {
			d := n.store.Current().Databases["sharding_db"]
			return d != nil && len(asMapT(d.Rules["sharding"].Content["keyGenerateStrategies"])) == 2 && len(asMapT(d.Rules["sharding"].Content["tables"])) == 2 &&
				len(asMapT(d.Rules["sharding"].Content["keyGenerators"])) == 1
		})
		got := rowStrings(exec(t, n, newSession(), "SHOW SHARDING TABLE RULES FROM sharding_db"))
		if len(got) != 2 || got[0][11] != "order_id" || got[0][12] != "SNOWFLAKE" || got[1][11] != "order_item_id" {
			t.Fatalf("rules %v", got)
		}
	})
}
