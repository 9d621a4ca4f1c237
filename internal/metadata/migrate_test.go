package metadata

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// canonicalRules is every database's rules as rules (by database, then
// type), in one form whatever layout they were read from: as the 5.5.3
// release writes them.
func canonicalRules(t *testing.T, dbs map[string]*Database) map[string]map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]map[string]any{}
	for name, d := range dbs {
		out[name] = map[string]map[string]any{}
		for typ, r := range d.Rules {
			w, err := RuleAsWritten(paths.Layout553, r)
			if err != nil {
				t.Fatalf("database %s rule %s: %v", name, typ, err)
			}
			out[name][typ] = w.Content
		}
	}
	return out
}

// registryDatabases reads every database of repo as a node would.
func registryDatabases(ctx context.Context, t *testing.T, repo registry.Repository) (map[string]*Database, map[string][]byte) {
	t.Helper()
	names, err := repo.Children(ctx, paths.MetadataRoot)
	if err != nil {
		t.Fatal(err)
	}
	dbs, values := map[string]*Database{}, map[string][]byte{}
	for _, name := range names {
		d, kvs, err := ReadDatabase(ctx, repo, name)
		if err != nil {
			t.Fatal(err)
		}
		dbs[name] = d
		for k, v := range activeValues(kvs) {
			values[k] = v
		}
	}
	return dbs, values
}

// TestMigrateRoundTrip, on real etcd and ZooKeeper: the example tree,
// bootstrapped in the 5.5.3 layout, migrates to 5.5.4, then 5.5.2, then
// back to 5.5.3, while a node follows the registry and another issues
// keys. After each step the tree is wholly in the target's layout (and a
// second migration has nothing to do), holds the same configuration, and
// every value loads with SnakeYAML into the mirrors of the target
// release's classes; the node following it holds that configuration too.
// Back in 5.5.3, every rule item holds what it held at first.
func TestMigrateRoundTrip(t *testing.T) {
	for _, b := range realBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := testenv.Context(t)
			repo := b.open(t)
			bootOn(t, repo, exampleConfig(t), fakeIntrospect)
			follower, _ := bootOn(t, another(t, repo), &config.Config{}, nil)
			runStore(t, follower)

			node, err := cluster.Open(ctx, another(t, repo), cluster.Config{InstanceID: "migrating-keys", Reservation: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer node.Close(context.WithoutCancel(ctx))
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var keys int
			var keyErr error
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := node.NextID(ctx); err != nil {
						keyErr = err
						return
					}
					keys++
				}
			})

			first, firstValues := registryDatabases(ctx, t, repo)
			want := canonicalRules(t, first)
			if tree, err := TreeLayouts(ctx, repo); err != nil || len(tree) != 1 || tree[0] != paths.Layout553 {
				t.Fatalf("the bootstrapped tree's layouts: %v %v, want 5.5.3", tree, err)
			}
			for _, to := range []paths.Layout{paths.Layout554, paths.Layout552, paths.Layout553} {
				plan, done, err := MigrateTree(ctx, repo, to, false)
				if err != nil {
					t.Fatalf("migrate to %s: %v", to, err)
				}
				steps := 0
				for _, m := range plan {
					steps += len(m.Steps)
				}
				if steps == 0 || len(done) == 0 {
					t.Fatalf("migrate to %s changed nothing: %+v", to, plan)
				}
				t.Logf("to %s: %d keys added, changed or removed in %v", to, steps, done)
				if tree, err := TreeLayouts(ctx, repo); err != nil || len(tree) != 1 || tree[0] != to {
					t.Fatalf("after the migration to %s the tree is in %v %v", to, tree, err)
				}
				again, err := PlanMigration(ctx, repo, to)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range again {
					if len(m.Steps) > 0 {
						t.Fatalf("a second migration to %s would still write %+v", to, m.Steps)
					}
				}
				dbs, _ := registryDatabases(ctx, t, repo)
				if got := canonicalRules(t, dbs); !reflect.DeepEqual(got, want) {
					t.Fatalf("after the migration to %s the rules are\n%v\nwant\n%v", to, got, want)
				}
				failures, err := loadWithSnakeYAML(t, to, persistedValues(t, repo))
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range failures {
					t.Errorf("%s: %s", to, f)
				}
				wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				_, err = follower.Wait(wctx, func(s *Snapshot) bool {
					return reflect.DeepEqual(canonicalRules(t, s.Databases), want)
				})
				cancel()
				if err != nil {
					t.Fatalf("the following node's rules after the migration to %s: %v\n%v\nwant\n%v", to, err, canonicalRules(t, follower.Current().Databases), want)
				}
			}
			if _, values := registryDatabases(ctx, t, repo); !reflect.DeepEqual(values, firstValues) {
				t.Fatalf("after the round trip the rule items hold\n%q\nwant\n%q", values, firstValues)
			}
			close(stop)
			wg.Wait()
			if keyErr != nil || keys == 0 {
				t.Fatalf("the node issued %d keys during the migrations, then: %v", keys, keyErr)
			}
		})
	}
}

// TestMigrateRefusesLoss, on real etcd and ZooKeeper: a sharding cache,
// which 5.5.4 cannot hold, and an item no release writes for the rule as
// read fail the migration before anything is written, naming them.
func TestMigrateRefusesLoss(t *testing.T) {
	for _, b := range realBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := testenv.Context(t)
			repo := b.open(t)
			cached := config.Rule{Type: "sharding", Content: map[string]any{
				"tables":        map[string]any{"t": map[string]any{"actualDataNodes": "ds_0.t"}},
				"shardingCache": map[string]any{"allowedMaxSqlLength": 100}}}
			kvs, err := DatabaseWrites(paths.Layout553, config.Database{Name: "db", Rules: []config.Rule{cached}})
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range kvs {
				if _, err := repo.Put(ctx, kv.Key, kv.Value); err != nil {
					t.Fatal(err)
				}
			}
			_, cachedValues := registryDatabases(ctx, t, repo)
			_, _, err = MigrateTree(ctx, repo, paths.Layout554, false)
			var me *MigrationError
			if !errors.As(err, &me) || !strings.Contains(err.Error(), "shardingCache") || !strings.Contains(err.Error(), "5.5.4") {
				t.Fatalf("migrating a sharding cache to 5.5.4: %v, want a refusal naming it", err)
			}
			if _, after := registryDatabases(ctx, t, repo); !reflect.DeepEqual(after, cachedValues) {
				t.Fatal("the refused migration to 5.5.4 changed the registry")
			}
			// An item that does not decode: no release writes it.
			odd, _ := paths.RuleItem("db", "sharding", "tables", "t")
			if _, err := repo.Put(ctx, paths.Version(odd, 1), []byte("actualDataNodes: [ds_0.t\n")); err != nil {
				t.Fatal(err)
			}
			if _, err := repo.Put(ctx, paths.ActiveVersion(odd), []byte("1")); err != nil {
				t.Fatal(err)
			}
			before, beforeValues := registryDatabases(ctx, t, repo)
			_, _, err = MigrateTree(ctx, repo, paths.Layout552, false)
			if !errors.As(err, &me) || !strings.Contains(err.Error(), odd) {
				t.Fatalf("migrating a tree with an odd item: %v, want a refusal naming %s", err, odd)
			}
			if after, afterValues := registryDatabases(ctx, t, repo); !reflect.DeepEqual(afterValues, beforeValues) || len(after) != len(before) {
				t.Fatal("a refused migration changed the registry")
			}
		})
	}
}

// TestMigrateFromBefore55, on real etcd and ZooKeeper: the example's
// registry as ShardingSphere 5.4.1 and 5.3.2 write it (golden trees
// written from their source) migrates to 5.5.3: the tree is then wholly
// in the 5.5.3 layout, with no key of the old form left, a second
// migration has nothing to do, its units and rules are those of the
// 5.5.3 release's own tree of the same example, and every value loads
// with SnakeYAML into the mirrors of the 5.5.3 classes with no failure
// and no null where the source had a value.
func TestMigrateFromBefore55(t *testing.T) {
	expected := memory.New()
	ctx := testenv.Context(t)
	for k, v := range readTree(t, "shardingsphere-5.5.3.yaml") {
		if _, err := expected.Put(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	wantDBs, _ := registryDatabases(ctx, t, expected)
	want := canonicalRules(t, wantDBs)
	for _, b := range realBackends(t) {
		for _, c := range []struct{ release, from string }{{"5.4.1", Legacy54}, {"5.3.2", Legacy53}} {
			t.Run(b.name+"/"+c.release, func(t *testing.T) {
				ctx := testenv.Context(t)
				repo := b.open(t)
				src := readTree(t, "shardingsphere-"+c.release+".yaml")
				for _, k := range sortedKeys(src) {
					if _, err := repo.Put(ctx, k, []byte(src[k])); err != nil {
						t.Fatal(err)
					}
				}
				plan, done, err := MigrateTree(ctx, repo, paths.Layout553, false)
				if err != nil {
					t.Fatalf("migrate the %s tree to 5.5.3: %v", c.release, err)
				}
				if len(plan) == 0 || plan[0].Database != "sharding_db" || plan[0].From != c.from || !slices.Contains(done, "sharding_db") {
					t.Fatalf("the plan %+v migrated %v, want database sharding_db read as %s", plan, done, c.from)
				}
				if tree, err := TreeLayouts(ctx, repo); err != nil || !slices.Contains(tree, paths.Layout553) {
					t.Fatalf("after the migration the tree is in %v %v", tree, err)
				}
				again, err := PlanMigration(ctx, repo, paths.Layout553)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range again {
					if len(m.Steps) > 0 || m.From != "" {
						t.Fatalf("a second migration would still write %+v from %q", m.Steps, m.From)
					}
				}
				dbs, _ := registryDatabases(ctx, t, repo)
				if got := canonicalRules(t, dbs); !reflect.DeepEqual(got, want) {
					t.Fatalf("the migrated rules are\n%v\nwant\n%v", got, want)
				}
				if got, want := dbs["sharding_db"].Units, wantDBs["sharding_db"].Units; !reflect.DeepEqual(got, want) {
					t.Fatalf("the migrated units are\n%v\nwant\n%v", got, want)
				}
				for _, old := range []string{"/metadata/sharding_db/active_version", "/metadata/sharding_db/versions/0/rules", "/metadata/sharding_db/rules/sharding/algorithms/database_inline/active_version"} {
					if _, err := repo.Get(ctx, old); !errors.Is(err, registry.ErrNotFound) {
						t.Errorf("%s is still there: %v", old, err)
					}
				}
				// The global rules and props: 5.3.x's users have no admin
				// flag, and it has no SQL federation rule.
				got, err := Load(ctx, repo, quietLog())
				if err != nil {
					t.Fatal(err)
				}
				exp, err := Load(ctx, expected, quietLog())
				if err != nil {
					t.Fatal(err)
				}
				g, w := got.Current(), exp.Current()
				for _, typ := range []string{"transaction", "sql_parser"} {
					if !reflect.DeepEqual(g.GlobalRules[typ].Content, w.GlobalRules[typ].Content) {
						t.Errorf("global rule %s: %v, want %v", typ, g.GlobalRules[typ].Content, w.GlobalRules[typ].Content)
					}
				}
				if !reflect.DeepEqual(g.Props, w.Props) {
					t.Errorf("props: %v, want %v", g.Props, w.Props)
				}
				users := func(s *Snapshot) (out []string) {
					for _, u := range s.GlobalRules["authority"].Content["users"].([]any) {
						m := u.(map[string]any)
						out = append(out, fmt.Sprint(m["user"], ":", m["password"]))
					}
					return out
				}
				if gu, wu := users(g), users(w); !reflect.DeepEqual(gu, wu) {
					t.Errorf("users: %v, want %v", gu, wu)
				}
				failures, err := loadWithSnakeYAML(t, paths.Layout553, persistedValues(t, repo))
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range failures {
					t.Errorf("5.5.3: %s", f)
				}
			})
		}
	}
}

// TestMigrateLargeDatabase, on real etcd (the test server's default
// --max-txn-ops, 128) and ZooKeeper: a database of 80 sharding tables
// with key generate strategies, more items than one etcd transaction
// holds, migrates 5.5.3 -> 5.5.4 in one transaction on ZooKeeper; on etcd
// the migration refuses, naming --max-txn-ops and the value it needs,
// and writes nothing of the database (never a mix of layouts).
func TestMigrateLargeDatabase(t *testing.T) {
	const n = 80
	tables := map[string]any{}
	for i := range n {
		name := fmt.Sprintf("t_%d", i)
		tables[name] = map[string]any{"actualDataNodes": "ds_0." + name,
			"keyGenerateStrategy": map[string]any{"column": "id", "keyGeneratorName": "snowflake"}}
	}
	large := config.Rule{Type: "sharding", Content: map[string]any{"tables": tables,
		"keyGenerators": map[string]any{"snowflake": map[string]any{"type": "SNOWFLAKE"}}}}
	for _, b := range realBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := testenv.Context(t)
			repo := b.open(t)
			kvs, err := DatabaseWrites(paths.Layout553, config.Database{Name: "large_db", Rules: []config.Rule{large}})
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range kvs {
				if _, err := repo.Put(ctx, kv.Key, kv.Value); err != nil {
					t.Fatal(err)
				}
			}
			before, beforeValues := registryDatabases(ctx, t, repo)
			want := canonicalRules(t, before)
			plan, done, err := MigrateTree(ctx, repo, paths.Layout554, false)
			ops := 0
			for _, m := range plan {
				ops = max(ops, len(m.ops), len(m.conds))
			}
			if ops <= 128 {
				t.Fatalf("the migration is %d operations, not more than etcd's default 128", ops)
			}
			if b.name == "etcd" {
				var me *MigrationError
				if !errors.As(err, &me) || !me.Limit || !strings.Contains(err.Error(), "at once") || !strings.Contains(err.Error(), "--max-txn-ops") || !strings.Contains(err.Error(), fmt.Sprint(ops)) || len(done) != 0 {
					t.Fatalf("migrating %d operations on etcd: %v (done %v), want the refusal naming --max-txn-ops and %d", ops, err, done, ops)
				}
				if _, after := registryDatabases(ctx, t, repo); !reflect.DeepEqual(after, beforeValues) {
					t.Fatal("the refused migration changed the registry")
				}
				t.Logf("refused: %v", err)
				return
			}
			if err != nil || len(done) != 1 {
				t.Fatalf("migrating %d operations on %s: %v (done %v)", ops, b.name, err, done)
			}
			if tree, err := TreeLayouts(ctx, repo); err != nil || len(tree) != 1 || tree[0] != paths.Layout554 {
				t.Fatalf("after the migration the tree is in %v %v, want 5.5.4", tree, err)
			}
			after, _ := registryDatabases(ctx, t, repo)
			if got := canonicalRules(t, after); !reflect.DeepEqual(got, want) {
				t.Fatal("the migrated rules differ from the rules before")
			}
		})
	}
}
