package metadata

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// exampleDir returns the folder of ShardingSphere's example proxy
// configuration, read in place from the shared reference (the project does
// not ship it): the registry trees under testdata/registry are what
// upstream writes for it. Without the shared reference the test skips
// (fails under scripts/test.sh).
func exampleDir(t testing.TB) string {
	t.Helper()
	return testenv.Shared(t, "testdata", "shardingsphere")
}

// exampleConfig is ShardingSphere's example global.yaml with its MySQL
// database file.
func exampleConfig(t testing.TB) *config.Config {
	t.Helper()
	exampleDir := exampleDir(t)
	g, err := config.ParseGlobal("global.yaml", readFile(t, filepath.Join(exampleDir, "global.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	db, err := config.ParseDatabase("database-sharding-mysql.yaml", readFile(t, filepath.Join(exampleDir, "database-sharding-mysql.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	g.Databases = []config.Database{*db}
	// The layout the example's tests were written for, not the default.
	g.Mode.Repository.Layout = paths.Layout553
	return g
}

// otherConfig is a different local config, for the node that boots second.
func otherConfig() *config.Config {
	return &config.Config{
		Props: config.Props{"sql-show": "true"},
		Databases: []config.Database{{
			Name:        "other_db",
			DataSources: map[string]config.DataSource{"ds": config.NewDataSource("jdbc:sqlite:/tmp/other.db", "", "")},
		}},
	}
}

// fakeIntrospect returns one schema per database with a table per unit.
func fakeIntrospect(_ context.Context, db config.Database) ([]datasource.Schema, error) {
	s := datasource.Schema{Name: db.Name, Tables: map[string]datasource.Table{}, Views: map[string]datasource.View{}}
	for unit := range db.DataSources {
		s.Tables["t_"+unit] = datasource.Table{
			Name: "t_" + unit,
			Columns: []datasource.Column{
				{Name: "id", DataType: -5, TypeName: "bigint", PrimaryKey: true},
				{Name: "name", DataType: 12, TypeName: "varchar(32)", Nullable: true},
			},
			Indexes: []datasource.Index{{Name: "idx_name", Columns: []string{"name"}}},
		}
	}
	s.Views["v_all"] = datasource.View{Name: "v_all", Definition: "select 1"}
	return []datasource.Schema{s}, nil
}

type node struct {
	repo  *memory.Repo
	sess  registry.Session
	store *Store
}

func bootNode(t *testing.T, ctx context.Context, base *memory.Repo, cfg *config.Config) *node {
	t.Helper()
	repo := base.Clone()
	t.Cleanup(func() { _ = repo.Close() })
	sess, err := repo.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close(context.Background()) })
	store, err := Bootstrap(ctx, repo, sess, cfg, Options{Introspect: fakeIntrospect})
	if err != nil {
		t.Fatal(err)
	}
	return &node{repo: repo, sess: sess, store: store}
}

func (n *node) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.store.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func get(t *testing.T, r registry.Repository, key string) string {
	t.Helper()
	kv, err := r.Get(testenv.Context(t), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	return string(kv.Value)
}

func TestPathAThenPathB(t *testing.T) {
	ctx := testenv.Context(t)
	base := memory.New()
	n1 := bootNode(t, ctx, base, exampleConfig(t))
	// The registry has ShardingSphere's layout, every item versioned.
	for key, want := range map[string]string{
		"/metadata/sharding_db/data_sources/units/ds_0/active_version":                    "0",
		"/metadata/sharding_db/rules/sharding/tables/t_order/active_version":              "0",
		"/metadata/sharding_db/rules/sharding/default_database_strategy/active_version":   "0",
		"/metadata/sharding_db/rules/sharding/binding_tables/13d48f96849b306e/versions/0": "13d48f96849b306e:t_order,t_order_item",
		"/metadata/sharding_db/rules/broadcast/tables/versions/0":                         "- t_address\n",
		"/rules/transaction/versions/0":                                                   "defaultType: XA\nproviderType: Atomikos\n",
		"/metadata/sharding_db/schemas/sharding_db/tables/t_ds_0/active_version":          "0",
		"/metadata/sharding_db/schemas/sharding_db/views/v_all/active_version":            "0",
		"/props/active_version": "0",
	} {
		if got := get(t, base, key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if v := get(t, base, "/metadata/sharding_db/rules/sharding/sharding_algorithms/database_inline/versions/0"); !strings.Contains(v, "algorithm-expression: ds_${user_id % 2}") {
		t.Errorf("algorithm = %q", v)
	}
	if v := get(t, base, "/metadata/sharding_db/data_sources/units/ds_0/versions/0"); !strings.Contains(v, "url: jdbc:mysql://127.0.0.1:3306/demo_ds_0?useSSL=false") || !strings.Contains(v, "maxPoolSize: 50") {
		t.Errorf("unit = %q", v)
	}
	checkExample(t, n1.store.Current())

	// Node 2 has another local config but the registry has databases: it
	// ends with node 1's metadata, props and global rules included.
	n2 := bootNode(t, ctx, base, otherConfig())
	s1, s2 := n1.store.Current(), n2.store.Current()
	checkExample(t, s2)
	if _, ok := s2.Databases["other_db"]; ok {
		t.Error("node 2 persisted its own database")
	}
	if !reflect.DeepEqual(s1.Databases, s2.Databases) || !reflect.DeepEqual(s1.Props, s2.Props) || !reflect.DeepEqual(s1.GlobalRules, s2.GlobalRules) {
		t.Error("node 2's snapshot differs from node 1's")
	}
}

func checkExample(t *testing.T, s *Snapshot) {
	t.Helper()
	db := s.Databases["sharding_db"]
	if db == nil {
		t.Fatalf("no sharding_db in %+v", s.Databases)
	}
	cfg := exampleConfig(t)
	want, _ := cfg.Database("sharding_db")
	for name, ds := range want.DataSources {
		if !db.Units[name].Equal(ds) {
			t.Errorf("unit %s = %+v, want %+v", name, db.Units[name], ds)
		}
	}
	for _, r := range want.Rules {
		// The config's rule as upstream writes it (upstreamRule) in the
		// layout the example's config names.
		r, _ = upstreamRule(cfg.Mode.Repository.Layout, r)
		if !reflect.DeepEqual(db.Rules[r.Type].Content, normalise(t, r.Content)) {
			t.Errorf("rule %s = %#v\nwant %#v", r.Type, db.Rules[r.Type].Content, normalise(t, r.Content))
		}
	}
	if tbl, ok := s.Table("sharding_db", "sharding_db", "t_ds_1"); !ok || len(tbl.Columns) != 2 || !tbl.Columns[0].PrimaryKey || tbl.Columns[1].TypeName != "varchar(32)" || tbl.Indexes[0].Name != "idx_name" {
		t.Errorf("table t_ds_1 = %+v", tbl)
	}
	if s.Props.Int("kernel-executor-size") != 16 || s.GlobalRules["sql_parser"].Content["sqlStatementCache"] == nil || s.ClusterState != "OK" {
		t.Errorf("props %v, global rules %v", s.Props, s.GlobalRules)
	}
}

// normalise round-trips content through YAML so that it compares with what
// the registry gives back.
func normalise(t *testing.T, content map[string]any) map[string]any {
	t.Helper()
	out, err := decodeRuleContent("x", encodeRuleContent(content))
	if err != nil {
		t.Fatal(err)
	}
	return out.Content
}

func TestConcurrentBootstrapKeepsOneCopy(t *testing.T) {
	ctx := testenv.Context(t)
	base := memory.New()
	// Which node persists is the race; a node whose authority rule then
	// differs refuses to start (TestAuthorityDiffersRefusesStart), so the
	// configs here differ in their databases and props only.
	example := func() *config.Config {
		cfg := exampleConfig(t)
		cfg.GlobalRules = slices.DeleteFunc(cfg.GlobalRules, func(r config.Rule) bool { return r.Type == "authority" })
		return cfg
	}
	cfgs := []*config.Config{example(), otherConfig(), example(), otherConfig()}
	nodes := make([]*node, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i] = bootNode(t, ctx, base, cfg)
		}()
	}
	wg.Wait()
	dbs, _ := base.Children(ctx, "/metadata")
	if len(dbs) != 1 {
		t.Fatalf("databases in the registry: %v, want exactly one node's", dbs)
	}
	for _, n := range nodes[1:] {
		if !reflect.DeepEqual(n.store.Current().Databases, nodes[0].store.Current().Databases) ||
			!reflect.DeepEqual(n.store.Current().Props, nodes[0].store.Current().Props) {
			t.Fatal("nodes disagree")
		}
	}
}

func TestVersionedWriteKeepsOneVersion(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	for i := 0; i < 3; i++ {
		if err := SetProps(ctx, repo, map[string]string{"kernel-executor-size": fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	vs, _ := repo.Children(ctx, "/props/versions")
	if get(t, repo, "/props/active_version") != "2" || len(vs) != 1 || vs[0] != "2" {
		t.Fatalf("active %s, versions %v", get(t, repo, "/props/active_version"), vs)
	}
	if err := SetProps(ctx, repo, map[string]string{"sql-show": "yes"}); err == nil {
		t.Fatal("SetProps accepted a non-boolean sql-show")
	}
	// Concurrent read-modify-writes lose nothing.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := SetProps(ctx, repo, map[string]string{fmt.Sprintf("custom-%d", i): "x"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	p, err := decodeProps([]byte(get(t, repo, paths.Version("/props", atoi([]byte(get(t, repo, "/props/active_version")))))))
	if err != nil || len(p) != 9 {
		t.Fatalf("props after concurrent writes = %v, %v", p, err)
	}
}

func TestWritersReachOtherNodes(t *testing.T) {
	ctx := testenv.Context(t)
	base := memory.New()
	n1 := bootNode(t, ctx, base, exampleConfig(t))
	n2 := bootNode(t, ctx, base, nil)
	n1.run(t)
	n2.run(t)
	var mu sync.Mutex
	var seen []Change
	cancel := n1.store.Subscribe(func(_ *Snapshot, ch []Change) {
		mu.Lock()
		seen = append(seen, ch...)
		mu.Unlock()
	})
	defer cancel()
	wait := func(what string, cond func(*Snapshot) bool) {
		t.Helper()
		wctx, c := context.WithTimeout(ctx, 10*time.Second)
		defer c()
		if _, err := n1.store.Wait(wctx, cond); err != nil {
			t.Fatalf("node 1 never saw %s: %v", what, err)
		}
	}
	w := n2.repo
	if err := SetProps(ctx, w, map[string]string{"sql-show": "true"}); err != nil {
		t.Fatal(err)
	}
	wait("sql-show", func(s *Snapshot) bool { return s.Props.Bool("sql-show") && s.Props.Int("kernel-executor-size") == 16 })

	ds := config.NewDataSource("jdbc:mysql://127.0.0.1:3306/demo_ds_2", "root", "secret")
	if err := RegisterUnit(ctx, w, "sharding_db", "ds_2", ds); err != nil {
		t.Fatal(err)
	}
	if err := RegisterUnit(ctx, w, "sharding_db", "ds_2", ds); !errors.Is(err, ErrUnitExists) {
		t.Fatalf("second RegisterUnit: %v", err)
	}
	if err := RegisterUnit(ctx, w, "nope", "ds_2", ds); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("RegisterUnit on a missing database: %v", err)
	}
	wait("ds_2", func(s *Snapshot) bool { return s.Databases["sharding_db"].Units["ds_2"].Equal(ds) })
	ds.MaxPoolSize = 7
	if err := AlterUnit(ctx, w, "sharding_db", "ds_2", ds); err != nil {
		t.Fatal(err)
	}
	wait("altered ds_2", func(s *Snapshot) bool { return s.Databases["sharding_db"].Units["ds_2"].MaxPoolSize == 7 })
	if err := DropUnit(ctx, w, "sharding_db", "ds_2"); err != nil {
		t.Fatal(err)
	}
	wait("dropped ds_2", func(s *Snapshot) bool { _, ok := s.Databases["sharding_db"].Units["ds_2"]; return !ok })
	if err := DropUnit(ctx, w, "sharding_db", "ds_2"); !errors.Is(err, ErrNoUnit) {
		t.Fatalf("second DropUnit: %v", err)
	}

	tbl := map[string]any{"actualDataNodes": "ds_${0..1}.t_new_${0..1}"}
	if err := AlterRuleItem(ctx, w, paths.DefaultLayout, "sharding_db", "sharding", "tables", "t_new", tbl); err != nil {
		t.Fatal(err)
	}
	if err := AlterRuleItem(ctx, w, paths.DefaultLayout, "sharding_db", "sharding", "default_sharding_column", "", "user_id"); err != nil {
		t.Fatal(err)
	}
	wait("rule items", func(s *Snapshot) bool {
		c := s.Databases["sharding_db"].Rules["sharding"].Content
		t, _ := c["tables"].(map[string]any)
		return t["t_new"] != nil && t["t_order"] != nil && c["defaultShardingColumn"] == "user_id"
	})
	if err := DropRuleItem(ctx, w, "sharding_db", "sharding", "tables", "t_new"); err != nil {
		t.Fatal(err)
	}
	wait("dropped rule item", func(s *Snapshot) bool {
		t, _ := s.Databases["sharding_db"].Rules["sharding"].Content["tables"].(map[string]any)
		return t["t_new"] == nil && t["t_order"] != nil
	})
	if err := AlterGlobalRule(ctx, w, config.Rule{Type: "transaction", Content: map[string]any{"defaultType": "LOCAL"}}); err != nil {
		t.Fatal(err)
	}
	wait("global rule", func(s *Snapshot) bool { return s.GlobalRules["transaction"].Content["defaultType"] == "LOCAL" })
	if _, err := w.Put(ctx, paths.ClusterState, []byte("READ_ONLY")); err != nil {
		t.Fatal(err)
	}
	wait("cluster state", func(s *Snapshot) bool { return s.ClusterState == "READ_ONLY" })

	if err := DropDatabase(ctx, w, "sharding_db"); err != nil {
		t.Fatal(err)
	}
	wait("dropped database", func(s *Snapshot) bool { return s.Databases["sharding_db"] == nil })
	if err := DropDatabase(ctx, w, "sharding_db"); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("second DropDatabase: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var kinds []string
	for _, c := range seen {
		kinds = append(kinds, c.Kind)
	}
	for _, want := range []string{paths.KindProps, paths.KindUnit, paths.KindRuleItem, paths.KindGlobalRule, paths.KindClusterState, paths.KindDatabase} {
		if !strings.Contains(strings.Join(kinds, ","), want) {
			t.Errorf("subscriber saw %v, not %s", kinds, want)
		}
	}
	// A rule item's change names the content's field and entry it
	// edited, what a subscriber recounts instead of the whole rule.
	items := map[Change]bool{}
	for _, c := range seen {
		if c.Kind == paths.KindRuleItem {
			items[c] = true
		}
	}
	for _, want := range []Change{
		{Kind: paths.KindRuleItem, Database: "sharding_db", RuleType: "sharding", RuleItem: "tables", Field: "tables", ItemName: "t_new"},
		{Kind: paths.KindRuleItem, Database: "sharding_db", RuleType: "sharding", RuleItem: "default_sharding_column", Field: "defaultShardingColumn"},
		{Kind: paths.KindRuleItem, Database: "sharding_db", RuleType: "sharding", RuleItem: "tables", Field: "tables", ItemName: "t_new", Deleted: true},
	} {
		if !items[want] {
			t.Errorf("subscriber saw the rule item changes %v, not %+v", items, want)
		}
	}
}

func TestResyncAfterLostWatch(t *testing.T) {
	ctx := testenv.Context(t)
	base := memory.New()
	n1 := bootNode(t, ctx, base, exampleConfig(t))
	n1.run(t)
	node, _ := paths.Table("sharding_db", "sharding_db", "t_ds_0")
	for i := 0; i < 5; i++ {
		n1.repo.DropWatches()
		if i == 2 {
			if err := base.Delete(ctx, node); err != nil {
				t.Fatal(err)
			}
		}
	}
	wctx, c := context.WithTimeout(ctx, 10*time.Second)
	defer c()
	if _, err := n1.store.Wait(wctx, func(s *Snapshot) bool { _, ok := s.Table("sharding_db", "sharding_db", "t_ds_0"); return !ok }); err != nil {
		t.Fatal("the table deleted while the watch was lost is still there")
	}

	// The seeded follow reports keys that vanished before its first watch.
	var got []registry.Event
	fctx, fcancel := context.WithCancel(ctx)
	seen := map[string]registry.Version{"/props/active_version": 999999, "/props/gone": 1}
	go func() {
		time.Sleep(200 * time.Millisecond)
		fcancel()
	}()
	var mu sync.Mutex
	_ = registry.FollowFrom(fctx, base, "/props", seen, func(ev registry.Event) { mu.Lock(); got = append(got, ev); mu.Unlock() })
	mu.Lock()
	defer mu.Unlock()
	var desc []string
	for _, ev := range got {
		desc = append(desc, ev.Type.String()+" "+ev.KV.Key)
	}
	if !strings.Contains(strings.Join(desc, ","), "DELETE /props/gone") || !strings.Contains(strings.Join(desc, ","), "PUT /props/active_version") {
		t.Fatalf("events %v", desc)
	}
}

func TestCorruptValuesAreReportedAndSkipped(t *testing.T) {
	ctx := testenv.Context(t)
	base := memory.New()
	bootNode(t, ctx, base, exampleConfig(t))
	for key, val := range map[string]string{
		"/metadata/sharding_db/schemas/sharding_db/tables/bad/versions/0":       "columns: [oops",
		"/metadata/sharding_db/schemas/sharding_db/tables/bad/active_version":   "0",
		"/metadata/sharding_db/schemas/sharding_db/tables/nover/active_version": "zero",
		"/metadata/sharding_db/data_sources/units/bad/versions/0":               "url: [",
		"/metadata/sharding_db/data_sources/units/bad/active_version":           "0",
		"/states/cluster_state": "MAYBE",
	} {
		if _, err := base.Put(ctx, key, []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	n := bootNode(t, ctx, base, nil)
	s := n.store.Current()
	checkExample(t, s)
	if _, ok := s.Table("sharding_db", "sharding_db", "bad"); ok {
		t.Error("the corrupt table was applied")
	}
	probs := fmt.Sprint(n.store.Problems())
	for _, want := range []string{"tables/bad/versions/0", "tables/nover/active_version", "units/bad/versions/0", "/states/cluster_state"} {
		if !strings.Contains(probs, want) {
			t.Errorf("problems %s lack %s", probs, want)
		}
	}
	// The node keeps running: corrupt props planted live are skipped, a good
	// change afterwards is applied.
	n.run(t)
	if _, err := base.Put(ctx, "/props/versions/77", []byte("sql-show: [")); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Put(ctx, "/props/active_version", []byte("77")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(fmt.Sprint(n.store.Problems()), "/props/versions/77"); {
		if time.Now().After(deadline) {
			t.Fatalf("problems %v lack the corrupt props", n.store.Problems())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := SetProps(ctx, base, map[string]string{"sql-simple": "true"}); err == nil {
		t.Fatal("SetProps on corrupt props succeeded")
	}
	if err := AlterProps(ctx, base, config.Props{"sql-simple": "true"}); err != nil {
		t.Fatal(err)
	}
	wctx, c := context.WithTimeout(ctx, 10*time.Second)
	defer c()
	if _, err := n.store.Wait(wctx, func(s *Snapshot) bool { return s.Props.Bool("sql-simple") }); err != nil {
		t.Fatal(err)
	}
}

func TestStaleActiveVersionIsIgnored(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	s := newStore(repo, nil)
	node := "/metadata/db/data_sources/units/u"
	d := newDraft(s.Current())
	ev := func(key, val string) registry.Event {
		return registry.Event{Type: registry.EventPut, KV: registry.KV{Key: key, Value: []byte(val), Version: 1}}
	}
	s.ap.apply(ctx, d, []registry.Event{
		ev(paths.Version(node, 1), "url: jdbc:sqlite:/one\n"),
		ev(paths.ActiveVersion(node), "1"),
		ev(paths.Version(node, 2), "url: jdbc:sqlite:/two\n"),
		ev(paths.ActiveVersion(node), "2"),
	}, false)
	var units []string
	for _, c := range d.changes {
		if c.Kind == paths.KindUnit {
			units = append(units, c.Name)
		}
	}
	if got := d.s.Databases["db"].Units["u"].URL; got != "jdbc:sqlite:/two" || len(units) != 1 {
		t.Fatalf("url %s after %d unit changes; the stale active_version 1 must be dropped", got, len(units))
	}
}

func TestRuleItemsRoundTrip(t *testing.T) {
	db, _ := exampleConfig(t).Database("sharding_db")
	for _, r := range db.Rules {
		content := map[string]any{}
		items, _ := ruleItems(paths.DefaultLayout, r)
		for _, it := range items {
			var err error
			content, err = applyRuleItem(r.Type, content, it.Item, it.Name, it.Value, false)
			if err != nil {
				t.Fatal(err)
			}
		}
		up, _ := upstreamRule(paths.DefaultLayout, r)
		if !reflect.DeepEqual(content, normalise(t, up.Content)) {
			t.Errorf("%s: %#v\nwant %#v", r.Type, content, normalise(t, up.Content))
		}
	}
	if snake("defaultKeyGenerateStrategy") != "default_key_generate_strategy" || camel("default_key_generate_strategy") != "defaultKeyGenerateStrategy" {
		t.Error("name conversion")
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestDatabaseListenerEndInOneBatchWithKeys: keys written under a database
// while a DROP announcement stood, and the announcement's end, reach a node
// in one watch batch (as ZooKeeper can deliver them under load): the
// database comes back whole, with what was written meanwhile.
func TestDatabaseListenerEndInOneBatchWithKeys(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	s := newStore(repo, nil)
	put := func(key, val string) registry.Event {
		if _, err := repo.Put(ctx, key, []byte(val)); err != nil {
			t.Fatal(err)
		}
		return registry.Event{Type: registry.EventPut, KV: registry.KV{Key: key, Value: []byte(val), Version: 1}}
	}
	unit := func(name string) []registry.Event {
		node := "/metadata/up_db/data_sources/units/" + name
		return []registry.Event{
			put(paths.Version(node, 0), "url: jdbc:mysql://127.0.0.1:3306/"+name+"\nusername: root\n"),
			put(paths.ActiveVersion(node), "0"),
		}
	}
	step := func(events ...registry.Event) *Database {
		d := newDraft(s.Current())
		s.ap.apply(ctx, d, events, true)
		s.publish(d)
		return s.Current().Databases["up_db"]
	}
	announcement := "/states/database_listener_coordinator/up_db"
	for _, end := range []string{"CREATE", ""} {
		if db := step(append([]registry.Event{put("/metadata/up_db", "")}, unit("ds_0")...)...); db == nil || len(db.Units) != 1 {
			t.Fatalf("before the announcement: %+v, want up_db with ds_0", db)
		}
		if db := step(put(announcement, "DROP")); db != nil {
			t.Fatalf("DROP not followed: %+v", db)
		}
		ending := put(announcement, end)
		if end == "" {
			if err := repo.Delete(ctx, announcement); err != nil {
				t.Fatal(err)
			}
			ending = registry.Event{Type: registry.EventDelete, KV: registry.KV{Key: announcement}}
		}
		db := step(append(unit("ds_1"), ending)...)
		if db == nil || len(db.Units) != 2 {
			t.Fatalf("announcement ended (%q) in one batch with ds_1's keys: %+v, want up_db with ds_0 and ds_1", end, db)
		}
		if err := repo.Delete(ctx, "/metadata/up_db"); err != nil {
			t.Fatal(err)
		}
		step(registry.Event{Type: registry.EventDelete, KV: registry.KV{Key: "/metadata/up_db"}})
	}
}
