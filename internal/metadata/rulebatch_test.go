package metadata

import (
	"context"
	"errors"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/rule/sharding"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestRuleItemBatchesMatchItemByItem applies random batches of rule item
// writes and deletes (named tables, binding tables, unique items, a whole
// rule's removal) to a store and checks after each batch that the rules
// are those the items give applied one by one on copies (applyRuleItem),
// that the rules digest the database carries is RulesDigest of its rules,
// and that no earlier snapshot changed: a batch changes the rules in place
// only where it copied them itself.
func TestRuleItemBatchesMatchItemByItem(t *testing.T) {
	ctx := testenv.Context(t)
	rng := rand.New(rand.NewPCG(38, 1))
	s := newStore(memory.New(), nil)
	type item struct{ typ, item, name string }
	value := func(it item, n int) string {
		switch it.item {
		case "binding_tables":
			return it.name + ":" + it.name + ",t_x" + strconv.Itoa(n%3)
		case "default_sharding_column":
			return "col_" + strconv.Itoa(n)
		}
		return fmt.Sprintf("actualDataNodes: ds_0.%s_%d\nprops:\n  n: %d\n", it.name, n, n)
	}
	var all []item
	for i := range 12 {
		all = append(all, item{"sharding", "tables", fmt.Sprintf("t_%02d", i)})
	}
	for i := range 3 {
		all = append(all, item{"sharding", "binding_tables", fmt.Sprintf("t_%02d", i)})
		all = append(all, item{"encrypt", "tables", fmt.Sprintf("e_%02d", i)})
	}
	all = append(all, item{"sharding", "default_sharding_column", ""}, item{"sharding", "sharding_algorithms", "mod"})
	held := map[item]string{}   // the items the registry holds, with their values
	version := map[item]int{}   // the next version of each item
	var published []*Snapshot   // every snapshot so far
	var frozen []map[string]any // a deep copy of each one's rules when published
	for batch := range 60 {
		var events []registry.Event
		for range 1 + rng.IntN(8) {
			it := all[rng.IntN(len(all))]
			node, err := paths.DefaultLayout.RuleItem("db", it.typ, it.item, it.name)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := held[it]; ok && rng.IntN(3) == 0 {
				delete(held, it)
				events = append(events, registry.Event{Type: registry.EventDelete, KV: registry.KV{Key: paths.ActiveVersion(node)}},
					registry.Event{Type: registry.EventDelete, KV: registry.KV{Key: paths.Version(node, version[it]-1)}})
				continue
			}
			n := version[it]
			version[it]++
			held[it] = value(it, n)
			events = append(events,
				registry.Event{Type: registry.EventPut, KV: registry.KV{Key: paths.Version(node, n), Value: []byte(held[it]), Version: 1}},
				registry.Event{Type: registry.EventPut, KV: registry.KV{Key: paths.ActiveVersion(node), Value: []byte(strconv.Itoa(n)), Version: registry.Version(n + 1)}})
			if n > 0 {
				events = append(events, registry.Event{Type: registry.EventDelete, KV: registry.KV{Key: paths.Version(node, n-1)}})
			}
		}
		if batch%20 == 19 { // the whole encrypt rule goes
			events = append(events, registry.Event{Type: registry.EventDelete, KV: registry.KV{Key: "/metadata/db/rules/encrypt"}})
			for it := range held {
				if it.typ == "encrypt" {
					delete(held, it)
				}
			}
		}
		if batch == 0 {
			events = append([]registry.Event{{Type: registry.EventPut, KV: registry.KV{Key: "/metadata/db", Version: 1}}}, events...)
		}
		d := newDraft(s.Current())
		s.ap.apply(ctx, d, events, false)
		s.publish(d)
		snap := s.Current()
		want := map[string]config.Rule{}
		for _, it := range slices.SortedFunc(maps.Keys(held), func(a, b item) int {
			return strings.Compare(a.typ+"/"+a.item+"/"+a.name, b.typ+"/"+b.item+"/"+b.name)
		}) {
			c, err := applyRuleItem(it.typ, want[it.typ].Content, it.item, it.name, []byte(held[it]), false)
			if err != nil {
				t.Fatal(err)
			}
			want[it.typ] = config.Rule{Type: it.typ, Content: c}
		}
		got := snap.Databases["db"].Rules
		if !reflect.DeepEqual(sortedLists(got), sortedLists(want)) {
			t.Fatalf("batch %d: rules %v\nwant %v", batch, got, want)
		}
		if dg := snap.Databases["db"].RulesDigest(); dg != RulesDigest(want) {
			t.Fatalf("batch %d: the database's digest %q, RulesDigest of its rules %q", batch, dg, RulesDigest(want))
		}
		for i, old := range published {
			if !reflect.DeepEqual(sortedLists(old.Databases["db"].Rules), frozen[i]) {
				t.Fatalf("batch %d changed the rules of snapshot %d", batch, i)
			}
		}
		published = append(published, snap)
		frozen = append(frozen, sortedLists(got))
	}
}

// sortedLists is a deep copy of rules with every list sorted (the
// binding tables' order is the order their items were applied in).
func sortedLists(rules map[string]config.Rule) map[string]any {
	var norm func(v any) any
	norm = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = norm(e)
			}
			return out
		case []any:
			out := make([]any, 0, len(x))
			for _, e := range x {
				out = append(out, norm(e))
			}
			slices.SortFunc(out, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
			return out
		}
		return v
	}
	out := map[string]any{}
	for typ, r := range rules {
		out[typ] = norm(r.Content)
	}
	return out
}

// TestDecodeChanges: a database decoded from the keys read before a rule
// change, with only the keys the change (and a change of another rule
// meanwhile) touched decoded again, is the database decoded from the keys
// after it, with the same rules digest, and the one decoded before is
// left as it was.
func TestDecodeChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 2))
	before := shardingKVs(t, 40)
	for step := range 30 {
		base := decode("db", before)
		baseRules := sortedLists(base.Rules)
		baseDigest := base.RulesDigest()
		old := base.Rules["sharding"]
		next := config.Rule{Type: "sharding", Content: config.CloneContent(old.Content)}
		tables, _ := next.Content["tables"].(map[string]any)
		if tables == nil {
			tables = map[string]any{}
			next.Content["tables"] = tables
		}
		for range 1 + rng.IntN(4) {
			name := fmt.Sprintf("t_order_%05d", rng.IntN(60))
			switch rng.IntN(3) {
			case 0:
				delete(tables, name)
			default:
				tables[name] = map[string]any{"actualDataNodes": fmt.Sprintf("ds_0.%s_%d", name, step)}
			}
		}
		conds, ops, err := RuleWritesFrom(paths.DefaultLayout, "db", before, old, next)
		if err != nil {
			t.Fatal(err)
		}
		written, err := RuleAsWritten(paths.DefaultLayout, next)
		if err != nil {
			t.Fatal(err)
		}
		if c, o, err := RuleWritesFromWritten(paths.DefaultLayout, "db", NewRuleKeys(before), old, written); err != nil || !reflect.DeepEqual(c, conds) || !reflect.DeepEqual(o, ops) {
			t.Fatalf("step %d: RuleWritesFromWritten %v %v %v\nwant RuleWritesFrom's %v %v", step, c, o, err, conds, ops)
		}
		if step%5 == 4 { // another rule, written meanwhile
			more, err := DatabaseWrites(paths.DefaultLayout, config.Database{Name: "db", Rules: []config.Rule{{Type: "single", Content: map[string]any{"defaultDataSource": fmt.Sprint("ds_", step)}}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range more[1:] {
				ops = append(ops, registry.Op{Key: kv.Key, Value: kv.Value})
			}
		}
		now := AfterOps(before, ops)
		got, want := DecodeChanges(base, before, now), decode("db", now)
		if !reflect.DeepEqual(sortedLists(got.Rules), sortedLists(want.Rules)) {
			t.Fatalf("step %d: rules %v\nwant %v", step, got.Rules, want.Rules)
		}
		if got.RulesDigest() != RulesDigest(want.Rules) || want.RulesDigest() != RulesDigest(want.Rules) {
			t.Fatalf("step %d: digest %q, want %q", step, got.RulesDigest(), RulesDigest(want.Rules))
		}
		if !reflect.DeepEqual(sortedLists(base.Rules), baseRules) || base.RulesDigest() != baseDigest {
			t.Fatalf("step %d: DecodeChanges changed the database it started from", step)
		}
		before = now
	}
}

// TestRuleCacheReadsAsReadDatabase: a database read through a RuleCache
// after each of a series of rule and unit changes is the one ReadDatabase
// reads (rules, units, digest, keys), and what it returned before stays
// as it was. The cache keeps at most MaxCachedDatabases databases.
func TestRuleCacheReadsAsReadDatabase(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	ds := config.NewDataSource("jdbc:sqlite:/tmp/unused.db", "", "")
	if err := CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "db", DataSources: map[string]config.DataSource{"ds_0": ds},
		Rules: []config.Rule{shardingRule(30)}}); err != nil {
		t.Fatal(err)
	}
	cache := NewRuleCache()
	var earlier []*Database
	var frozen []map[string]any
	for step := range 8 {
		switch step % 4 {
		case 1, 2: // at 1 a table altered, one dropped, one added; at 2 one added (no key deleted: the cache follows it)
			d, _, err := ReadDatabase(ctx, repo, "db")
			if err != nil {
				t.Fatal(err)
			}
			old := d.Rules["sharding"]
			next := config.Rule{Type: "sharding", Content: config.CloneContent(old.Content)}
			tables := next.Content["tables"].(map[string]any)
			if step%4 == 1 {
				tables[fmt.Sprintf("t_order_%05d", step)] = map[string]any{"actualDataNodes": fmt.Sprint("ds_0.t_", step)}
				delete(tables, fmt.Sprintf("t_order_%05d", 20+step))
			}
			tables[fmt.Sprintf("t_new_%d", step)] = map[string]any{"actualDataNodes": "ds_0.t_new"}
			conds, ops, err := RuleWrites(ctx, repo, paths.DefaultLayout, "db", old, next)
			if err != nil {
				t.Fatal(err)
			}
			if err := Commit(ctx, repo, conds, ops); err != nil {
				t.Fatal(err)
			}
		case 3: // a unit added
			if err := RegisterUnit(ctx, repo, "db", fmt.Sprint("ds_", step), ds); err != nil {
				t.Fatal(err)
			}
		}
		got, gotKVs, err := cache.ReadDatabase(ctx, repo, "db")
		if err != nil {
			t.Fatal(err)
		}
		want, wantKVs, err := ReadDatabase(ctx, repo, "db")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(sortedLists(got.Rules), sortedLists(want.Rules)) || !reflect.DeepEqual(got.Units, want.Units) || !reflect.DeepEqual(gotKVs, wantKVs) {
			t.Fatalf("step %d: the cache read %v %v, ReadDatabase %v %v", step, got.Rules, got.Units, want.Rules, want.Units)
		}
		if got.RulesDigest() != RulesDigest(want.Rules) {
			t.Fatalf("step %d: digest %q, want %q", step, got.RulesDigest(), RulesDigest(want.Rules))
		}
		if r, err := cache.Read(ctx, repo, "db"); err != nil || r.ShardingNames() != sharding.TallyOf(want.Rules["sharding"].Content).Total() {
			t.Fatalf("step %d: the cache counts %d names of the sharding rule, a count of the rule read %d (%v)",
				step, r.ShardingNames(), sharding.TallyOf(want.Rules["sharding"].Content).Total(), err)
		}
		for i, d := range earlier {
			if !reflect.DeepEqual(sortedLists(d.Rules), frozen[i]) {
				t.Fatalf("step %d changed the database read at step %d", step, i)
			}
		}
		earlier, frozen = append(earlier, got), append(frozen, sortedLists(got.Rules))
	}
	if _, _, err := cache.ReadDatabase(ctx, repo, "nope"); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("an unknown database: %v, want ErrNoDatabase", err)
	}
	for i := range MaxCachedDatabases + 2 {
		name := fmt.Sprint("db_", i)
		if err := CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: name}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := cache.ReadDatabase(ctx, repo, name); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(cache.dbs); n > MaxCachedDatabases {
		t.Fatalf("the cache holds %d databases, more than %d", n, MaxCachedDatabases)
	}
}

// TestStoreRuleCacheStartsFromTheStore: a RuleCache of a running Store
// starts a database from what the Store decoded (its entries are the
// Store's own, not decoded again) and reads what ReadDatabase reads, then
// and after other clients' changes; without a running Store it reads the
// registry.
func TestStoreRuleCacheStartsFromTheStore(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	ds := config.NewDataSource("jdbc:sqlite:/tmp/unused.db", "", "")
	if err := CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "db", DataSources: map[string]config.DataSource{"ds_0": ds},
		Rules: []config.Rule{shardingRule(30)}}); err != nil {
		t.Fatal(err)
	}
	s, err := Load(ctx, repo, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := s.RuleKeys(ctx, "db"); ok {
		t.Fatal("RuleKeys answered without Run")
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	check := func(step string, cache *RuleCache) *Database {
		t.Helper()
		got, gotKVs, err := cache.ReadDatabase(ctx, repo, "db")
		if err != nil {
			t.Fatal(err)
		}
		want, wantKVs, err := ReadDatabase(ctx, repo, "db")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(sortedLists(got.Rules), sortedLists(want.Rules)) || !reflect.DeepEqual(got.Units, want.Units) || !reflect.DeepEqual(gotKVs, wantKVs) || got.RulesDigest() != want.RulesDigest() {
			t.Fatalf("%s: the cache read %d keys, digest %q; ReadDatabase %d keys, %q", step, len(gotKVs), got.RulesDigest(), len(wantKVs), want.RulesDigest())
		}
		return got
	}
	var first *Database
	for !s.running.Load() {
		time.Sleep(time.Millisecond)
	}
	cache := NewStoreRuleCache(s)
	first = check("first read", cache)
	held := s.Current().Databases["db"].Rules["sharding"].Content["tables"].(map[string]any)
	read := first.Rules["sharding"].Content["tables"].(map[string]any)
	if !rule.Same(held["t_order_00001"], read["t_order_00001"]) {
		t.Fatal("the first read decoded the rules again instead of starting from the Store's")
	}
	// Other clients add a table and drop one.
	d, _, err := ReadDatabase(ctx, repo, "db")
	if err != nil {
		t.Fatal(err)
	}
	old := d.Rules["sharding"]
	next := config.Rule{Type: "sharding", Content: config.CloneContent(old.Content)}
	tables := next.Content["tables"].(map[string]any)
	tables["t_new"] = map[string]any{"actualDataNodes": "ds_0.t_new"}
	delete(tables, "t_order_00002")
	conds, ops, err := RuleWrites(ctx, repo, paths.DefaultLayout, "db", old, next)
	if err != nil {
		t.Fatal(err)
	}
	if err := Commit(ctx, repo, conds, ops); err != nil {
		t.Fatal(err)
	}
	check("after another client's change", cache)
	check("a fresh cache after it", NewStoreRuleCache(s))
}
