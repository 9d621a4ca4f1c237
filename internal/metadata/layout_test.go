package metadata

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
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

var update = flag.Bool("update", false, "rewrite the golden registry trees under testdata/registry")

const registryDir = "../../testdata/registry"

// readTree reads a registry tree file: a YAML mapping of key to value.
func readTree(t *testing.T, name string) map[string]string {
	t.Helper()
	var tree map[string]string
	if err := yaml.Unmarshal(readFile(t, filepath.Join(registryDir, name)), &tree); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tree
}

// encodeTree writes a tree in readTree's format, keys sorted.
func encodeTree(header string, tree map[string]string) []byte {
	keys := sortedKeys(tree)
	var b bytes.Buffer
	b.WriteString(header)
	for _, k := range keys {
		node := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Value: k},
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: tree[k]},
		}}
		if strings.Contains(tree[k], "\n") {
			node.Content[1].Style = yaml.LiteralStyle
		}
		b.Write(marshal(node))
	}
	return b.Bytes()
}

// dumpTree returns every key a node persisted under /metadata, /rules and
// /props.
func dumpTree(t *testing.T, repo registry.Repository) map[string]string {
	t.Helper()
	tree := map[string]string{}
	for _, prefix := range []string{paths.MetadataRoot, paths.GlobalRulesRoot, paths.PropsRoot} {
		kvs, err := snapshotOf(testenv.Context(t), repo, prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			tree[kv.Key] = string(kv.Value)
		}
	}
	return tree
}

// loadTree writes tree to a fresh registry and loads a Store from it.
func loadTree(t *testing.T, tree map[string]string) *Snapshot {
	t.Helper()
	repo := memory.New()
	for k, v := range tree {
		if _, err := repo.Put(testenv.Context(t), k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Load(testenv.Context(t), repo, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Problems(); len(p) > 0 {
		t.Fatalf("problems loading the tree: %v", p)
	}
	return s.Current()
}

// model is what a snapshot says about databases, global rules and props,
// with what the releases and shardkeeper write differently but mean alike
// made equal: upstream always writes primitive fields (false booleans, a
// table rule's logicTable, which its reader sets from the item name anyway,
// readOnly: false); a column's type name is only shardkeeper's; 5.5.4's
// rule-level key generate strategies are folded back into their tables
// and node names compared in lower case (5.5.4 keeps their case).
func model(t *testing.T, s *Snapshot) any {
	t.Helper()
	dbs := map[string]any{}
	for name, db := range s.Databases {
		units := map[string]any{}
		for u, ds := range db.Units {
			units[u] = ds.Map()
		}
		rules := map[string]any{}
		for typ, r := range db.Rules {
			r, err := upstreamRule(paths.Layout553, r)
			if err != nil {
				t.Fatal(err)
			}
			rules[typ] = r.Content
		}
		schemas := map[string]any{}
		for sn, sc := range db.Schemas {
			tables := map[string]datasource.Table{}
			for tn, tb := range sc.Tables {
				tb.Columns = append([]datasource.Column(nil), tb.Columns...)
				for i := range tb.Columns {
					tb.Columns[i].TypeName = ""
				}
				tables[strings.ToLower(tn)] = tb
			}
			views := map[string]datasource.View{}
			for vn, v := range sc.Views {
				views[strings.ToLower(vn)] = v
			}
			schemas[strings.ToLower(sn)] = map[string]any{"tables": tables, "views": views}
		}
		dbs[name] = map[string]any{"units": normaliseModel(t, units), "rules": normaliseModel(t, rules), "schemas": schemas}
	}
	global := map[string]any{}
	for typ, r := range s.GlobalRules {
		global[typ] = r.Content
	}
	return map[string]any{"databases": dbs, "global": normaliseModel(t, global), "props": s.Props}
}

// normaliseModel decodes v through YAML and drops false, null and empty
// values and logicTable.
func normaliseModel(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := yaml.Unmarshal(marshal(v), &out); err != nil {
		t.Fatal(err)
	}
	var drop func(any) any
	drop = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			m := map[string]any{}
			for k, e := range x {
				e = drop(e)
				if e == nil || e == false || k == "logicTable" {
					continue
				}
				if em, ok := e.(map[string]any); ok && len(em) == 0 {
					continue
				}
				m[k] = e
			}
			return m
		case []any:
			l := make([]any, len(x))
			for i, e := range x {
				l[i] = drop(e)
			}
			return l
		}
		return v
	}
	return drop(out)
}

// layoutIntrospect is fakeIntrospect with a view named in mixed case,
// whose node each layout names differently.
func layoutIntrospect(ctx context.Context, db config.Database) ([]datasource.Schema, error) {
	s, err := fakeIntrospect(ctx, db)
	if err == nil && len(s) > 0 {
		s[0].Views["V_Order"] = datasource.View{Name: "V_Order", Definition: "select order_id from t_order"}
	}
	return s, err
}

// releaseTree is the fixture of what upstream's release of layout writes.
func releaseTree(t *testing.T, layout paths.Layout) map[string]string {
	return readTree(t, "shardingsphere-"+layout.String()+".yaml")
}

func TestReleaseTreesLoadIntoOneModel(t *testing.T) {
	trees := map[paths.Layout]map[string]string{}
	for _, layout := range paths.Layouts {
		trees[layout] = releaseTree(t, layout)
		// The fixtures themselves load into the mirrors of their release's
		// classes.
		for key, v := range trees[layout] {
			if k, ok := paths.ParseKey(key); ok && k.Leaf == paths.VersionsName {
				if err := checkUpstreamLoads(layout, k, []byte(v)); err != nil {
					t.Errorf("fixture %s %s: %v", layout, key, err)
				}
			}
		}
	}
	s553 := loadTree(t, trees[paths.Layout553])
	for _, layout := range paths.Layouts {
		s := loadTree(t, trees[layout])
		if m, m3 := model(t, s), model(t, s553); !reflect.DeepEqual(m, m3) {
			t.Fatalf("%s and 5.5.3 trees load differently:\n%v\n%v", layout, m, m3)
		}
		// The defaults are where the example config has them.
		c := s.Databases["sharding_db"].Rules["sharding"].Content
		if c["defaultDatabaseStrategy"] == nil || c["defaultAuditStrategy"] == nil || c["defaultStrategies"] != nil {
			t.Fatalf("%s: sharding rule = %v", layout, c)
		}
		// The key generate strategies are where the release has them.
		_, rule := c["keyGenerateStrategies"].(map[string]any)
		_, table := c["tables"].(map[string]any)["t_order"].(map[string]any)["keyGenerateStrategy"]
		if want := layout == paths.Layout554; rule != want || table == want {
			t.Fatalf("%s: keyGenerateStrategies %v, t_order's keyGenerateStrategy %v", layout, rule, table)
		}
		if _, ok := s.Table("sharding_db", "sharding_db", "T_DS_0"); !ok {
			t.Fatalf("%s: t_ds_0 not found by its name in upper case", layout)
		}
	}
	// And the whole model is the example config's.
	repo := memory.New()
	store, _ := bootOn(t, repo, exampleConfig(t), layoutIntrospect)
	if got, want := model(t, store.Current()), model(t, s553); !reflect.DeepEqual(got, want) {
		t.Fatalf("the example config loads differently from the 5.5.3 tree:\n%v\n%v", got, want)
	}
}

func TestNodeWritesEachReleasesTree(t *testing.T) {
	for _, layout := range paths.Layouts {
		t.Run(layout.String(), func(t *testing.T) {
			cfg := exampleConfig(t)
			cfg.Mode.Repository.Layout = layout
			repo := memory.New()
			bootOn(t, repo, cfg, layoutIntrospect)
			got := dumpTree(t, repo)
			golden := "golden-" + layout.String() + ".yaml"
			header := "# What a shardkeeper node writes for target release " + layout.String() + " (mode props\n" +
				"# layoutVersion) from upstream's example conf; regenerate with go test ./internal/metadata -run\n" +
				"# TestNodeWritesEachReleasesTree -update. It matches shardingsphere-" + layout.String() + ".yaml key for key.\n"
			if *update {
				if err := os.WriteFile(filepath.Join(registryDir, golden), encodeTree(header, got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := readTree(t, golden); !reflect.DeepEqual(got, want) {
				t.Fatalf("the node's tree differs from %s (run with -update after checking the change)", golden)
			}
			upstream := releaseTree(t, layout)
			if g, u := sortedKeys(got), sortedKeys(upstream); !reflect.DeepEqual(g, u) {
				t.Fatalf("keys differ from upstream's tree:\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(u, "\n"))
			}
			if g, u := model(t, loadTree(t, got)), model(t, loadTree(t, upstream)); !reflect.DeepEqual(g, u) {
				t.Fatalf("values differ from upstream's tree:\n%v\n%v", g, u)
			}
			// Value for value, every field upstream writes is written, its
			// defaults included; only a unit's readOnly: false, which
			// upstream adds from the pool's defaults, is left out.
			for _, key := range sortedKeys(got) {
				var g, u any
				if err := yaml.Unmarshal([]byte(got[key]), &g); err != nil {
					t.Fatal(err)
				}
				if err := yaml.Unmarshal([]byte(upstream[key]), &u); err != nil {
					t.Fatal(err)
				}
				if m, ok := u.(map[string]any); ok && strings.Contains(key, "/data_sources/units/") && m["readOnly"] == false {
					delete(m, "readOnly")
				}
				if !reflect.DeepEqual(g, u) {
					t.Errorf("%s:\n%s\nupstream writes\n%s", key, got[key], upstream[key])
				}
			}
		})
	}
}

// TestWritersWriteEachReleasesTree writes the example conf through the
// writers the API, the CLI and the DistSQL front ends use (PersistGlobal,
// CreateDatabase, PersistSchemas) for each target release: the tree is the
// one Bootstrap writes (the same golden file), so every writer places
// items as the target release does.
func TestWritersWriteEachReleasesTree(t *testing.T) {
	for _, layout := range paths.Layouts {
		t.Run(layout.String(), func(t *testing.T) {
			ctx := testenv.Context(t)
			cfg := exampleConfig(t)
			repo := memory.New()
			if err := PersistGlobal(ctx, repo, cfg.GlobalRules, cfg.Props); err != nil {
				t.Fatal(err)
			}
			for _, db := range cfg.Databases {
				if err := CreateDatabase(ctx, repo, layout, db); err != nil {
					t.Fatal(err)
				}
				schemas, _ := layoutIntrospect(ctx, db)
				if err := PersistSchemas(ctx, repo, layout, db.Name, schemas); err != nil {
					t.Fatal(err)
				}
			}
			golden := "golden-" + layout.String() + ".yaml"
			if got, want := dumpTree(t, repo), readTree(t, golden); !reflect.DeepEqual(got, want) {
				for _, k := range sortedKeys(want) {
					if got[k] != want[k] {
						t.Errorf("%s = %q, want %q", k, got[k], want[k])
					}
				}
				for _, k := range sortedKeys(got) {
					if _, ok := want[k]; !ok {
						t.Errorf("%s written, not in %s", k, golden)
					}
				}
			}
			// A default altered later goes to the target's place too.
			strategy := map[string]any{"none": map[string]any{}}
			if err := AlterRuleItem(ctx, repo, layout, "sharding_db", "sharding", "default_table_strategy", "", strategy); err != nil {
				t.Fatal(err)
			}
			want, _ := layout.RuleItem("sharding_db", "sharding", "default_table_strategy", "")
			all, _ := paths.RuleItemPlacements("sharding_db", "sharding", "default_table_strategy", "")
			for _, node := range all {
				_, err := repo.Get(ctx, paths.ActiveVersion(node))
				if (node == want) != (err == nil) {
					t.Errorf("%s: %v (the %s target writes %s)", node, err, layout, want)
				}
			}
		})
	}
}

// TestDefaultsMoveBetweenLayouts checks that an item written in one
// layout's place is read, and that writing it in the other's place leaves
// one copy.
func TestDefaultsMoveBetweenLayouts(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	for k, v := range readTree(t, "shardingsphere-5.5.2.yaml") {
		if _, err := repo.Put(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	strategy := map[string]any{"standard": map[string]any{"shardingColumn": "order_id", "shardingAlgorithmName": "t_order_inline"}}
	if err := AlterRuleItem(ctx, repo, paths.Layout553, "sharding_db", "sharding", "default_database_strategy", "", strategy); err != nil {
		t.Fatal(err)
	}
	old := "/metadata/sharding_db/rules/sharding/default_strategies/default_database_strategy/active_version"
	if _, err := repo.Get(ctx, old); err == nil {
		t.Fatalf("%s is still there", old)
	}
	s, err := Load(ctx, repo, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	c := s.Current().Databases["sharding_db"].Rules["sharding"].Content
	if got := normaliseModel(t, c["defaultDatabaseStrategy"]); !reflect.DeepEqual(got, normaliseModel(t, strategy)) {
		t.Fatalf("defaultDatabaseStrategy = %v", got)
	}
	if c["defaultAuditStrategy"] == nil {
		t.Fatal("the 5.5.2 default audit strategy was lost")
	}
	if err := DropRuleItem(ctx, repo, "sharding_db", "sharding", "default_audit_strategy", ""); err != nil {
		t.Fatal(err)
	}
	keys := sortedKeys(dumpTree(t, repo))
	sort.Strings(keys)
	for _, k := range keys {
		if strings.Contains(k, "default_audit_strategy") {
			t.Fatalf("%s survived DropRuleItem", k)
		}
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestUnknownFieldsRoundTrip loads a 5.5.3 tree in which a rule item and a
// global rule carry fields this node does not know (an int, a list, a map),
// writes the loaded database and global rule back (as EXPORT then IMPORT,
// or ALTER, do) and checks that every value keeps its YAML type.
func TestUnknownFieldsRoundTrip(t *testing.T) {
	ctx := testenv.Context(t)
	tree := readTree(t, "shardingsphere-5.5.3.yaml")
	const item = "/metadata/sharding_db/rules/sharding/tables/t_order/versions/0"
	const global = "/rules/sql_federation/versions/0"
	extra := "futureLimit: 3\nfutureList:\n- a\n- 2\nfutureMap:\n  k: true\n"
	tree[item] += extra
	tree[global] += extra
	s := loadTree(t, tree)

	repo := memory.New()
	db := s.Databases["sharding_db"]
	cfg := config.Database{Name: "sharding_db", DataSources: db.Units}
	for _, typ := range sortedKeys(db.Rules) {
		cfg.Rules = append(cfg.Rules, db.Rules[typ])
	}
	if err := CreateDatabase(ctx, repo, paths.Layout553, cfg); err != nil {
		t.Fatal(err)
	}
	if err := AlterGlobalRule(ctx, repo, s.GlobalRules["sql_federation"]); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{item, global} {
		var got, want map[string]any
		if err := yaml.Unmarshal([]byte(get(t, repo, key)), &got); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal([]byte(tree[key]), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got["futureLimit"], 3) || !reflect.DeepEqual(got["futureList"], []any{"a", 2}) ||
			!reflect.DeepEqual(got["futureMap"], map[string]any{"k": true}) {
			t.Fatalf("%s written back:\n%s", key, get(t, repo, key))
		}
		if g, w := normaliseModel(t, got), normaliseModel(t, want); !reflect.DeepEqual(g, w) {
			t.Fatalf("%s written back as %v, want %v", key, g, w)
		}
	}
}
