package dbconfig

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestWarnBeyondBounds: a node logs one warning naming the database when
// a sharding rule beyond the name bounds appears in the registry (written
// by another node), none for a rule within them.
func TestWarnBeyondBounds(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	store, err := metadata.Bootstrap(ctx, repo, nil, nil, metadata.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = store.Run(runCtx) }()
	defer func() { stop(); <-done }()
	var logged testenv.SyncBuffer
	defer WarnBeyondBounds(store, slog.New(slog.NewTextHandler(&logged, nil)))()

	create := func(name string, tables int) {
		t.Helper()
		content := map[string]any{}
		for i := range tables {
			content[fmt.Sprintf("t%d", i)] = map[string]any{"actualDataNodes": "ds_${0..1}.t_${0..4999}"}
		}
		if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: name,
			DataSources: map[string]config.DataSource{"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", "")},
			Rules:       []config.Rule{{Type: "sharding", Content: map[string]any{"tables": content}}}}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the node to load "+name, func() bool { return store.Current().Databases[name] != nil })
	}
	create("within", 10)
	create("beyond", 11)
	testenv.Eventually(t, "the warning", func() bool { return strings.Contains(logged.String(), "database=beyond") })
	if got := logged.String(); strings.Count(got, "level=WARN") != 1 || !strings.Contains(got, "110000 names, more than the 100000 one rule may") {
		t.Errorf("log:\n%s\nwant one warning for database beyond naming its 110000 names", got)
	}
}

// TestUnitsInUseOfARuleBeyondTheBounds: the units a sharding rule beyond
// the bounds uses (30 auto tables of 10,000 storage units each, 300,000
// names, as a node without the bounds may write it) are every unit its
// tables could name, tables past the rule's budget of 100,000 names as
// well as those within it, and no other. At most that budget of names is
// built: a name costs about three allocations (the name, its entry in the
// count), so the count stays under 500,000 allocations where building all
// 300,000 names costs about 900,000.
func TestUnitsInUseOfARuleBeyondTheBounds(t *testing.T) {
	auto := map[string]any{}
	for i := range 30 {
		auto[fmt.Sprintf("t_%02d", i)] = map[string]any{"actualDataSources": fmt.Sprintf("u_%02d_${0..9999}", i)}
	}
	d := &metadata.Database{
		Name:  "big_db",
		Units: map[string]config.DataSource{"u_00_7": {}, "u_29_123": {}, "other": {}},
		Rules: map[string]config.Rule{"sharding": {Type: "sharding", Content: map[string]any{"autoTables": auto}}},
	}
	used := UnitsInUse(d, false, false)
	for _, u := range []string{"u_00_7", "u_29_123"} {
		if len(used[u]) != 1 || used[u][0] != "ShardingRule" {
			t.Errorf("%s: used by %v, want ShardingRule", u, used[u])
		}
	}
	if len(used["other"]) != 0 {
		t.Errorf("other: used by %v, want nothing", used["other"])
	}
	if allocs := testing.AllocsPerRun(1, func() { UnitsInUse(d, false, false) }); allocs > 500_000 {
		t.Errorf("the usage count allocated %.0f times: more names were built than the rule's budget", allocs)
	}
}

// TestWarnBeyondBoundsFollowsTables: a rule within the bounds that one
// table added by another node (its item alone, as CREATE SHARDING TABLE
// RULE writes it) takes beyond them is warned about; once that table is
// dropped it is within them again, and the same table added again warns
// again. Every other change in between (a table within the bounds, a
// unit) warns about nothing.
func TestWarnBeyondBoundsFollowsTables(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	store, err := metadata.Bootstrap(ctx, repo, nil, nil, metadata.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = store.Run(runCtx) }()
	defer func() { stop(); <-done }()
	tables := map[string]any{}
	for i := range 10 {
		tables[fmt.Sprintf("t%d", i)] = map[string]any{"actualDataNodes": "ds_${0..1}.t_${0..4999}"}
	}
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "db",
		DataSources: map[string]config.DataSource{"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", "")},
		Rules:       []config.Rule{{Type: "sharding", Content: map[string]any{"tables": tables}}}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the node to load db", func() bool { return store.Current().Databases["db"] != nil })
	var logged testenv.SyncBuffer
	defer WarnBeyondBounds(store, slog.New(slog.NewTextHandler(&logged, nil)))()
	// item writes or deletes the items of the sharding rule of db that
	// content stands for, in one transaction, and waits for the node to
	// apply them.
	item := func(content map[string]any, del bool) {
		t.Helper()
		kvs, err := metadata.DatabaseWrites(paths.DefaultLayout, config.Database{Name: "db", Rules: []config.Rule{{Type: "sharding", Content: content}}})
		if err != nil {
			t.Fatal(err)
		}
		var conds []registry.Cond
		var ops []registry.Op
		for _, kv := range kvs[1:] {
			cond := registry.Cond{Key: kv.Key}
			if del {
				cur, err := repo.Get(ctx, kv.Key)
				if err != nil {
					t.Fatal(err)
				}
				cond.Version = cur.Version
			}
			conds = append(conds, cond)
			ops = append(ops, registry.Op{Key: kv.Key, Value: kv.Value, Delete: del})
		}
		seq := store.Current().Seq
		if err := metadatatest.Commit(ctx, repo, conds, ops); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the node to apply the change", func() bool { return store.Current().Seq > seq })
	}
	within := map[string]any{"tables": map[string]any{"t_within": map[string]any{"actualDataNodes": "ds_0.t_within"}}}
	beyond := map[string]any{"tables": map[string]any{"t_beyond": map[string]any{"actualDataNodes": "ds_0.t_beyond"}}}
	steps := []struct {
		content map[string]any
		del     bool
		warned  int // warnings logged so far
	}{
		{beyond, false, 1}, // 100,001 names
		{within, false, 1},
		{beyond, true, 1}, // 100,001 again
		{within, true, 1}, // 100,000: within
		{beyond, false, 2},
	}
	for i, s := range steps {
		item(s.content, s.del)
		// The warner runs after the snapshot is published: a warning
		// too many shows at this step or the next.
		testenv.Eventually(t, fmt.Sprintf("step %d: %d warnings", i, s.warned), func() bool {
			return strings.Count(logged.String(), "level=WARN") == s.warned
		})
	}
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "other"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the node to load other", func() bool { return store.Current().Databases["other"] != nil })
	if got := strings.Count(logged.String(), "level=WARN"); got != 2 {
		t.Fatalf("%d warnings after another database came, want 2; log:\n%s", got, logged.String())
	}
	if got := logged.String(); !strings.Contains(got, "database=db") || !strings.Contains(got, "100001 names") {
		t.Errorf("log:\n%s\nwant warnings for database db naming its 100001 names", got)
	}
}
