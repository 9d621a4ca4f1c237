package statistics

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// upstreamTree is a statistics tree as ShardingSphere's
// StatisticsPersistService writes it: "" at the database, schema and an
// empty table, YamlEngine.marshal of YamlRowStatistics at each row.
var upstreamTree = map[string]string{
	"/statistics/databases/shardingsphere":                                                              "",
	"/statistics/databases/shardingsphere/schemas/shardingsphere":                                       "",
	"/statistics/databases/shardingsphere/schemas/shardingsphere/tables/cluster_information":            "",
	"/statistics/databases/shardingsphere/schemas/shardingsphere/tables/sharding_table_statistics/8c1f": "rows:\n- 1\n- sharding_db\n- sharding_db\n- t_order\n- ds_0\n- t_order_0\n- 1200\n- 16384\nuniqueKey: 8c1f\n",
	"/statistics/databases/shardingsphere/schemas/shardingsphere/tables/sharding_table_statistics/01ab": "rows:\n- 2\n- sharding_db\n- sharding_db\n- t_order\n- ds_1\n- t_order_1\n- 1100\n- .nan\nuniqueKey: 01ab\n",
	"/statistics/databases/shardingsphere/schemas/shardingsphere/tables/sharding_table_statistics/bad":  "uniqueKey: [",
	"/statistics/databases/shardingsphere/schemas/shardingsphere/tables/sharding_table_statistics/odd":  "uniqueKey: odd\ncolour: red\n",
	"/statistics/databases/shardingsphere/schemas/shardingsphere/tables/t/r/extra":                      "x",
	"/statistics/databases/other_db":                                                                    "",
}

func TestLoadOnRealRegistries(t *testing.T) {
	es, zs := etcdtest.New(t), zktest.New(t)
	for _, c := range []struct {
		name string
		open func() registry.Repository
	}{
		{"etcd", func() registry.Repository { return es.Open(t, es.Namespace(t, "sk_stats_")) }},
		{"zookeeper", func() registry.Repository { return zs.Open(t, zs.Namespace(t, "sk_stats_")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := testenv.Context(t)
			repo := c.open()
			for k, v := range upstreamTree {
				if _, err := repo.Put(ctx, k, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			st, err := Load(ctx, repo, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatalf("statistics do not encode as JSON: %v", err)
			}
			if len(st.Databases) != 2 || st.Databases[0].Name != "other_db" || st.Databases[1].Name != "shardingsphere" {
				t.Fatalf("databases: %s", b)
			}
			tables := st.Databases[1].Schemas[0].Tables
			if len(tables) < 2 || tables[0].Name != "cluster_information" || len(tables[0].Rows) != 0 {
				t.Fatalf("tables: %s", b)
			}
			rows := tables[1].Rows
			if len(rows) != 2 || rows[0].UniqueKey != "01ab" || rows[1].UniqueKey != "8c1f" || fmt.Sprint(rows[1].Rows) != "[1 sharding_db sharding_db t_order ds_0 t_order_0 1200 16384]" {
				t.Fatalf("rows: %s", b)
			}
			if rows[0].Rows[7] != "NaN" {
				t.Errorf("a NaN value is %#v, want the text NaN", rows[0].Rows[7])
			}
			probs := strings.Join(st.Problems, "\n")
			for _, want := range []string{"sharding_table_statistics/bad", "sharding_table_statistics/odd", "tables/t/r/extra"} {
				if !strings.Contains(probs, want) {
					t.Errorf("problems %q lack %s", probs, want)
				}
			}
			one, err := Load(ctx, repo, "shardingsphere", 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(one.Databases) != 1 || !one.Truncated || len(one.Databases[0].Schemas[0].Tables[1].Rows) != 1 {
				t.Errorf("one database, one row: %+v", one)
			}
			if _, err := Load(ctx, repo, "../x", 0); !errors.Is(err, registry.ErrBadKey) {
				t.Errorf("database ../x: %v, want ErrBadKey", err)
			}
			none, err := Load(ctx, repo, "nope", 0)
			if err != nil || len(none.Databases) != 0 {
				t.Errorf("a database without statistics: %+v %v", none, err)
			}
		})
	}
}

// TestHostileStatisticsWithinBounds: rows a co-tenant filled (40 of 300 KB here;
// 150 of 1 MB took a node from 85 MB to 9.96 GB under 10 GETs) are read
// only up to MaxBytes, and the result says it is truncated.
func TestHostileStatisticsWithinBounds(t *testing.T) {
	es, zs := etcdtest.New(t), zktest.New(t)
	for _, c := range []struct {
		name string
		open func() registry.Repository
	}{
		{"etcd", func() registry.Repository { return es.Open(t, es.Namespace(t, "sk_stats_")) }},
		{"zookeeper", func() registry.Repository { return zs.Open(t, zs.Namespace(t, "sk_stats_")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := testenv.Context(t)
			repo := c.open()
			pad := strings.Repeat("x", 300<<10)
			for i := range 40 {
				key := fmt.Sprintf("/statistics/databases/db/schemas/s/tables/t/%03d", i)
				if _, err := repo.Put(ctx, key, []byte("uniqueKey: '"+pad+"'\nrows: [1]\n")); err != nil {
					t.Fatal(err)
				}
			}
			st, err := Load(ctx, repo, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(st)
			if !st.Truncated || len(b) > 8<<20+64<<10 {
				t.Fatalf("Load of 12 MB of rows: truncated %v, %d bytes of JSON; want truncated within %d", st.Truncated, len(b), 8<<20)
			}
		})
	}
}
