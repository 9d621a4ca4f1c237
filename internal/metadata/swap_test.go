package metadata

import (
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule/sharding"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestGoldenTreesLoadInUpstreamClasses boots the example conf for each
// target release and loads every value it writes with the mirrors of that
// release's classes, in Go and with SnakeYAML: a 5.5.4 table must not
// carry keyGenerateStrategy, a 5.5.3 tree must not hold
// key_generate_strategies, none: ” must load.
func TestGoldenTreesLoadInUpstreamClasses(t *testing.T) {
	for _, layout := range paths.Layouts {
		t.Run(layout.String(), func(t *testing.T) {
			cfg := exampleConfig(t)
			cfg.Mode.Repository.Layout = layout
			repo := memory.New()
			bootOn(t, repo, cfg, layoutIntrospect)
			values := persistedValues(t, repo)
			for _, v := range values {
				if err := checkUpstreamLoads(layout, v.k, v.data); err != nil {
					t.Errorf("%s: %s cannot load it: %v\n%s", v.key, layout, err, v.data)
				}
			}
			failures, err := loadWithSnakeYAML(t, layout, values)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range failures {
				t.Error(f)
			}
		})
	}
}

// TestMirrorsRejectOtherReleases checks the check: a 5.5.3 table item does
// not load in 5.5.4's class, and a 5.5.4 key generate strategy is no item
// of 5.5.3.
func TestMirrorsRejectOtherReleases(t *testing.T) {
	tree := releaseTree(t, paths.Layout553)
	const item = "/metadata/sharding_db/rules/sharding/tables/t_order/versions/0"
	k, _ := paths.ParseKey(item)
	if err := checkUpstreamLoads(paths.Layout554, k, []byte(tree[item])); err == nil || !strings.Contains(err.Error(), "keyGenerateStrategy") {
		t.Fatalf("5.5.3's t_order in 5.5.4's class: %v, want an error naming keyGenerateStrategy", err)
	}
	k, _ = paths.ParseKey("/metadata/sharding_db/rules/sharding/key_generate_strategies/t_order_order_id/versions/0")
	if err := checkUpstreamLoads(paths.Layout553, k, []byte("keyGenerateType: column\n")); err == nil {
		t.Fatal("5.5.3 loads a key generate strategy item")
	}
}

// item552 is 5.5.2's NamedRuleItemNodePath pattern: the name of a named
// item must match [\w\-]+ or 5.5.2 drops the item.
var item552 = regexp.MustCompile(`/([\w\-]+)/versions/\d+$`)

func TestBindingTableNameIsStable(t *testing.T) {
	const ref = "t_order,t_order_item"
	name := sharding.BindingName(ref)
	if len(name) != 16 || !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(name) || sharding.BindingName(" "+ref) != name {
		t.Fatalf("sharding.BindingName(%q) = %q", ref, name)
	}
	if sharding.BindingName("t_a,t_b") == name {
		t.Fatal("two references share a name")
	}
	// Two nodes bootstrapping the same conf write the same key, which
	// 5.5.2 reads as a named item.
	var keys [2][]string
	for i := range keys {
		repo := memory.New()
		bootOn(t, repo, exampleConfig(t), fakeIntrospect)
		for k := range dumpTree(t, repo) {
			if strings.Contains(k, "/binding_tables/") {
				keys[i] = append(keys[i], k)
			}
		}
		sort.Strings(keys[i])
	}
	want := "/metadata/sharding_db/rules/sharding/binding_tables/" + name + "/versions/0"
	if !reflect.DeepEqual(keys[0], keys[1]) || !strings.Contains(strings.Join(keys[0], " "), want) {
		t.Fatalf("binding keys %v and %v, want both to hold %s", keys[0], keys[1], want)
	}
	if m := item552.FindStringSubmatch(want); m == nil || m[1] != name {
		t.Fatalf("5.5.2's item pattern does not match %s", want)
	}
	// A reference with its own name keeps it.
	items, err := ruleItems(paths.Layout553, config.Rule{Type: "sharding", Content: map[string]any{"bindingTables": []any{"ref_0:t_a,t_b", ref}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, it := range items {
		got[it.Name] = string(it.Value)
	}
	if w := map[string]string{"ref_0": "ref_0:t_a,t_b", name: name + ":" + ref}; !reflect.DeepEqual(got, w) {
		t.Fatalf("binding items %v, want %v", got, w)
	}
}

// TestBindingTablesBothForms loads a tree with the item an older
// shardkeeper wrote (binding_tables/t_order,t_order_item holding the bare
// reference) next to upstream's form, writes the loaded rule back in
// upstream's form, and drops items of both forms by name.
func TestBindingTablesBothForms(t *testing.T) {
	ctx := testenv.Context(t)
	const root = "/metadata/sharding_db/rules/sharding/binding_tables/"
	tree := releaseTree(t, paths.Layout553)
	tree[root+"t_a,t_b/versions/0"] = "t_a,t_b"
	tree[root+"t_a,t_b/active_version"] = "0"
	s := loadTree(t, tree)
	list, _ := s.Databases["sharding_db"].Rules["sharding"].Content["bindingTables"].([]any)
	named := sharding.BindingName("t_order,t_order_item") + ":t_order,t_order_item"
	if !reflect.DeepEqual(list, []any{named, "t_a,t_b"}) && !reflect.DeepEqual(list, []any{"t_a,t_b", named}) {
		t.Fatalf("bindingTables = %v", list)
	}
	repo := memory.New()
	db := config.Database{Name: "sharding_db", Rules: []config.Rule{s.Databases["sharding_db"].Rules["sharding"]}}
	if err := CreateDatabase(ctx, repo, paths.Layout553, db); err != nil {
		t.Fatal(err)
	}
	written := map[string]string{}
	for k, v := range dumpTree(t, repo) {
		if strings.HasPrefix(k, root) && strings.HasSuffix(k, "/versions/0") {
			written[k] = v
		}
	}
	want := map[string]string{
		root + sharding.BindingName("t_order,t_order_item") + "/versions/0": named,
		root + sharding.BindingName("t_a,t_b") + "/versions/0":              sharding.BindingName("t_a,t_b") + ":t_a,t_b",
	}
	if !reflect.DeepEqual(written, want) {
		t.Fatalf("written back as %v, want %v", written, want)
	}
	// Dropping an item of either form removes its reference.
	for _, name := range []string{"t_a,t_b", sharding.BindingName("t_order,t_order_item")} {
		content, err := applyRuleItem("sharding", map[string]any{"bindingTables": list}, "binding_tables", name, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if left, _ := content["bindingTables"].([]any); len(left) != 1 {
			t.Fatalf("after dropping %s: %v", name, content["bindingTables"])
		}
	}
}

// TestKeyGenerateStrategiesConvert checks the conversion between 5.5.3's
// per-table keyGenerateStrategy and 5.5.4's rule-level strategies, both
// ways, and what cannot be converted.
func TestKeyGenerateStrategiesConvert(t *testing.T) {
	perTable := map[string]any{"tables": map[string]any{"t_order": map[string]any{
		"actualDataNodes":     "ds_0.t_order",
		"keyGenerateStrategy": map[string]any{"column": "order_id", "keyGeneratorName": "snowflake"},
	}}}
	r554, err := upstreamRule(paths.Layout554, config.Rule{Type: "sharding", Content: perTable})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"t_order_order_id": map[string]any{"keyGenerateType": "column", "keyGeneratorName": "snowflake", "logicTable": "t_order", "keyGenerateColumn": "order_id"}}
	if got := r554.Content["keyGenerateStrategies"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("5.5.4 keyGenerateStrategies = %v", got)
	}
	if _, ok := r554.Content["tables"].(map[string]any)["t_order"].(map[string]any)["keyGenerateStrategy"]; ok {
		t.Fatal("the 5.5.4 table kept keyGenerateStrategy")
	}
	if _, ok := perTable["tables"].(map[string]any)["t_order"].(map[string]any)["keyGenerateStrategy"]; !ok {
		t.Fatal("the conversion changed its input")
	}
	// And back, for a 5.5.3 target (IMPORT of a 5.5.4 export).
	r553, err := upstreamRule(paths.Layout553, r554)
	if err != nil {
		t.Fatal(err)
	}
	if got := r553.Content["tables"].(map[string]any)["t_order"].(map[string]any)["keyGenerateStrategy"]; !reflect.DeepEqual(got, perTable["tables"].(map[string]any)["t_order"].(map[string]any)["keyGenerateStrategy"]) || r553.Content["keyGenerateStrategies"] != nil {
		t.Fatalf("5.5.3 rule = %v", r553.Content)
	}
	// A sequence strategy, or one for a table without a rule, has no place
	// in 5.5.3: refused before anything is written.
	for name, s := range map[string]map[string]any{
		"sequence": {"keyGenerateType": "sequence", "keyGeneratorName": "snowflake", "keyGenerateSequence": "seq_order"},
		"no_table": {"keyGenerateType": "column", "keyGeneratorName": "snowflake", "logicTable": "t_missing", "keyGenerateColumn": "id"},
	} {
		c := map[string]any{"keyGenerateStrategies": map[string]any{name: s}}
		if _, err := upstreamRule(paths.Layout553, config.Rule{Type: "sharding", Content: c}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
		repo := memory.New()
		err := CreateDatabase(testenv.Context(t), repo, paths.Layout553, config.Database{Name: "x_db", Rules: []config.Rule{{Type: "sharding", Content: c}}})
		if err == nil {
			t.Errorf("%s: CreateDatabase for 5.5.3 accepted it", name)
		}
		if kvs, _ := snapshotOf(testenv.Context(t), repo, paths.MetadataRoot+"/x_db/rules"); len(kvs) > 0 {
			t.Errorf("%s: rule items written: %v", name, kvs)
		}
	}
	// 5.5.4 has no sharding cache.
	c := map[string]any{"shardingCache": map[string]any{"allowedMaxSqlLength": 512}}
	items, err := ruleItems(paths.Layout554, config.Rule{Type: "sharding", Content: c})
	if err != nil || len(items) != 0 {
		t.Fatalf("5.5.4 items %v, %v", items, err)
	}
	items, err = ruleItems(paths.Layout553, config.Rule{Type: "sharding", Content: c})
	if err != nil || len(items) != 1 || items[0].Item != "sharding_cache" {
		t.Fatalf("5.5.3 items %v, %v", items, err)
	}
}

func TestLayout554DatabaseNames(t *testing.T) {
	ctx := testenv.Context(t)
	for name, ok := range map[string]bool{"sharding_db": true, "Db2": true, "2db": false, "my-db": false, "_db": false, "db.x": false} {
		err := paths.Layout554.CheckDatabaseName(name)
		if (err == nil) != ok {
			t.Errorf("CheckDatabaseName(%q) = %v", name, err)
		}
		if err := paths.Layout553.CheckDatabaseName(name); err != nil {
			t.Errorf("5.5.3 refuses %q: %v", name, err)
		}
		if ok {
			continue
		}
		repo := memory.New()
		if err := CreateDatabase(ctx, repo, paths.Layout554, config.Database{Name: name}); err == nil {
			t.Errorf("CreateDatabase(%q) for 5.5.4 accepted it", name)
		}
		if kvs, _ := snapshotOf(ctx, repo, paths.MetadataRoot); len(kvs) > 0 {
			t.Errorf("%q: written %v", name, kvs)
		}
	}
}

// TestRulesCarryUpstreamDefaults checks the fields upstream's swappers
// always write, rule by rule, beyond what the example conf has.
func TestRulesCarryUpstreamDefaults(t *testing.T) {
	for _, c := range []struct {
		typ      string
		in, want string
	}{
		{"readwrite_splitting", "dataSourceGroups: {rw: {writeDataSourceName: w, readDataSourceNames: [r]}}",
			"dataSourceGroups: {rw: {writeDataSourceName: w, readDataSourceNames: [r], transactionalReadQueryStrategy: PRIMARY}}"},
		{"encrypt", "tables: {t: {columns: {c: {cipher: {name: c_cipher, encryptorName: aes}}}}}",
			"tables: {t: {name: t, columns: {c: {name: c, cipher: {name: c_cipher, encryptorName: aes}}}}}"},
		{"mask", "tables: {t: {columns: {c: {maskAlgorithm: m}}}}",
			"tables: {t: {name: t, columns: {c: {logicColumn: c, maskAlgorithm: m}}}}"},
		{"sharding", "autoTables: {t: {actualDataSources: ds_0, shardingStrategy: {none: }, auditStrategy: {auditorNames: [a]}}}",
			"autoTables: {t: {logicTable: t, actualDataSources: ds_0, shardingStrategy: {none: ''}, auditStrategy: {auditorNames: [a], allowHintDisable: true}}}"},
		{"authority", "users: [{user: sharding, password: p}]",
			"users: [{user: sharding@%, password: p, admin: false}], privilege: {type: ALL_PERMITTED}"},
		{"sql_parser", "",
			"parseTreeCache: {initialCapacity: 128, maximumSize: 1024}, sqlStatementCache: {initialCapacity: 2000, maximumSize: 65535}"},
		{"sql_federation", "sqlFederationEnabled: true",
			"sqlFederationEnabled: true, allQueryUseSQLFederation: false, executionPlanCache: {initialCapacity: 2000, maximumSize: 65535}"},
		{"sql_translator", "type: NATIVE", "type: NATIVE, useOriginalSQLWhenTranslatingFailed: true"},
		{"global_clock", "type: TSO, provider: local", "type: TSO, provider: local, enabled: false"},
	} {
		var in, want map[string]any
		if err := yaml.Unmarshal([]byte("{"+c.in+"}"), &in); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal([]byte("{"+c.want+"}"), &want); err != nil {
			t.Fatal(err)
		}
		r := config.Rule{Type: c.typ, Content: in}
		var got map[string]any
		if config.IsGlobalRuleType(c.typ) {
			got = upstreamGlobalRule(r).Content
			if err := checkUpstreamLoads(paths.DefaultLayout, paths.Key{Kind: paths.KindGlobalRule, Name: c.typ}, encodeGlobalRule(r)); err != nil {
				t.Errorf("%s: %v", c.typ, err)
			}
		} else {
			up, err := upstreamRule(paths.DefaultLayout, r)
			if err != nil {
				t.Fatal(err)
			}
			got = up.Content
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", c.typ, got, want)
		}
	}
}

// TestAlterRuleItemLayout554 alters a table item that carries a
// keyGenerateStrategy for the 5.5.4 target: the table is written without
// it and the strategy as its rule-level item.
func TestAlterRuleItemLayout554(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	if err := CreateDatabase(ctx, repo, paths.Layout554, config.Database{Name: "db"}); err != nil {
		t.Fatal(err)
	}
	table := map[string]any{"actualDataNodes": "ds_0.t_x", "keyGenerateStrategy": map[string]any{"column": "id", "keyGeneratorName": "snowflake"}}
	if err := AlterRuleItem(ctx, repo, paths.Layout554, "db", "sharding", "tables", "t_x", table); err != nil {
		t.Fatal(err)
	}
	tree := dumpTree(t, repo)
	if v := tree["/metadata/db/rules/sharding/tables/t_x/versions/0"]; v != "actualDataNodes: ds_0.t_x\nlogicTable: t_x\n" {
		t.Fatalf("table item %q", v)
	}
	if v := tree["/metadata/db/rules/sharding/key_generate_strategies/t_x_id/versions/0"]; !strings.Contains(v, "keyGenerateColumn: id") {
		t.Fatalf("key generate strategy item %q", v)
	}
}
