package rules

import (
	"errors"
	"reflect"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rule/sharding"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestApplyWritesUpstreamShapes checks the rule content the statements
// write: upstream's generated names and the YAML configuration's fields.
func TestApplyWritesUpstreamShapes(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	db := config.Database{Name: "db", DataSources: map[string]config.DataSource{
		"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", ""),
		"ds_1": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_1", "root", ""),
	}}
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, db); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE SHARDING TABLE RULE t_order (DATANODES('ds_${0..1}.t_order_${0..1}'), DATABASE_STRATEGY(TYPE='standard', SHARDING_COLUMN=user_id, SHARDING_ALGORITHM(TYPE(NAME='INLINE', PROPERTIES('algorithm-expression'='ds_${user_id % 2}')))), KEY_GENERATE_STRATEGY(COLUMN=order_id, TYPE(NAME='snowflake', PROPERTIES('max-vibration-offset'=3))))",
		"CREATE SHARDING TABLE RULE t_auto (STORAGE_UNITS(ds_0, ds_1), SHARDING_COLUMN=id, TYPE(NAME='hash_mod', PROPERTIES('sharding-count'=4)))",
		"CREATE SHARDING TABLE REFERENCE RULE ref_0 (t_order, t_auto)",
		"CREATE DEFAULT SHARDING TABLE STRATEGY (TYPE='none')",
		"CREATE BROADCAST TABLE RULE t_dict",
	} {
		st, err := families.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Apply(ctx, repo, "db", st, Options{})
		if err != nil || !out.Changed || len(out.Pending) > 0 {
			t.Fatalf("%s: %+v %v", q, out, err)
		}
	}
	d, _, err := metadata.ReadDatabase(ctx, repo, "db")
	if err != nil {
		t.Fatal(err)
	}
	c := d.Rules["sharding"].Content
	tables := c["tables"].(map[string]any)
	order := tables["t_order"].(map[string]any)
	if order["actualDataNodes"] != "ds_${0..1}.t_order_${0..1}" ||
		!reflect.DeepEqual(order["databaseStrategy"], map[string]any{"standard": map[string]any{"shardingColumn": "user_id", "shardingAlgorithmName": "t_order_database_inline"}}) ||
		!reflect.DeepEqual(order["keyGenerateStrategy"], map[string]any{"column": "order_id", "keyGeneratorName": "t_order_snowflake"}) {
		t.Errorf("t_order = %v", order)
	}
	auto := c["autoTables"].(map[string]any)["t_auto"].(map[string]any)
	if auto["actualDataSources"] != "ds_0,ds_1" ||
		!reflect.DeepEqual(auto["shardingStrategy"], map[string]any{"standard": map[string]any{"shardingColumn": "id", "shardingAlgorithmName": "t_auto_hash_mod"}}) {
		t.Errorf("t_auto = %v", auto)
	}
	algs := c["shardingAlgorithms"].(map[string]any)
	if !reflect.DeepEqual(algs["t_auto_hash_mod"], map[string]any{"type": "hash_mod", "props": map[string]any{"sharding-count": "4"}}) {
		t.Errorf("t_auto_hash_mod = %v (properties are strings, as upstream's Properties)", algs["t_auto_hash_mod"])
	}
	if gen := c["keyGenerators"].(map[string]any)["t_order_snowflake"]; !reflect.DeepEqual(gen, map[string]any{"type": "snowflake", "props": map[string]any{"max-vibration-offset": "3"}}) {
		t.Errorf("t_order_snowflake = %v", gen)
	}
	if name, refs := sharding.BindingParts(c["bindingTables"].([]any)[0].(string)); name != "ref_0" || !reflect.DeepEqual(refs, []string{"t_order", "t_auto"}) {
		t.Errorf("bindingTables = %v", c["bindingTables"])
	}
	if _, ok := c["defaultTableStrategy"].(map[string]any)["none"]; !ok {
		t.Errorf("defaultTableStrategy = %v", c["defaultTableStrategy"])
	}
	if got := d.Rules["broadcast"].Content["tables"]; !reflect.DeepEqual(got, []any{"t_dict"}) {
		t.Errorf("broadcast tables = %v", got)
	}

	if _, err := Apply(ctx, repo, "db", &distsql.ShowComputeNodes{}, Options{}); !errors.Is(err, ErrNotRuleStatement) {
		t.Errorf("SHOW COMPUTE NODES: %v", err)
	}
	// IF NOT EXISTS of what exists writes nothing.
	st, _ := families.Parse("CREATE BROADCAST TABLE RULE IF NOT EXISTS t_dict")
	if out, err := Apply(ctx, repo, "db", st, Options{}); err != nil || out.Changed {
		t.Errorf("IF NOT EXISTS: %+v %v", out, err)
	}
}

// oneUnitDatabase creates database db with one unit in repo and returns
// apply, which runs a rule statement that must change it, and rule, which
// reads the content of its rule ruleType from repo.
func oneUnitDatabase(t testing.TB, repo registry.Repository, ruleType string) (apply func(q string), content func() map[string]any) {
	ctx := testenv.Context(t)
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "db", DataSources: map[string]config.DataSource{
		"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", ""),
	}}); err != nil {
		t.Fatal(err)
	}
	apply = func(q string) {
		t.Helper()
		st, err := families.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := Apply(ctx, repo, "db", st, Options{}); err != nil || !out.Changed {
			t.Fatalf("%s: %+v %v", q, out, err)
		}
	}
	content = func() map[string]any {
		t.Helper()
		d, _, err := metadata.ReadDatabase(ctx, repo, "db")
		if err != nil {
			t.Fatal(err)
		}
		return d.Rules[ruleType].Content
	}
	return apply, content
}

// TestApplyMaskRule checks what CREATE, ALTER and DROP MASK RULE write:
// upstream's generated algorithm names, properties as strings, the items
// of the registry's layout (tables/{t}, mask_algorithms/{name}) with the
// fields upstream's YAML swapper writes, and nothing left after the last
// table goes.
func TestApplyMaskRule(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	apply, content := oneUnitDatabase(t, repo, "mask")
	apply("CREATE MASK RULE t_user (COLUMNS((NAME=password, TYPE(NAME='MD5')), (NAME=Phone, TYPE(NAME='keep_first_n_last_m', PROPERTIES('first-n'=3, 'last-m'=4, 'replace-char'='*')))))")
	c := content()
	wantAlgs := map[string]any{
		"t_user_password_md5":              map[string]any{"type": "MD5"},
		"t_user_phone_keep_first_n_last_m": map[string]any{"type": "keep_first_n_last_m", "props": map[string]any{"first-n": "3", "last-m": "4", "replace-char": "*"}},
	}
	if !reflect.DeepEqual(c["maskAlgorithms"], wantAlgs) {
		t.Errorf("maskAlgorithms = %v, want %v", c["maskAlgorithms"], wantAlgs)
	}
	wantTable := map[string]any{"name": "t_user", "columns": map[string]any{
		"password": map[string]any{"logicColumn": "password", "maskAlgorithm": "t_user_password_md5"},
		"Phone":    map[string]any{"logicColumn": "Phone", "maskAlgorithm": "t_user_phone_keep_first_n_last_m"},
	}}
	if got := rule.Map(c["tables"])["t_user"]; !reflect.DeepEqual(got, wantTable) {
		t.Errorf("tables.t_user = %v, want %v", got, wantTable)
	}
	for _, item := range [][2]string{{"tables", "t_user"}, {"mask_algorithms", "t_user_password_md5"}} {
		key, err := paths.DefaultLayout.RuleItem("db", "mask", item[0], item[1])
		if err != nil {
			t.Fatal(err)
		}
		if kvs, err := repo.List(ctx, key); err != nil || len(kvs) == 0 {
			t.Errorf("item %s: %v %v", key, kvs, err)
		}
	}

	apply("ALTER MASK RULE t_user (COLUMNS((NAME=password, TYPE(NAME='MD5'))))")
	if got := content()["maskAlgorithms"]; !reflect.DeepEqual(got, map[string]any{"t_user_password_md5": map[string]any{"type": "MD5"}}) {
		t.Errorf("ALTER left maskAlgorithms %v, want only the one still used", got)
	}
	apply("CREATE MASK RULE t_generic (COLUMNS((NAME=c, TYPE(NAME='GENERIC_TABLE_RANDOM_REPLACE'))))") // a type 5.5's releases ship
	apply("DROP MASK RULE t_user, t_generic")
	if c := content(); c != nil {
		t.Errorf("after the last DROP the rule is %v, want none", c)
	}
}

// TestApplyEncryptRule checks what CREATE, ALTER and DROP ENCRYPT RULE
// write: upstream's encryptor names ({table}_{column}, assist_..., like_...),
// the derived columns, the items tables/{t} and encryptors/{name} with the
// fields upstream's YAML swapper writes, and the encryptors only a dropped
// or altered table used removed with it.
func TestApplyEncryptRule(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	apply, content := oneUnitDatabase(t, repo, "encrypt")
	apply("CREATE ENCRYPT RULE t_user (COLUMNS((NAME=phone, CIPHER=phone_c, ASSISTED_QUERY=phone_q, LIKE_QUERY=phone_l, ENCRYPT_ALGORITHM(TYPE(NAME='AES', PROPERTIES('aes-key-value'=123, 'digest-algorithm-name'='SHA-1'))), ASSISTED_QUERY_ALGORITHM(TYPE(NAME='MD5')), LIKE_QUERY_ALGORITHM(TYPE(NAME='CHAR_DIGEST_LIKE'))), (NAME=pwd, CIPHER=pwd_c, ENCRYPT_ALGORITHM(TYPE(NAME='RC4', PROPERTIES('rc4-key-value'='key-5'))))))")
	c := content()
	wantEncryptors := map[string]any{
		"t_user_phone":        map[string]any{"type": "AES", "props": map[string]any{"aes-key-value": "123", "digest-algorithm-name": "SHA-1"}},
		"assist_t_user_phone": map[string]any{"type": "MD5"},
		"like_t_user_phone":   map[string]any{"type": "CHAR_DIGEST_LIKE"},
		"t_user_pwd":          map[string]any{"type": "RC4", "props": map[string]any{"rc4-key-value": "key-5"}},
	}
	if !reflect.DeepEqual(c["encryptors"], wantEncryptors) {
		t.Errorf("encryptors = %v, want %v", c["encryptors"], wantEncryptors)
	}
	wantTable := map[string]any{"name": "t_user", "columns": map[string]any{
		"phone": map[string]any{"name": "phone", "cipher": map[string]any{"name": "phone_c", "encryptorName": "t_user_phone"},
			"assistedQuery": map[string]any{"name": "phone_q", "encryptorName": "assist_t_user_phone"},
			"likeQuery":     map[string]any{"name": "phone_l", "encryptorName": "like_t_user_phone"}},
		"pwd": map[string]any{"name": "pwd", "cipher": map[string]any{"name": "pwd_c", "encryptorName": "t_user_pwd"}},
	}}
	if got := rule.Map(c["tables"])["t_user"]; !reflect.DeepEqual(got, wantTable) {
		t.Errorf("tables.t_user = %v, want %v", got, wantTable)
	}
	for _, item := range [][2]string{{"tables", "t_user"}, {"encryptors", "assist_t_user_phone"}} {
		key, err := paths.DefaultLayout.RuleItem("db", "encrypt", item[0], item[1])
		if err != nil {
			t.Fatal(err)
		}
		if kvs, err := repo.List(ctx, key); err != nil || len(kvs) == 0 {
			t.Errorf("item %s: %v %v", key, kvs, err)
		}
	}

	apply("ALTER ENCRYPT RULE t_user (COLUMNS((NAME=pwd, CIPHER=pwd_c, ENCRYPT_ALGORITHM(TYPE(NAME='RC4', PROPERTIES('rc4-key-value'='key-5'))))))")
	if got := content()["encryptors"]; !reflect.DeepEqual(got, map[string]any{"t_user_pwd": map[string]any{"type": "RC4", "props": map[string]any{"rc4-key-value": "key-5"}}}) {
		t.Errorf("ALTER left encryptors %v, want only the one still used", got)
	}
	apply("DROP ENCRYPT RULE t_user")
	if c := content(); c != nil {
		t.Errorf("after the last DROP the rule is %v, want none", c)
	}
}

// TestCreateEncryptRuleNeedsStorageUnits: CREATE ENCRYPT RULE on a
// database without storage units is upstream's EmptyStorageUnitException
// and writes nothing; CREATE MASK RULE, which upstream does not check so,
// is written.
func TestCreateEncryptRuleNeedsStorageUnits(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "empty_db"}); err != nil {
		t.Fatal(err)
	}
	st, err := families.Parse("CREATE ENCRYPT RULE t (COLUMNS((NAME=c, CIPHER=c_c, ENCRYPT_ALGORITHM(TYPE(NAME='AES', PROPERTIES('aes-key-value'='k', 'digest-algorithm-name'='SHA-1'))))))")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(ctx, repo, "empty_db", st, Options{})
	var se *sqlerr.Error
	if !errors.As(err, &se) || se.Code != 10101 || se.Message != "There is no storage unit in database 'empty_db'." {
		t.Fatalf("CREATE ENCRYPT RULE without units: %v", err)
	}
	if d, _, err := metadata.ReadDatabase(ctx, repo, "empty_db"); err != nil || len(d.Rules) != 0 {
		t.Fatalf("rules after the refusal: %v %v", d.Rules, err)
	}
	st, err = families.Parse("CREATE MASK RULE t (COLUMNS((NAME=c, TYPE(NAME='MD5'))))")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := Apply(ctx, repo, "empty_db", st, Options{}); err != nil || !out.Changed {
		t.Fatalf("CREATE MASK RULE without units: %+v %v", out, err)
	}
}
