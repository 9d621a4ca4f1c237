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
