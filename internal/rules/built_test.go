package rules

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// TestBuiltChangesAsRead: random changes of the sharding rule through a
// RuleCache, whose commit the cache applies to the change's own field
// maps (metadata.Built) where it can, leave the cache with the very rules
// and digest a plain read of the registry decodes, leave the rules read
// (shared with other readers) untouched, and do take that path: changes
// that add, replace (also by an equal but new value, or one whose decoded
// form differs) and delete tables and algorithms and set plain fields,
// some replacing a whole field map, some with another client's change
// between the read and the commit.
func TestBuiltChangesAsRead(t *testing.T) {
	eachTwoClients(t, "builtchanges", func(t *testing.T, repo, other registry.Repository, real bool) {
		steps := 60
		if real {
			steps = 25
		}
		testBuiltChanges(t, repo, other, steps)
	})
}

func testBuiltChanges(t *testing.T, repo, other registry.Repository, steps int) {
	ctx := testenv.Context(t)
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "db", DataSources: map[string]config.DataSource{
		"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", ""),
		"ds_1": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_1", "root", ""),
	}}); err != nil {
		t.Fatal(err)
	}
	if err := metadatatest.WriteShardingTables(ctx, other, "db", 0, 30); err != nil {
		t.Fatal(err)
	}
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	table := func(name string) map[string]any {
		return map[string]any{
			"actualDataNodes": "ds_${0..1}." + name + "_${0..1}",
			"tableStrategy":   map[string]any{"standard": map[string]any{"shardingColumn": "order_id", "shardingAlgorithmName": "scale_mod"}},
		}
	}
	someTable := func(tables map[string]any) string {
		for name := range tables {
			return name
		}
		return ""
	}
	// change makes a few random changes of c.
	change := func(c map[string]any) {
		tables := rule.Section(c, "tables")
		algs := rule.Section(c, "shardingAlgorithms")
		for range 1 + rng.IntN(3) {
			switch rng.IntN(9) {
			case 0, 1:
				name := fmt.Sprintf("t_new_%d", rng.IntN(1000))
				tables[name] = table(name)
			case 2:
				if name := someTable(tables); name != "" {
					tables[name] = table(name) // equal to what it was, but new
				}
			case 3:
				if name := someTable(tables); name != "" {
					t := table(name)
					t["actualDataNodes"] = "ds_0." + name
					tables[name] = t
				}
			case 4:
				if len(tables) > 1 {
					delete(tables, someTable(tables))
				}
			case 5: // decoded as the string "4"? as 4: whatever the registry gives back
				algs[fmt.Sprintf("mod_%d", rng.IntN(5))] = map[string]any{"type": "MOD", "props": map[string]any{"sharding-count": rng.IntN(4) + 1}}
			case 6:
				if len(algs) > 1 {
					for name := range algs {
						if name != "scale_mod" {
							delete(algs, name)
							break
						}
					}
				}
			case 7:
				c["defaultShardingColumn"] = fmt.Sprintf("col_%d", rng.IntN(3))
			case 8:
				c["tables"] = config.CloneContent(tables) // a field map of its own: not the copy's
				tables = c["tables"].(map[string]any)
			}
		}
	}
	foreign := func() {
		d, _, err := metadata.ReadDatabase(ctx, other, "db")
		if err != nil {
			t.Fatal(err)
		}
		old := d.Rules["sharding"]
		next := config.Rule{Type: "sharding", Content: config.CopyFields(old.Content)}
		tables := next.Content["tables"].(map[string]any)
		name := fmt.Sprintf("t_other_%d", rng.IntN(50))
		if _, ok := tables[name]; ok {
			delete(tables, name)
		} else {
			tables[name] = table(name)
		}
		conds, ops, err := metadata.RuleWrites(ctx, other, paths.DefaultLayout, "db", old, next)
		if err != nil {
			t.Fatal(err)
		}
		if err := metadatatest.Commit(ctx, other, conds, ops); err != nil {
			t.Fatal(err)
		}
	}
	cache := metadata.NewRuleCache()
	kept := 0
	for step := range steps {
		var readDB *metadata.Database
		var readContent map[string]any // a deep copy of the rule read
		var built map[string]any       // the tables map the change returned
		w, err := ChangeRule(ctx, repo, "db", "sharding", func(read metadata.RuleRead, c map[string]any, _ *rule.Edits) (map[string]any, error) {
			readDB = read.DB
			readContent = config.CloneContent(read.DB.Rules["sharding"].Content)
			if rng.IntN(4) == 0 {
				foreign()
			}
			change(c)
			built = rule.Map(c["tables"])
			return c, nil
		}, ChangeOptions{Layout: paths.DefaultLayout, Cache: cache})
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if !reflect.DeepEqual(readDB.Rules["sharding"].Content, readContent) {
			t.Fatalf("step %d: the rule read was modified", step)
		}
		want, _, err := metadata.ReadDatabase(ctx, repo, "db")
		if err != nil {
			t.Fatal(err)
		}
		if w.Changed && w.Digest != want.RulesDigest() {
			t.Fatalf("step %d: the change's digest %q, the registry's rules %q", step, w.Digest, want.RulesDigest())
		}
		got, err := cache.Read(context.WithoutCancel(ctx), repo, "db")
		if err != nil {
			t.Fatal(err)
		}
		if got.DB.RulesDigest() != want.RulesDigest() || !reflect.DeepEqual(got.DB.Rules, want.Rules) {
			t.Fatalf("step %d: the cache holds %v, a plain read %v", step, got.DB.Rules, want.Rules)
		}
		if w.Changed && rule.Same(got.DB.Rules["sharding"].Content["tables"], built) {
			kept++
		}
	}
	if kept < steps/3 {
		t.Fatalf("the cache applied %d of %d changes to the change's own tables map", kept, steps)
	}
}
