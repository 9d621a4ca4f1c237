package rules

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rule/sharding"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

// TestCachedChangesAsRead: rule changes through a RuleCache (which, on
// etcd and memory, reads only what changed since its last read and
// follows its own commits) return the digest of the rules the registry
// holds after them, and read what a plain read reads, while another
// client adds, alters and drops tables between the changes and between a
// change's read and its commit (which the commit's conditions do not
// cover).
func TestCachedChangesAsRead(t *testing.T) {
	eachTwoClients(t, "cachedchanges", func(t *testing.T, repo, other registry.Repository, _ bool) {
		testCachedChanges(t, repo, other)
	})
}

// eachTwoClients runs test on the memory registry (repo and other the
// same) and on real etcd and ZooKeeper (two clients of one namespace
// prefixed ns); real tells them apart.
func eachTwoClients(t *testing.T, ns string, test func(t *testing.T, repo, other registry.Repository, real bool)) {
	t.Run("memory", func(t *testing.T) {
		repo := memory.New()
		test(t, repo, repo, false)
	})
	realtest.Each(t, ns, func(t *testing.T, open func(t testing.TB) registry.Repository) {
		test(t, open(t), open(t), true)
	})
}

// createScaleDatabase creates database db of unit ds_0 through repo and
// writes n sharding tables (t_scale_00000, ...) into it through other.
func createScaleDatabase(ctx context.Context, t *testing.T, repo, other registry.Repository, n int) {
	t.Helper()
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "db", DataSources: map[string]config.DataSource{
		"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", ""),
	}}); err != nil {
		t.Fatal(err)
	}
	if err := metadatatest.WriteShardingTables(ctx, other, "db", 0, n); err != nil {
		t.Fatal(err)
	}
}

// changeAsOther changes the sharding rule of db as another client would,
// through other: edit changes a copy of the rule's fields as read
// (config.CopyFields), and what differs is written (metadata.RuleWrites)
// and committed.
func changeAsOther(ctx context.Context, t *testing.T, other registry.Repository, edit func(content map[string]any)) {
	t.Helper()
	d, _, err := metadata.ReadDatabase(ctx, other, "db")
	if err != nil {
		t.Fatal(err)
	}
	old := d.Rules["sharding"]
	next := config.Rule{Type: "sharding", Content: config.CopyFields(old.Content)}
	edit(next.Content)
	conds, ops, err := metadata.RuleWrites(ctx, other, paths.DefaultLayout, "db", old, next)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dbconfig.CommitOne(ctx, other, nil, registry.Txn{Conds: conds, Ops: ops}); err != nil {
		t.Fatal(err)
	}
}

func testCachedChanges(t *testing.T, repo, other registry.Repository) {
	ctx := testenv.Context(t)
	createScaleDatabase(ctx, t, repo, other, 20)
	// foreign changes table name of the sharding rule as another node
	// would: add, alter (a new version, the old one deleted) or drop.
	foreign := func(op, name string) {
		t.Helper()
		changeAsOther(ctx, t, other, func(c map[string]any) {
			tables := c["tables"].(map[string]any)
			switch op {
			case "drop":
				delete(tables, name)
			default:
				t := maps.Clone(config.CloneContent(map[string]any{"t": tables["t_scale_00000"]})["t"].(map[string]any))
				t["actualDataNodes"] = "ds_0." + name + "_" + op
				tables[name] = t
			}
		})
	}
	cache := metadata.NewRuleCache()
	for step := range 12 {
		switch step % 4 {
		case 1:
			foreign("add", fmt.Sprintf("t_other_%d", step))
		case 2:
			foreign("alter", fmt.Sprintf("t_scale_%05d", step))
		case 3:
			foreign("drop", fmt.Sprintf("t_scale_%05d", step+1))
		}
		mine := fmt.Sprintf("t_mine_%d", step)
		w, err := ChangeRule(ctx, repo, "db", "sharding", func(_ metadata.RuleRead, c map[string]any, _ *rule.Edits) (map[string]any, error) {
			// Between this change's read and its commit another client
			// changes another table.
			if step%3 == 0 {
				foreign([]string{"add", "alter", "drop"}[step/3%3], fmt.Sprintf("t_scale_%05d", 10+step))
			}
			tables := c["tables"].(map[string]any)
			if step%2 == 1 {
				delete(tables, fmt.Sprintf("t_mine_%d", step-1))
			} else {
				tables[mine] = map[string]any{"actualDataNodes": "ds_0." + mine}
			}
			return c, nil
		}, ChangeOptions{Layout: paths.DefaultLayout, Cache: cache})
		if err != nil || !w.Changed {
			t.Fatalf("step %d: %+v %v", step, w, err)
		}
		want, wantKVs, err := metadata.ReadDatabase(ctx, repo, "db")
		if err != nil {
			t.Fatal(err)
		}
		if w.Digest != want.RulesDigest() {
			t.Fatalf("step %d: the change's digest %q, the registry's rules %q", step, w.Digest, want.RulesDigest())
		}
		got, gotKVs, err := cache.ReadDatabase(context.WithoutCancel(ctx), repo, "db")
		if err != nil {
			t.Fatal(err)
		}
		if got.RulesDigest() != want.RulesDigest() || len(gotKVs) != len(wantKVs) || fmt.Sprint(got.Rules) != fmt.Sprint(want.Rules) {
			t.Fatalf("step %d: the cache read %d keys, digest %q; a plain read %d keys, %q", step, len(gotKVs), got.RulesDigest(), len(wantKVs), want.RulesDigest())
		}
		for i := range gotKVs {
			if gotKVs[i].Key != wantKVs[i].Key || gotKVs[i].Version != wantKVs[i].Version || string(gotKVs[i].Value) != string(wantKVs[i].Value) {
				t.Fatalf("step %d: key %d: the cache read %+v, a plain read %+v", step, i, gotKVs[i], wantKVs[i])
			}
		}
		if r, err := cache.Read(ctx, repo, "db"); err != nil || r.ShardingNames() != sharding.TallyOf(want.Rules["sharding"].Content).Total() {
			t.Fatalf("step %d: the cache counts %d names of the sharding rule, a plain read %d (%v)", step, r.ShardingNames(), sharding.TallyOf(want.Rules["sharding"].Content).Total(), err)
		}
	}
}

// TestCachedCountsOfMixedCase: through a RuleCache, CREATE, ALTER and
// DROP of tables of mixed case and of a non-ASCII name keep the count of
// table names that are not plain (metadata.RuleRead.ShardingNotPlain,
// recounted table by table) equal to a fresh count of the rule, and the
// statements find tables in any case with it: "t_a" is "T_A", "K_X" is
// the Kelvin sign's "\u212a_x".
func TestCachedCountsOfMixedCase(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testCachedCountsOfMixedCase(t, memory.New()) })
	realtest.Each(t, "mixedcase", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		testCachedCountsOfMixedCase(t, open(t))
	})
}

func testCachedCountsOfMixedCase(t *testing.T, repo registry.Repository) {
	ctx := testenv.Context(t)
	createScaleDatabase(ctx, t, repo, repo, 5)
	opts := Options{Cache: metadata.NewRuleCache()}
	for _, step := range []struct {
		sql     string
		refused bool
	}{
		{"CREATE SHARDING TABLE RULE T_A (DATANODES('ds_0.t_a'))", false},
		{"CREATE SHARDING TABLE RULE t_a (DATANODES('ds_0.t_a'))", true},
		{"CREATE SHARDING TABLE RULE \u212a_x (DATANODES('ds_0.k_x'))", false},
		{"CREATE SHARDING TABLE RULE K_X (DATANODES('ds_0.k_x'))", true},
		{"CREATE SHARDING TABLE RULE t_plain (DATANODES('ds_0.t_plain'))", false},
		{"CREATE SHARDING TABLE RULE T_PLAIN (DATANODES('ds_0.t_plain'))", true},
		{"ALTER SHARDING TABLE RULE t_a (DATANODES('ds_0.t_a'))", false}, // T_A now t_a
		{"CREATE SHARDING TABLE RULE T_a (DATANODES('ds_0.t_a'))", true},
		{"ALTER SHARDING TABLE RULE T_PLAIN (DATANODES('ds_0.t_plain'))", false}, // t_plain now T_PLAIN
		{"DROP SHARDING TABLE RULE k_x, t_plain", false},
		{"CREATE SHARDING TABLE RULE k_x (DATANODES('ds_0.k_x'))", false},
		{"CREATE SHARDING TABLE RULE T_A (DATANODES('ds_0.t_a'))", true}, // every name plain again: found by lookup
		{"CREATE SHARDING TABLE RULE K_X (DATANODES('ds_0.k_x'))", true},
	} {
		st, err := families.Parse(step.sql)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Apply(ctx, repo, "db", st, opts)
		if step.refused && (err == nil || !strings.Contains(err.Error(), "Duplicate")) || !step.refused && err != nil {
			t.Fatalf("%s: %v, want a duplicate refused: %v", step.sql, err, step.refused)
		}
		read, err := opts.Cache.Read(ctx, repo, "db")
		if err != nil {
			t.Fatal(err)
		}
		got, want := read.ShardingNotPlain(), sharding.TallyOf(read.DB.Rules["sharding"].Content).NotPlain()
		if !maps.Equal(got, want) {
			t.Fatalf("after %s: counted %v, a fresh count %v", step.sql, got, want)
		}
	}
}

// TestCachedUsesFollowChanges: through a RuleCache, the count of the
// sharding rule's references by name (metadata.RuleRead.ShardingUses,
// recounted entry by entry as the cache follows the rule) stays equal to
// a fresh count while statements and another client add, alter and drop
// tables that share an algorithm and a key generator; and the statements
// decide by it: a table dropped leaves the algorithm and key generator
// another client's table still names, DROP SHARDING ALGORITHM refuses it
// while that table names it and drops it once that table is gone.
func TestCachedUsesFollowChanges(t *testing.T) {
	eachTwoClients(t, "cacheduses", func(t *testing.T, repo, other registry.Repository, _ bool) {
		testCachedUses(t, repo, other)
	})
}

func testCachedUses(t *testing.T, repo, other registry.Repository) {
	ctx := testenv.Context(t)
	createScaleDatabase(ctx, t, repo, other, 5)
	// foreign puts (or, with nil, drops) table name as another client
	// would (with the key generate strategies of the table dropped).
	foreign := func(name string, table map[string]any) {
		t.Helper()
		changeAsOther(ctx, t, other, func(c map[string]any) {
			if table != nil {
				c["tables"].(map[string]any)[name] = table
				return
			}
			delete(c["tables"].(map[string]any), name)
			strategies, _ := c["keyGenerateStrategies"].(map[string]any)
			for k, s := range strategies {
				if s.(map[string]any)["logicTable"] == name {
					delete(strategies, k)
				}
			}
		})
	}
	shared := map[string]any{"actualDataNodes": "ds_0.t_shared",
		"tableStrategy":       map[string]any{"standard": map[string]any{"shardingColumn": "id", "shardingAlgorithmName": "t_a_table_inline"}},
		"keyGenerateStrategy": map[string]any{"column": "id", "keyGeneratorName": "t_a_snowflake"}}
	const createA = "CREATE SHARDING TABLE RULE t_a (DATANODES('ds_0.t_a_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='t_a_${id % 2}')))), KEY_GENERATE_STRATEGY(COLUMN=id, TYPE(NAME='snowflake')))"
	opts := Options{Cache: metadata.NewRuleCache()}
	for _, step := range []struct {
		sql      string // "" : the other client's change
		foreign  func()
		refused  string // in the error, "" when it succeeds
		alg, gen bool   // t_a_table_inline and t_a_snowflake are defined after it
	}{
		{sql: createA, alg: true, gen: true},
		{foreign: func() { foreign("t_shared", shared) }, alg: true, gen: true},
		{sql: "DROP SHARDING TABLE RULE t_a", alg: true, gen: true}, // t_shared names them
		{sql: "DROP SHARDING ALGORITHM t_a_table_inline", refused: "in used", alg: true, gen: true},
		{sql: createA, alg: true, gen: true},
		{sql: "ALTER SHARDING TABLE RULE t_a (DATANODES('ds_0.t_a_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=uid, SHARDING_ALGORITHM(TYPE(NAME='mod', PROPERTIES('sharding-count'=2)))))", alg: true, gen: true},
		{foreign: func() { foreign("t_shared", nil) }, alg: true, gen: true},
		{sql: "DROP SHARDING ALGORITHM t_a_table_inline", gen: true},
		{sql: "DROP SHARDING KEY GENERATOR t_a_snowflake"},
		{sql: "DROP SHARDING TABLE RULE t_a"},
		{sql: createA, alg: true, gen: true},
		{sql: "DROP SHARDING TABLE RULE t_a"}, // nothing else names them
	} {
		what := step.sql
		if step.foreign != nil {
			what = "the other client's change"
			step.foreign()
		} else {
			st, err := families.Parse(step.sql)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Apply(ctx, repo, "db", st, opts)
			if step.refused == "" && err != nil || step.refused != "" && (err == nil || !strings.Contains(err.Error(), step.refused)) {
				t.Fatalf("%s: %v, want refused %q", what, err, step.refused)
			}
		}
		read, err := opts.Cache.Read(ctx, repo, "db")
		if err != nil {
			t.Fatal(err)
		}
		content := read.DB.Rules["sharding"].Content
		algorithms, _ := content["shardingAlgorithms"].(map[string]any)
		generators, _ := content["keyGenerators"].(map[string]any)
		_, alg := algorithms["t_a_table_inline"]
		_, gen := generators["t_a_snowflake"]
		if alg != step.alg || gen != step.gen {
			t.Fatalf("after %s: t_a_table_inline defined %v, t_a_snowflake %v; want %v, %v", what, alg, gen, step.alg, step.gen)
		}
		fresh := sharding.TallyOf(content)
		for _, section := range []string{"shardingAlgorithms", "keyGenerators", "auditors"} {
			for _, name := range []string{"t_a_table_inline", "t_a_table_mod", "t_a_snowflake", "scale_mod", "nothing"} {
				if got, want := read.ShardingUses()(section, name), fresh.Uses(section, name); got != want {
					t.Fatalf("after %s: the cache counts %d uses of %s %s, a fresh count %d", what, got, section, name, want)
				}
			}
		}
	}
}
