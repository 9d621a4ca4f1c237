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
