package metadata

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// The types below mirror ShardingSphere's YAML classes field for field (the
// class is named on each): those of 5.5.2 and 5.5.3, which are the same,
// and, named V554, those 5.5.4 (master) changed. strictDecode loads a registry value
// into one of them and fails on a property the class does not have, as
// SnakeYAML's loadAs does ("Cannot create property=...").

// YamlShardingSphereTable (infra/common .../yaml/schema/pojo).
type ssTable struct {
	Name        string                  `yaml:"name"`
	Columns     map[string]ssColumn     `yaml:"columns"`
	Indexes     map[string]ssIndex      `yaml:"indexes"`
	Constraints map[string]ssConstraint `yaml:"constraints"`
	Type        ssTableType             `yaml:"type"`
}

// YamlShardingSphereColumn.
type ssColumn struct {
	Name          string `yaml:"name"`
	DataType      int    `yaml:"dataType"`
	PrimaryKey    bool   `yaml:"primaryKey"`
	Generated     bool   `yaml:"generated"`
	CaseSensitive bool   `yaml:"caseSensitive"`
	Visible       bool   `yaml:"visible"`
	Unsigned      bool   `yaml:"unsigned"`
	Nullable      bool   `yaml:"nullable"`
}

// YamlShardingSphereIndex.
type ssIndex struct {
	Name    string   `yaml:"name"`
	Columns []string `yaml:"columns"`
	Unique  bool     `yaml:"unique"`
}

// YamlShardingSphereConstraint.
type ssConstraint struct {
	Name                string `yaml:"name"`
	ReferencedTableName string `yaml:"referencedTableName"`
}

// TableType (infra/database .../metadata/database/enums/TableType).
type ssTableType string

func (t *ssTableType) UnmarshalYAML(n *yaml.Node) error {
	switch n.Value {
	case "TABLE", "VIEW", "SYSTEM_TABLE", "SYSTEM_VIEW":
		*t = ssTableType(n.Value)
		return nil
	}
	return fmt.Errorf("line %d: %q is not a TableType", n.Line, n.Value)
}

// YamlShardingSphereView.
type ssView struct {
	Name           string `yaml:"name"`
	ViewDefinition string `yaml:"viewDefinition"`
}

// YamlAlgorithmConfiguration (infra/algorithm/core).
type ssAlgorithm struct {
	Type  string         `yaml:"type"`
	Props map[string]any `yaml:"props"`
}

// YamlShardingStrategyConfiguration and its four strategy classes
// (features/sharding/core .../yaml/config/strategy/sharding).
type ssShardingStrategy struct {
	Standard *struct {
		ShardingColumn        string `yaml:"shardingColumn"`
		ShardingAlgorithmName string `yaml:"shardingAlgorithmName"`
	} `yaml:"standard"`
	Complex *struct {
		ShardingColumns       string `yaml:"shardingColumns"`
		ShardingAlgorithmName string `yaml:"shardingAlgorithmName"`
	} `yaml:"complex"`
	Hint *struct {
		ShardingAlgorithmName string `yaml:"shardingAlgorithmName"`
	} `yaml:"hint"`
	None *ssNone `yaml:"none"`
}

// ssNone is YamlNoneShardingStrategyConfiguration, which upstream builds
// from any node (NoneShardingStrategyConfigurationYamlConstruct; it writes
// none: ”): a scalar or an empty mapping.
type ssNone struct{}

func (*ssNone) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode || n.Kind == yaml.MappingNode && len(n.Content) == 0 {
		return nil
	}
	return fmt.Errorf("line %d: none holds %v", n.Line, n.Kind)
}

// YamlKeyGenerateStrategyConfiguration.
type ssKeyGenerateStrategy struct {
	Column           string `yaml:"column"`
	KeyGeneratorName string `yaml:"keyGeneratorName"`
}

// YamlShardingAuditStrategyConfiguration.
type ssAuditStrategy struct {
	AuditorNames     []string `yaml:"auditorNames"`
	AllowHintDisable bool     `yaml:"allowHintDisable"`
}

// YamlTableRuleConfiguration.
type ssTableRule struct {
	LogicTable          string                 `yaml:"logicTable"`
	ActualDataNodes     string                 `yaml:"actualDataNodes"`
	DatabaseStrategy    *ssShardingStrategy    `yaml:"databaseStrategy"`
	TableStrategy       *ssShardingStrategy    `yaml:"tableStrategy"`
	KeyGenerateStrategy *ssKeyGenerateStrategy `yaml:"keyGenerateStrategy"`
	AuditStrategy       *ssAuditStrategy       `yaml:"auditStrategy"`
}

// YamlShardingAutoTableRuleConfiguration.
type ssAutoTableRule struct {
	LogicTable          string                 `yaml:"logicTable"`
	ActualDataSources   string                 `yaml:"actualDataSources"`
	ShardingStrategy    *ssShardingStrategy    `yaml:"shardingStrategy"`
	KeyGenerateStrategy *ssKeyGenerateStrategy `yaml:"keyGenerateStrategy"`
	AuditStrategy       *ssAuditStrategy       `yaml:"auditStrategy"`
}

// The 5.5.4 table classes (no keyGenerateStrategy, #38609) and
// YamlKeyGenerateStrategyRuleConfiguration (#38294).
type ssTableRuleV554 struct {
	LogicTable       string              `yaml:"logicTable"`
	ActualDataNodes  string              `yaml:"actualDataNodes"`
	DatabaseStrategy *ssShardingStrategy `yaml:"databaseStrategy"`
	TableStrategy    *ssShardingStrategy `yaml:"tableStrategy"`
	AuditStrategy    *ssAuditStrategy    `yaml:"auditStrategy"`
}

type ssAutoTableRuleV554 struct {
	LogicTable        string              `yaml:"logicTable"`
	ActualDataSources string              `yaml:"actualDataSources"`
	ShardingStrategy  *ssShardingStrategy `yaml:"shardingStrategy"`
	AuditStrategy     *ssAuditStrategy    `yaml:"auditStrategy"`
}

type ssKeyGenerateStrategyRuleV554 struct {
	KeyGenerateType     string `yaml:"keyGenerateType"`
	KeyGeneratorName    string `yaml:"keyGeneratorName"`
	LogicTable          string `yaml:"logicTable"`
	KeyGenerateColumn   string `yaml:"keyGenerateColumn"`
	KeyGenerateSequence string `yaml:"keyGenerateSequence"`
}

// YamlShardingCacheConfiguration with YamlShardingCacheOptionsConfiguration.
type ssShardingCache struct {
	AllowedMaxSqlLength int `yaml:"allowedMaxSqlLength"`
	RouteCache          struct {
		InitialCapacity int  `yaml:"initialCapacity"`
		MaximumSize     int  `yaml:"maximumSize"`
		SoftValues      bool `yaml:"softValues"`
	} `yaml:"routeCache"`
}

// YamlReadwriteSplittingDataSourceGroupRuleConfiguration.
type ssReadwriteGroup struct {
	WriteDataSourceName            string   `yaml:"writeDataSourceName"`
	ReadDataSourceNames            []string `yaml:"readDataSourceNames"`
	TransactionalReadQueryStrategy string   `yaml:"transactionalReadQueryStrategy"`
	LoadBalancerName               string   `yaml:"loadBalancerName"`
}

// YamlEncryptTableRuleConfiguration with YamlEncryptColumnRuleConfiguration
// and YamlEncryptColumnItemRuleConfiguration.
type ssEncryptTable struct {
	Name    string `yaml:"name"`
	Columns map[string]struct {
		Name          string             `yaml:"name"`
		Cipher        *ssEncryptColumnIt `yaml:"cipher"`
		AssistedQuery *ssEncryptColumnIt `yaml:"assistedQuery"`
		LikeQuery     *ssEncryptColumnIt `yaml:"likeQuery"`
	} `yaml:"columns"`
}

type ssEncryptColumnIt struct {
	Name          string `yaml:"name"`
	EncryptorName string `yaml:"encryptorName"`
}

// YamlMaskTableRuleConfiguration with YamlMaskColumnRuleConfiguration.
type ssMaskTable struct {
	Name    string `yaml:"name"`
	Columns map[string]struct {
		LogicColumn   string `yaml:"logicColumn"`
		MaskAlgorithm string `yaml:"maskAlgorithm"`
	} `yaml:"columns"`
}

// YamlShadowDataSourceConfiguration and YamlShadowTableConfiguration.
type ssShadowDataSource struct {
	ProductionDataSourceName string `yaml:"productionDataSourceName"`
	ShadowDataSourceName     string `yaml:"shadowDataSourceName"`
}

type ssShadowTable struct {
	DataSourceNames      []string `yaml:"dataSourceNames"`
	ShadowAlgorithmNames []string `yaml:"shadowAlgorithmNames"`
}

// Global rules: YamlAuthorityRuleConfiguration (with YamlUserConfiguration),
// YamlTransactionRuleConfiguration, YamlSQLParserRuleConfiguration (with
// YamlSQLParserCacheOptionRuleConfiguration), YamlSQLFederationRuleConfiguration
// (with YamlSQLFederationExecutionPlanCacheRuleConfiguration),
// YamlSQLTranslatorRuleConfiguration, YamlGlobalClockRuleConfiguration.
type ssAuthority struct {
	Users []struct {
		User                     string `yaml:"user"`
		Password                 string `yaml:"password"`
		AuthenticationMethodName string `yaml:"authenticationMethodName"`
		Admin                    bool   `yaml:"admin"`
	} `yaml:"users"`
	Privilege            *ssAlgorithm           `yaml:"privilege"`
	Authenticators       map[string]ssAlgorithm `yaml:"authenticators"`
	DefaultAuthenticator string                 `yaml:"defaultAuthenticator"`
}

type ssTransaction struct {
	DefaultType  string         `yaml:"defaultType"`
	ProviderType string         `yaml:"providerType"`
	Props        map[string]any `yaml:"props"`
}

type ssCacheOption struct {
	InitialCapacity int `yaml:"initialCapacity"`
	MaximumSize     int `yaml:"maximumSize"`
}

type ssSQLParser struct {
	SQLStatementCache *ssCacheOption `yaml:"sqlStatementCache"`
	ParseTreeCache    *ssCacheOption `yaml:"parseTreeCache"`
}

type ssSQLFederation struct {
	SQLFederationEnabled     bool           `yaml:"sqlFederationEnabled"`
	AllQueryUseSQLFederation bool           `yaml:"allQueryUseSQLFederation"`
	ExecutionPlanCache       *ssCacheOption `yaml:"executionPlanCache"`
}

type ssSQLTranslator struct {
	Type                                string         `yaml:"type"`
	UseOriginalSQLWhenTranslatingFailed bool           `yaml:"useOriginalSQLWhenTranslatingFailed"`
	Props                               map[string]any `yaml:"props"`
}

type ssGlobalClock struct {
	Type     string         `yaml:"type"`
	Provider string         `yaml:"provider"`
	Enabled  bool           `yaml:"enabled"`
	Props    map[string]any `yaml:"props"`
}

// strictDecode loads data into v, failing on any property v's class does
// not have.
func strictDecode(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// ruleItemClasses name the upstream class of each database rule item, by
// rule type and item node name: the map value's class for named items, the
// field's class for unique items ("List" for a collection). "" is a raw
// string (a String field, or an element of a key-list collection).
var ruleItemClasses = map[string]map[string]string{
	"sharding": {
		"tables": "YamlTableRuleConfiguration", "auto_tables": "YamlShardingAutoTableRuleConfiguration",
		"binding_tables": "", "default_sharding_column": "",
		"default_database_strategy":     "YamlShardingStrategyConfiguration",
		"default_table_strategy":        "YamlShardingStrategyConfiguration",
		"default_key_generate_strategy": "YamlKeyGenerateStrategyConfiguration",
		"default_audit_strategy":        "YamlShardingAuditStrategyConfiguration",
		"sharding_algorithms":           "YamlAlgorithmConfiguration", "key_generators": "YamlAlgorithmConfiguration",
		"auditors": "YamlAlgorithmConfiguration", "sharding_cache": "YamlShardingCacheConfiguration",
	},
	"broadcast": {"tables": "List"},
	"single":    {"tables": "List", "default_data_source": ""},
	"readwrite_splitting": {
		"data_source_groups": "YamlReadwriteSplittingDataSourceGroupRuleConfiguration", "load_balancers": "YamlAlgorithmConfiguration",
	},
	"encrypt": {"tables": "YamlEncryptTableRuleConfiguration", "encryptors": "YamlAlgorithmConfiguration"},
	"mask":    {"tables": "YamlMaskTableRuleConfiguration", "mask_algorithms": "YamlAlgorithmConfiguration"},
	"shadow": {
		"data_sources": "YamlShadowDataSourceConfiguration", "tables": "YamlShadowTableConfiguration",
		"shadow_algorithms": "YamlAlgorithmConfiguration", "default_shadow_algorithm_name": "",
	},
}

var globalRuleClasses = map[string]string{
	"authority":      "YamlAuthorityRuleConfiguration",
	"transaction":    "YamlTransactionRuleConfiguration",
	"sql_parser":     "YamlSQLParserRuleConfiguration",
	"sql_federation": "YamlSQLFederationRuleConfiguration",
	"sql_translator": "YamlSQLTranslatorRuleConfiguration",
	"global_clock":   "YamlGlobalClockRuleConfiguration",
}

// goClasses are the Go mirrors of the upstream classes, by class name.
var goClasses = map[string]func() any{
	"YamlShardingSphereTable":                                func() any { return &ssTable{} },
	"YamlShardingSphereView":                                 func() any { return &ssView{} },
	"YamlTableRuleConfiguration":                             func() any { return &ssTableRule{} },
	"YamlShardingAutoTableRuleConfiguration":                 func() any { return &ssAutoTableRule{} },
	"YamlShardingStrategyConfiguration":                      func() any { return &ssShardingStrategy{} },
	"YamlKeyGenerateStrategyConfiguration":                   func() any { return &ssKeyGenerateStrategy{} },
	"YamlShardingAuditStrategyConfiguration":                 func() any { return &ssAuditStrategy{} },
	"YamlAlgorithmConfiguration":                             func() any { return &ssAlgorithm{} },
	"YamlShardingCacheConfiguration":                         func() any { return &ssShardingCache{} },
	"YamlReadwriteSplittingDataSourceGroupRuleConfiguration": func() any { return &ssReadwriteGroup{} },
	"YamlEncryptTableRuleConfiguration":                      func() any { return &ssEncryptTable{} },
	"YamlMaskTableRuleConfiguration":                         func() any { return &ssMaskTable{} },
	"YamlShadowDataSourceConfiguration":                      func() any { return &ssShadowDataSource{} },
	"YamlShadowTableConfiguration":                           func() any { return &ssShadowTable{} },
	"YamlAuthorityRuleConfiguration":                         func() any { return &ssAuthority{} },
	"YamlTransactionRuleConfiguration":                       func() any { return &ssTransaction{} },
	"YamlSQLParserRuleConfiguration":                         func() any { return &ssSQLParser{} },
	"YamlSQLFederationRuleConfiguration":                     func() any { return &ssSQLFederation{} },
	"YamlSQLTranslatorRuleConfiguration":                     func() any { return &ssSQLTranslator{} },
	"YamlGlobalClockRuleConfiguration":                       func() any { return &ssGlobalClock{} },
	"List":                                                   func() any { return &[]any{} },
	"V554.YamlTableRuleConfiguration":                        func() any { return &ssTableRuleV554{} },
	"V554.YamlShardingAutoTableRuleConfiguration":            func() any { return &ssAutoTableRuleV554{} },
	"V554.YamlKeyGenerateStrategyRuleConfiguration":          func() any { return &ssKeyGenerateStrategyRuleV554{} },
}

// ruleItemClassesV554 are the sharding rule items whose class 5.5.4
// changed ("-": the item does not exist there).
var ruleItemClassesV554 = map[string]string{
	"tables":                  "V554.YamlTableRuleConfiguration",
	"auto_tables":             "V554.YamlShardingAutoTableRuleConfiguration",
	"key_generate_strategies": "V554.YamlKeyGenerateStrategyRuleConfiguration",
	"sharding_cache":          "-",
}

// upstreamClass names the class layout's release loads a versioned value
// of kind k into: one of goClasses, "Map" (a unit), "Properties" (/props)
// or "" (a raw string).
func upstreamClass(layout paths.Layout, k paths.Key) (string, error) {
	switch k.Kind {
	case paths.KindTable:
		return "YamlShardingSphereTable", nil
	case paths.KindView:
		return "YamlShardingSphereView", nil
	case paths.KindUnit:
		return "Map", nil
	case paths.KindProps:
		return "Properties", nil
	case paths.KindGlobalRule:
		if c, ok := globalRuleClasses[k.Name]; ok {
			return c, nil
		}
		return "", fmt.Errorf("no global rule class for %q", k.Name)
	case paths.KindRuleItem:
		classes, ok := ruleItemClasses[k.RuleType]
		if !ok {
			return "", fmt.Errorf("no rule class for %q", k.RuleType)
		}
		c, ok := classes[k.RuleItem]
		if v, changed := ruleItemClassesV554[k.RuleItem]; layout == paths.Layout554 && k.RuleType == "sharding" && changed {
			c, ok = v, v != "-"
		}
		if !ok {
			return "", fmt.Errorf("%s has no item %q", k.RuleType, k.RuleItem)
		}
		return c, nil
	}
	return "", fmt.Errorf("unexpected versioned kind %s", k.Kind)
}

// checkUpstreamLoads loads one versioned value into the Go mirror of its
// class in layout's release and returns what was wrong.
func checkUpstreamLoads(layout paths.Layout, k paths.Key, data []byte) error {
	class, err := upstreamClass(layout, k)
	if err != nil {
		return err
	}
	switch class {
	case "":
		if len(data) == 0 || bytes.ContainsAny(data, "\n") {
			return fmt.Errorf("want a raw one-line string, got %q", data)
		}
		return nil
	case "Map":
		// DataSourceUnitPersistService loads a Map; the swapper needs
		// dataSourceClassName and a URL.
		var m map[string]any
		if err := strictDecode(data, &m); err != nil {
			return err
		}
		if s, _ := m["dataSourceClassName"].(string); s == "" {
			return fmt.Errorf("no dataSourceClassName")
		}
		if m["url"] == nil && m["jdbcUrl"] == nil {
			return fmt.Errorf("no url")
		}
		return nil
	case "Properties":
		// java.util.Properties: string keys, scalar values.
		var m map[string]any
		if err := strictDecode(data, &m); err != nil {
			return err
		}
		for key, v := range m {
			switch v.(type) {
			case map[string]any, []any:
				return fmt.Errorf("prop %s is not a scalar", key)
			}
		}
		return nil
	}
	v := goClasses[class]()
	if err := strictDecode(data, v); err != nil {
		return err
	}
	if t, ok := v.(*ssTable); ok && t.Type == "" {
		return fmt.Errorf("no type")
	}
	return nil
}

// persistedValue is one versioned value a node persisted.
type persistedValue struct {
	key  string
	k    paths.Key
	data []byte
}

// persistedValues returns every versioned value under the registry's
// /metadata, /rules and /props, sorted by key.
func persistedValues(t *testing.T, repo registry.Repository) []persistedValue {
	t.Helper()
	var out []persistedValue
	for _, prefix := range []string{paths.MetadataRoot, paths.GlobalRulesRoot, paths.PropsRoot} {
		kvs, err := snapshotOf(testenv.Context(t), repo, prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			if k, ok := paths.ParseKey(kv.Key); ok && k.Leaf == paths.VersionsName {
				out = append(out, persistedValue{kv.Key, k, kv.Value})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// catalogDatabases creates, in the test PostgreSQL and MariaDB servers and
// in a SQLite file, tables with a primary key, a secondary index, a unique
// constraint, a foreign key and a view, and returns one logical database
// per server.
func catalogDatabases(t *testing.T) []config.Database {
	t.Helper()
	ctx := testenv.Context(t)
	tables := func(prefix string) []string {
		return []string{
			"CREATE TABLE " + prefix + "t_order (order_id bigint PRIMARY KEY, user_id int NOT NULL, status varchar(32))",
			"CREATE INDEX idx_order_user ON " + prefix + "t_order (user_id)",
			"CREATE TABLE " + prefix + "t_note (note_id int PRIMARY KEY, order_id bigint, code varchar(16), " +
				"CONSTRAINT uq_note_code UNIQUE (code), CONSTRAINT fk_note_order FOREIGN KEY (order_id) REFERENCES " + prefix + "t_order (order_id))",
			"CREATE VIEW " + prefix + "v_order AS SELECT order_id FROM " + prefix + "t_order",
		}
	}
	exec := func(db *datasource.DB, qs []string) {
		t.Helper()
		for _, q := range qs {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	var out []config.Database

	pg, err := url.Parse(testenv.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	pgPass, _ := pg.User.Password()
	pgDS := config.NewDataSource("jdbc:postgresql://"+pg.Host+pg.Path, pg.User.Username(), pgPass)
	pgConn, err := datasource.Open(ctx, "pg", pgDS)
	if err != nil {
		testenv.DatabaseUnreachable(t, "PostgreSQL", err)
	}
	t.Cleanup(func() { _ = pgConn.Close() })
	schema := testenv.Namespace("sk_up_")
	t.Cleanup(func() { _, _ = pgConn.ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	exec(pgConn, append([]string{"CREATE SCHEMA " + schema}, tables(schema+".")...))
	out = append(out, config.Database{Name: "pg_db", DataSources: map[string]config.DataSource{"ds_pg": pgDS}})

	my, err := url.Parse(testenv.MySQLURL())
	if err != nil {
		t.Fatal(err)
	}
	myPass, _ := my.User.Password()
	myAdmin := config.NewDataSource("jdbc:mariadb://"+my.Host+my.Path, my.User.Username(), myPass)
	myConn, err := datasource.Open(ctx, "my", myAdmin)
	if err != nil {
		testenv.DatabaseUnreachable(t, "MariaDB", err)
	}
	t.Cleanup(func() { _ = myConn.Close() })
	myDB := testenv.Namespace("sk_up_")
	t.Cleanup(func() { _, _ = myConn.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+myDB) })
	exec(myConn, append([]string{"CREATE DATABASE " + myDB}, tables(myDB+".")...))
	myDS := myAdmin
	myDS.URL = "jdbc:mysql://" + my.Host + "/" + myDB + "?useSSL=false"
	out = append(out, config.Database{Name: "my_db", DataSources: map[string]config.DataSource{"ds_my": myDS}})

	liteDS := config.NewDataSource("jdbc:sqlite:"+filepath.Join(t.TempDir(), "lite.db"), "", "")
	lite, err := datasource.Open(ctx, "lite", liteDS)
	if err != nil {
		t.Fatal(err)
	}
	exec(lite, tables(""))
	_ = lite.Close()
	out = append(out, config.Database{Name: "lite_db", DataSources: map[string]config.DataSource{"lite": liteDS},
		Rules: []config.Rule{{Type: "single", Content: map[string]any{"tables": []any{"*.*"}, "defaultDataSource": "lite"}}}})
	return out
}

// catalogIntrospect reads the catalog databases for real and gives the
// example databases (whose demo_ds_* servers do not exist) fakeIntrospect's
// tables.
func catalogIntrospect(ctx context.Context, db config.Database) ([]datasource.Schema, error) {
	if strings.HasPrefix(db.Name, "sharding_") {
		return fakeIntrospect(ctx, db)
	}
	return datasource.Introspect(ctx, db)
}

// upstreamConfig is ShardingSphere's example global.yaml with both example
// database files and the three catalog databases.
func upstreamConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg := exampleConfig(t)
	pg, err := config.ParseDatabase("database-sharding-postgresql.yaml", readFile(t, filepath.Join(exampleDir(t), "database-sharding-postgresql.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	pg.Name = "sharding_pg_db"
	cfg.Databases = append(cfg.Databases, *pg)
	cfg.Databases = append(cfg.Databases, catalogDatabases(t)...)
	return cfg
}

// TestPersistedValuesLoadInUpstreamClasses boots the example and catalog
// databases in the layout the example was written for (5.5.3) and in the
// default one, and loads every value written in the classes of that
// layout's release.
func TestPersistedValuesLoadInUpstreamClasses(t *testing.T) {
	for _, layout := range []paths.Layout{paths.Layout553, paths.DefaultLayout} {
		t.Run(layout.String(), func(t *testing.T) { persistedValuesLoadIn(t, layout) })
	}
}

func persistedValuesLoadIn(t *testing.T, layout paths.Layout) {
	repo := memory.New()
	cfg := upstreamConfig(t)
	cfg.Mode.Repository.Layout = layout
	store, _ := bootOn(t, repo, cfg, catalogIntrospect)
	values := persistedValues(t, repo)
	counts := map[string]int{}
	for _, v := range values {
		counts[v.k.Kind]++
	}
	for _, k := range []string{paths.KindTable, paths.KindView, paths.KindUnit, paths.KindRuleItem, paths.KindGlobalRule, paths.KindProps} {
		if counts[k] == 0 {
			t.Errorf("no %s value was persisted", k)
		}
	}
	// The catalogs' foreign keys and unique constraints reached the registry.
	for _, db := range []string{"my_db", "lite_db"} {
		n, ok := store.Current().Table(db, db, "t_note")
		if !ok || len(n.Constraints) != 1 || n.Constraints[0].ReferencedTable != "t_order" {
			t.Errorf("%s t_note = %+v", db, n)
		}
	}
	t.Run("strict-go", func(t *testing.T) {
		for _, v := range values {
			if err := checkUpstreamLoads(layout, v.k, v.data); err != nil {
				t.Errorf("%s: upstream cannot load it: %v\n%s", v.key, err, v.data)
			}
		}
		t.Logf("checked %d values: %v", len(values), counts)
	})
	t.Run("snakeyaml", func(t *testing.T) {
		failures, err := loadWithSnakeYAML(t, layout, values)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range failures {
			t.Error(f)
		}
	})
}

// loadWithSnakeYAML loads every value with SnakeYAML into the Java mirrors
// of layout's release's classes (testdata/snakeyaml/UpstreamLoad.java) and
// returns the failures, each naming its key. Without a JDK or the jar it
// skips the test (see testenv.SnakeYAML).
func loadWithSnakeYAML(t *testing.T, layout paths.Layout, values []persistedValue) ([]string, error) {
	t.Helper()
	load := testenv.SnakeYAML(t, "testdata/snakeyaml/UpstreamLoad.java", "UpstreamLoad")
	dir := t.TempDir()
	var manifest strings.Builder
	for i, v := range values {
		class, err := upstreamClass(layout, v.k)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.key, err)
		}
		if class == "" {
			continue // a raw string: upstream reads it as it is
		}
		name := fmt.Sprintf("%04d.yaml", i)
		if err := os.WriteFile(filepath.Join(dir, name), v.data, 0o644); err != nil {
			return nil, err
		}
		fmt.Fprintf(&manifest, "%s\t%s\t%s\n", class, name, v.key)
	}
	mf := filepath.Join(dir, "manifest.tsv")
	if err := os.WriteFile(mf, []byte(manifest.String()), 0o644); err != nil {
		return nil, err
	}
	out, err := load(mf).CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Logf("SnakeYAML: %s", lines[len(lines)-1])
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return lines[:len(lines)-1], nil
	case err != nil:
		return nil, fmt.Errorf("java: %v\n%s", err, out)
	}
	return nil, nil
}

// TestStrictDecoderRejectsTypeName checks the check: a column with a
// typeName property, which some registries hold, does not load upstream,
// and still loads in shardkeeper.
func TestStrictDecoderRejectsTypeName(t *testing.T) {
	old := []byte("name: t\ntype: TABLE\ncolumns:\n  id:\n    name: id\n    dataType: 4\n    typeName: int4\n    primaryKey: true\n")
	err := checkUpstreamLoads(paths.DefaultLayout, paths.Key{Kind: paths.KindTable}, old)
	if err == nil || !strings.Contains(err.Error(), "typeName") {
		t.Fatalf("err = %v, want one naming typeName", err)
	}
	got, err := decodeTable("t", old)
	if err != nil || got.Columns[0].TypeName != "int4" {
		t.Fatalf("old table = %+v, %v: shardkeeper must still read it", got, err)
	}
}
