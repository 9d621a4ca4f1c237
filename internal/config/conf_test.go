package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLoadExampleConf: the project's example conf dir (conf/, what the
// docs and `serve --conf conf` use) loads, and every name it refers to is
// defined in it: the sharding rule's algorithms and key generator, the
// read-write splitting groups its data nodes name, the units of each group.
func TestLoadExampleConf(t *testing.T) {
	cfg, err := Load(t.Context(), exampleConf)
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Mode.Repository; cfg.Mode.Type != ModeStandalone || r.Type != RepositoryEmbedded || r.DataDir != "shardkeeper-data" {
		t.Errorf("mode = %+v", cfg.Mode)
	}
	var types []string
	for _, r := range cfg.GlobalRules {
		types = append(types, r.Type)
	}
	if strings.Join(types, ",") != "authority,sql_parser,transaction" {
		t.Errorf("global rules = %v", types)
	}
	auth, _ := cfg.GlobalRule("authority")
	users, _ := auth.Content["users"].([]any)
	if len(users) != 2 || users[0].(map[string]any)["user"] != "root@%" || users[0].(map[string]any)["admin"] != true {
		t.Errorf("authority users = %v", users)
	}
	if cfg.Props.Int("kernel-executor-size") != 8 || cfg.Props.Bool("sql-show") || cfg.Props.Int("max-connections-size-per-query") != 2 ||
		cfg.Props.Int("proxy-frontend-max-connections") != 500 {
		t.Errorf("props = %v", cfg.Props)
	}

	db, ok := cfg.Database("shop_db")
	if !ok || len(cfg.Databases) != 1 || len(db.DataSources) != 4 {
		t.Fatalf("databases = %+v", cfg.Databases)
	}
	if p := db.DataSources["primary_0"]; !strings.HasPrefix(p.URL, "jdbc:mysql://127.0.0.1:3306/") || p.MaxPoolSize != 20 || p.MinPoolSize != 2 ||
		p.ConnectionTimeout != 10*time.Second || p.MaxLifetime != 15*time.Minute {
		t.Errorf("primary_0 = %+v", p)
	}

	rw, ok := db.Rule("readwrite_splitting")
	if !ok {
		t.Fatal("no readwrite_splitting rule")
	}
	groups := asMap(t, rw.Content["dataSourceGroups"])
	balancers := asMap(t, rw.Content["loadBalancers"])
	if len(groups) != 2 {
		t.Errorf("read-write splitting groups = %v", groups)
	}
	for name, g := range groups {
		g := asMap(t, g)
		units := []any{g["writeDataSourceName"]}
		units = append(units, g["readDataSourceNames"].([]any)...)
		for _, u := range units {
			if _, ok := db.DataSources[u.(string)]; !ok {
				t.Errorf("group %s names unit %v, which is not defined", name, u)
			}
		}
		if _, ok := balancers[g["loadBalancerName"].(string)]; !ok {
			t.Errorf("group %s names load balancer %v, which is not defined", name, g["loadBalancerName"])
		}
	}

	sharding, ok := db.Rule("sharding")
	if !ok {
		t.Fatal("no sharding rule")
	}
	c := sharding.Content
	tables, algorithms, generators := asMap(t, c["tables"]), asMap(t, c["shardingAlgorithms"]), asMap(t, c["keyGenerators"])
	if len(tables) != 2 || tables["orders"] == nil || tables["order_lines"] == nil {
		t.Fatalf("sharding tables = %v", tables)
	}
	for name, a := range algorithms {
		if asMap(t, a)["type"] != "INLINE" {
			t.Errorf("algorithm %s = %v, want INLINE", name, a)
		}
	}
	if groups["shop_0"] == nil || groups["shop_1"] == nil {
		t.Errorf("no groups shop_0 and shop_1 for the data nodes shop_${0..1}: %v", groups)
	}
	strategies := []any{c["defaultDatabaseStrategy"]}
	for name, tbl := range tables {
		tbl := asMap(t, tbl)
		strategies = append(strategies, tbl["tableStrategy"])
		if !strings.HasPrefix(tbl["actualDataNodes"].(string), "shop_${0..1}.") {
			t.Errorf("table %s: data nodes %v, want them in the groups shop_${0..1}", name, tbl["actualDataNodes"])
		}
		key := asMap(t, tbl["keyGenerateStrategy"])
		if g, ok := generators[key["keyGeneratorName"].(string)]; !ok || asMap(t, g)["type"] != "SNOWFLAKE" || key["column"] == "" {
			t.Errorf("table %s: key generate strategy %v, generators %v", name, key, generators)
		}
	}
	for _, s := range strategies {
		standard := asMap(t, asMap(t, s)["standard"])
		if _, ok := algorithms[standard["shardingAlgorithmName"].(string)]; !ok {
			t.Errorf("strategy %v names an algorithm that is not defined", s)
		}
	}
	if b, _ := c["bindingTables"].([]any); len(b) != 1 || b[0] != "orders,order_lines" {
		t.Errorf("binding tables = %v", c["bindingTables"])
	}
	if b, ok := db.Rule("broadcast"); !ok || !slices.Equal(b.Content["tables"].([]any), []any{"currencies", "countries"}) {
		t.Errorf("broadcast = %+v", b)
	}
}

// TestExampleConfClusterMode: the Cluster mode section that the example's
// global.yaml shows in a comment is valid once uncommented.
func TestExampleConfClusterMode(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(exampleConf, "global.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, in := "mode:\n", false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "  # type: Cluster") {
			in = true
		}
		if in && !strings.HasPrefix(line, "  #") {
			break
		}
		if in {
			doc += "  " + strings.TrimPrefix(line, "  # ") + "\n"
		}
	}
	m, err := ParseMode("global.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	if r := m.Repository; m.Type != ModeCluster || r.Type != RepositoryEtcd || r.Namespace != "shop_cluster" || r.TimeToLive != 30*time.Second {
		t.Fatalf("mode = %+v\n%s", m, doc)
	}
}

func asMap(t *testing.T, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v (%T) is not a map", v, v)
	}
	return m
}
