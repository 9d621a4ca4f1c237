package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// exampleConf is the project's example conf dir.
const exampleConf = "../../conf"

// shardingSphereConf returns the folder of upstream's example proxy
// configuration in the shared reference, which the project does not ship
// (the test skips without it, and fails under scripts/test.sh).
func shardingSphereConf(t testing.TB) string {
	t.Helper()
	return testenv.Shared(t, "testdata", "shardingsphere")
}

// TestLoadShardingSphereExamples: upstream's own example configuration,
// read in place, loads unchanged.
func TestLoadShardingSphereExamples(t *testing.T) {
	shardingSphereConf := shardingSphereConf(t)
	// The example dir has two files for the same database (MySQL and
	// PostgreSQL flavours): loading it whole must report the duplicate with
	// ShardingSphere's message.
	_, err := Load(t.Context(), shardingSphereConf)
	if err == nil || !strings.Contains(err.Error(), "Database name `sharding_db` must unique at all database configurations.") {
		t.Fatalf("Load(examples) = %v, want the duplicate-name error", err)
	}
	for _, flavour := range []string{"mysql", "postgresql"} {
		dir := t.TempDir()
		copyFile(t, filepath.Join(shardingSphereConf, "global.yaml"), filepath.Join(dir, "global.yaml"))
		copyFile(t, filepath.Join(shardingSphereConf, "database-sharding-"+flavour+".yaml"), filepath.Join(dir, "database-sharding-"+flavour+".yaml"))
		cfg, err := Load(t.Context(), dir)
		if err != nil {
			t.Fatalf("%s: %v", flavour, err)
		}
		if cfg.Mode.Type != ModeCluster || cfg.Mode.Repository.Type != RepositoryZooKeeper {
			t.Errorf("mode = %+v", cfg.Mode)
		}
		if len(cfg.Databases) != 1 || cfg.Databases[0].Name != "sharding_db" {
			t.Fatalf("databases = %+v", cfg.Databases)
		}
		db := cfg.Databases[0]
		ds := db.DataSources["ds_1"]
		if !strings.HasPrefix(ds.URL, "jdbc:"+flavour+"://127.0.0.1:") || ds.MaxPoolSize != 50 || ds.MinPoolSize != 1 ||
			ds.ConnectionTimeout != 30*time.Second || ds.MaxLifetime != 30*time.Minute || len(db.DataSources) != 2 {
			t.Errorf("ds_1 = %+v", ds)
		}
		sharding, ok := db.Rule("sharding")
		if !ok {
			t.Fatal("no sharding rule")
		}
		tables := sharding.Content["tables"].(map[string]any)
		if _, ok := tables["t_order_item"]; !ok || len(tables) != 2 {
			t.Errorf("sharding tables = %v", tables)
		}
		if b, ok := db.Rule("broadcast"); !ok || b.Content["tables"].([]any)[0] != "t_address" {
			t.Errorf("broadcast = %+v", b)
		}
		var types []string
		for _, r := range cfg.GlobalRules {
			types = append(types, r.Type)
		}
		if strings.Join(types, ",") != "authority,sql_federation,sql_parser,transaction" {
			t.Errorf("global rules = %v", types)
		}
		if cfg.Props.Int("kernel-executor-size") != 16 || cfg.Props.Bool("sql-show") || cfg.Props.Value("proxy-frontend-ssl-version") != "TLSv1.2,TLSv1.3" ||
			cfg.Props.Int("load-table-metadata-batch-size") != 1000 || cfg.Props.Int("proxy-backend-query-fetch-size") != -1 {
			t.Errorf("props = %v", cfg.Props)
		}
		if ds.Password != "" && strings.Contains(ds.String(), "password="+ds.Password) {
			t.Errorf("String shows the password: %s", ds)
		}
	}
}

func TestLoadFallbacksAndEmptyFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "server.yaml", "props:\n  sql-show: true\n")
	write(t, dir, "config-a.yaml", "databaseName: a\ndataSources:\n  ds:\n    url: jdbc:sqlite:/tmp/a.db\n")
	write(t, dir, "config-empty.yaml", "databaseName:\ndataSources:\nrules:\n")
	cfg, err := Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Props.Bool("sql-show") || len(cfg.Databases) != 1 || cfg.Databases[0].Name != "a" || cfg.Mode.Type != ModeStandalone {
		t.Fatalf("cfg = %+v", cfg)
	}
	// database-*.yaml wins over config-*.yaml.
	write(t, dir, "database-b.yaml", "databaseName: b\n")
	cfg, err = Load(t.Context(), dir)
	if err != nil || len(cfg.Databases) != 1 || cfg.Databases[0].Name != "b" {
		t.Fatalf("cfg = %+v, %v", cfg, err)
	}
}

func TestLoadReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "global.yaml", `mode:
  type: Clustr
props:
  sql-show: maybe
  kernel-executor-size: lots
labels: oops
colour: blue
rules:
- !SHARDING
  tables: {}
`)
	write(t, dir, "database-x.yaml", `dataSources:
  ds_0:
    username: root
    maxPoolSize: many
rules:
- !SHARDING
  tables: {}
- !SHARDING
  tables: {}
- !NOPE
  x: 1
`)
	write(t, dir, "database-y.yaml", "databaseName: y\nextra: 1\n")
	_, err := Load(t.Context(), dir)
	if err == nil {
		t.Fatal("no error")
	}
	g, x, y := filepath.Join(dir, "global.yaml"), filepath.Join(dir, "database-x.yaml"), filepath.Join(dir, "database-y.yaml")
	for _, want := range []string{
		g + ":2: mode.type: \"Clustr\" is not a mode",
		g + ":4: props.sql-show: \"maybe\" is not a boolean",
		g + ":5: props.kernel-executor-size: \"lots\" is not a int",
		g + ":6: labels: must be a list",
		g + ":7: colour: unknown field",
		g + ":9: rules: database rules",
		x + ":3: dataSources.ds_0.url: required",
		x + ":4: dataSources.ds_0.maxPoolSize: \"many\" must be an integer",
		x + ":8: rules: duplicate rule !SHARDING",
		x + ":10: rules: unknown rule tag \"!NOPE\"",
		"Property `databaseName` in file `" + x + "` is required.",
		y + ":2: extra: unknown field",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParseFileEmbedded(t *testing.T) {
	cfg, err := ParseFile("app.yaml", []byte(`databaseName: logic_db
mode:
  type: Standalone
dataSources:
  ds_0:
    jdbcUrl: jdbc:sqlite:/tmp/x.db
    maximumPoolSize: 5
rules:
- !SINGLE
  tables:
    - "*.*"
- !TRANSACTION
  defaultType: LOCAL
props:
  sql-show: true
`))
	if err != nil {
		t.Fatal(err)
	}
	db := cfg.Databases[0]
	if db.Name != "logic_db" || db.DataSources["ds_0"].MaxPoolSize != 5 || len(db.Rules) != 1 || db.Rules[0].Type != "single" {
		t.Fatalf("db = %+v", db)
	}
	if len(cfg.GlobalRules) != 1 || cfg.GlobalRules[0].Type != "transaction" || !cfg.Props.Bool("sql-show") || cfg.DataSources != nil {
		t.Fatalf("cfg = %+v", cfg)
	}
	if _, err := ParseFile("app.yaml", []byte("dataSources: {}\n")); err == nil || !strings.Contains(err.Error(), "Property `databaseName` in file `app.yaml` is required.") {
		t.Fatalf("missing name: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"global.yaml", "database-shop.yaml"} {
		data, err := os.ReadFile(filepath.Join(exampleConf, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("rules:\n- !SHARDING\n  tables: [1, 2]\n- !SINGLE x\n"))
	f.Add([]byte("databaseName: [a]\ndataSources: {a: [1]}\nprops: {sql-show: {}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseGlobal("g.yaml", data)
		_, _ = ParseDatabase("d.yaml", data)
		_, _ = ParseFile("f.yaml", data)
		_, _ = ParseDataSource("u.yaml", "unit", data)
	})
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
