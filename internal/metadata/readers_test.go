package metadata

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// TestCheckReaders: a reader is refused exactly the rules its release
// does not write alike: shardkeeper nodes and versions that name no 5.5.x
// release are not readers that are checked.
func TestCheckReaders(t *testing.T) {
	keyed := config.Rule{Type: "sharding", Content: map[string]any{"tables": map[string]any{
		"t_order": map[string]any{"actualDataNodes": "ds_${0..1}.t_order", "keyGenerateStrategy": map[string]any{"column": "order_id", "keyGeneratorName": "snowflake"}}}}}
	defaults := config.Rule{Type: "sharding", Content: map[string]any{"defaultTableStrategy": map[string]any{"none": ""}}}
	cached := config.Rule{Type: "sharding", Content: map[string]any{"shardingCache": map[string]any{"allowedMaxSqlLength": 100}}}
	plain := config.Rule{Type: "sharding", Content: map[string]any{"tables": map[string]any{"t": map[string]any{"actualDataNodes": "ds_0.t"}}}}
	readers := func(versions ...string) []Reader {
		var in []Member
		for i, v := range versions {
			in = append(in, Member{InstanceID: "n" + string(rune('0'+i)), Version: v})
		}
		return ReadersOf(in)
	}
	for _, c := range []struct {
		writer   paths.Layout
		versions []string
		rule     config.Rule
		refused  string // the item named, "" for none
	}{
		{paths.Layout553, []string{"5.5.4"}, keyed, "item tables/t_order"},
		{paths.Layout553, []string{"5.5.4-SNAPSHOT"}, cached, "item sharding_cache"},
		{paths.Layout554, []string{"5.5.3"}, keyed, "item key_generate_strategies/t_order_order_id"},
		{paths.Layout554, []string{"5.5.2"}, defaults, "item default_table_strategy"},
		{paths.Layout552, []string{"5.5.3"}, defaults, "item default_strategies/default_table_strategy"},
		{paths.Layout553, []string{"5.5.2"}, keyed, ""},
		{paths.Layout553, []string{"5.5.3", "shardkeeper-0.1.0", "4.1.1", ""}, keyed, ""},
		{paths.Layout554, []string{"5.5.2", "5.5.3"}, plain, ""},
	} {
		err := CheckReaders(c.writer, readers(c.versions...), "db", c.rule)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("layout %s, readers %v: %v, want nil", c.writer, c.versions, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused+" ")):
			t.Errorf("layout %s, readers %v: %v, want a refusal naming %s", c.writer, c.versions, err, c.refused)
		}
	}
	if !layoutNeutral([]config.Rule{plain}) || layoutNeutral([]config.Rule{plain, keyed}) {
		t.Error("layoutNeutral: a plain table is written alike by every layout, a keyed one is not")
	}
}

// TestLayoutNeutralAsUnloadable: layoutNeutral answers what unloadable
// answers for every layout, for rules that one release or another writes
// differently and rules that every release writes alike.
func TestLayoutNeutralAsUnloadable(t *testing.T) {
	table := func(extra map[string]any) map[string]any {
		m := map[string]any{"actualDataNodes": "ds_${0..1}.t_${0..1}", "tableStrategy": map[string]any{"standard": map[string]any{"shardingColumn": "id", "shardingAlgorithmName": "mod"}}}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	algorithms := map[string]any{"mod": map[string]any{"type": "MOD", "props": map[string]any{"sharding-count": 2}}}
	rules := []config.Rule{
		{Type: "sharding", Content: map[string]any{"tables": map[string]any{"t_a": table(nil), "t_b": table(nil)}, "shardingAlgorithms": algorithms}},
		{Type: "sharding", Content: map[string]any{"tables": map[string]any{"t_a": table(nil), "t_b": table(map[string]any{"keyGenerateStrategy": map[string]any{"column": "id", "keyGeneratorName": "snowflake"}})}}},
		{Type: "sharding", Content: map[string]any{"tables": map[string]any{"t_a": table(nil)}, "defaultDatabaseStrategy": map[string]any{"none": ""}}},
		{Type: "sharding", Content: map[string]any{"tables": map[string]any{"t_a": table(nil)}, "shardingCache": map[string]any{"allowedMaxSqlLength": 100}}},
		{Type: "sharding", Content: map[string]any{"autoTables": map[string]any{"t_auto": map[string]any{"actualDataSources": "ds_0,ds_1", "shardingStrategy": map[string]any{"standard": map[string]any{"shardingColumn": "id", "shardingAlgorithmName": "mod"}}}}, "shardingAlgorithms": algorithms, "bindingTables": []any{"t_a,t_b"}}},
		{Type: "single", Content: map[string]any{"tables": []any{"ds_0.t_single"}}},
	}
	for i, r := range rules {
		want := true
		for _, l := range paths.Layouts {
			if unloadable(paths.DefaultLayout, l, r) != "" {
				want = false
			}
		}
		if got := layoutNeutral([]config.Rule{r}); got != want {
			t.Errorf("rule %d (%v): layoutNeutral = %v, unloadable finds it %v", i, r.Content, got, want)
		}
		if i == 1 && want {
			t.Errorf("rule %d: a table with a key generate strategy is written differently by 5.5.4: the test lost its differing case", i)
		}
	}
}

// TestTreeLayouts: the layouts that write a tree's rules as it holds them,
// on real etcd and ZooKeeper.
func TestTreeLayouts(t *testing.T) {
	keyed := config.Rule{Type: "sharding", Content: map[string]any{"tables": map[string]any{
		"t_order": map[string]any{"actualDataNodes": "ds_0.t_order", "keyGenerateStrategy": map[string]any{"column": "order_id", "keyGeneratorName": "snowflake"}}},
		"defaultTableStrategy": map[string]any{"none": ""}}}
	plain := config.Rule{Type: "sharding", Content: map[string]any{"tables": map[string]any{"t": map[string]any{"actualDataNodes": "ds_0.t"}}}}
	type db struct {
		layout paths.Layout
		rule   config.Rule
	}
	for _, b := range realBackends(t) {
		for _, c := range []struct {
			dbs  []db
			want string
		}{
			{nil, "[5.5.2 5.5.3 5.5.4]"},
			{[]db{{paths.Layout553, plain}}, "[5.5.2 5.5.3 5.5.4]"},
			{[]db{{paths.Layout552, keyed}}, "[5.5.2]"},
			{[]db{{paths.Layout553, keyed}}, "[5.5.3]"},
			{[]db{{paths.Layout554, keyed}, {paths.Layout553, plain}}, "[5.5.4]"},
			{[]db{{paths.Layout554, keyed}, {paths.Layout553, keyed}}, "[]"},
		} {
			ctx := testenv.Context(t)
			repo := b.open(t)
			for i, d := range c.dbs {
				kvs, err := DatabaseWrites(d.layout, config.Database{Name: fmt.Sprintf("db%d", i), Rules: []config.Rule{d.rule}})
				if err != nil {
					t.Fatal(err)
				}
				for _, kv := range kvs {
					if _, err := repo.Put(ctx, kv.Key, kv.Value); err != nil {
						t.Fatal(err)
					}
				}
			}
			got, err := TreeLayouts(ctx, repo)
			if err != nil || fmt.Sprint(got) != c.want {
				t.Errorf("%s: TreeLayouts of %+v: %v %v, want %s", b.name, c.dbs, got, err, c.want)
			}
		}
	}
}

// TestBootstrapRefusedByARegisteredReader, on real etcd and ZooKeeper: a
// first start whose configuration a registered ShardingSphere 5.5.4 node
// could not load in the node's 5.5.3 layout (the example's tables carry
// key generate strategies) fails naming the node, and persists no
// database; in the 5.5.4 layout it persists.
func TestBootstrapRefusedByARegisteredReader(t *testing.T) {
	for _, b := range realBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := testenv.Context(t)
			repo := b.open(t)
			sess, err := repo.NewSession(ctx, registry.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close(context.WithoutCancel(ctx))
			key, _ := paths.Online(paths.JDBC, "ss-jdbc-554")
			if err := sess.PutEphemeral(ctx, key, []byte("attribute: 127.0.0.1\ndatabaseName: sharding_db\nversion: 5.5.4\n")); err != nil {
				t.Fatal(err)
			}
			cfg := exampleConfig(t)
			_, err = Bootstrap(ctx, repo, sess, cfg, Options{Introspect: fakeIntrospect})
			var se *sqlerr.Error
			if !errors.As(err, &se) || se.Code != LayoutRefusalCode || !strings.Contains(se.Message, "ss-jdbc-554") {
				t.Fatalf("bootstrap in the 5.5.3 layout next to a 5.5.4 node: %v, want the layout refusal naming it", err)
			}
			if dbs, err := repo.Children(ctx, paths.MetadataRoot); err != nil || len(dbs) != 0 {
				t.Fatalf("the refused bootstrap persisted %v %v", dbs, err)
			}
			cfg.Mode.Repository.Layout = paths.Layout554
			if _, err := Bootstrap(ctx, repo, sess, cfg, Options{Introspect: fakeIntrospect}); err != nil {
				t.Fatalf("bootstrap in the 5.5.4 layout: %v", err)
			}
		})
	}
}

// TestChooseLayoutNewest: without layoutVersion, a tree no layout tells
// apart (an empty one) gets the newest release's layout, a tree that
// some layouts write alike the newest of those, and one layout's tree
// that one.
func TestChooseLayoutNewest(t *testing.T) {
	for _, c := range []struct {
		tree []paths.Layout
		want LayoutChoice
	}{
		{paths.Layouts, LayoutChoice{Layout: paths.Layout554, Reason: "default"}},
		{[]paths.Layout{paths.Layout552, paths.Layout553}, LayoutChoice{Layout: paths.Layout553, Reason: "tree"}},
		{[]paths.Layout{paths.Layout553, paths.Layout554}, LayoutChoice{Layout: paths.Layout554, Reason: "default"}},
		{[]paths.Layout{paths.Layout552}, LayoutChoice{Layout: paths.Layout552, Reason: "tree"}},
		{nil, LayoutChoice{Layout: paths.Layout554, Reason: "default"}},
	} {
		if got := ChooseLayout(c.tree, nil); got != c.want {
			t.Errorf("ChooseLayout(%v) = %+v, want %+v", c.tree, got, c.want)
		}
	}
}
