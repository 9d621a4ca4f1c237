package metadata

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// TestDropDatabaseRemovesStatistics: statistics ShardingSphere's Proxy
// collected for a database go with the database, through DropDatabase
// and through the Coordinator (DROP DATABASE of the console and the HTTP
// API), on real etcd and ZooKeeper; those of a database whose name it
// prefixes stay. Upstream leaves them behind (apache/shardingsphere#32407).
func TestDropDatabaseRemovesStatistics(t *testing.T) {
	for _, b := range realBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := testenv.Context(t)
			w := b.open(t)
			sess, err := w.NewSession(ctx, registry.SessionOptions{TTL: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sess.Close(context.Background()) })
			ds := config.NewDataSource("jdbc:sqlite:/tmp/x.db", "", "")
			statistics := func(db string) {
				put(t, w, paths.StatisticsRoot+"/"+db+"/schemas/public/tables/t_order/uk_1", "uniqueKey: uk_1\nrows:\n- 1\n")
			}
			left := func() []string {
				kvs, err := w.List(ctx, paths.StatisticsRoot)
				if err != nil {
					t.Fatal(err)
				}
				var dbs []string
				for _, kv := range kvs {
					if k, ok := paths.ParseStatistics(kv.Key); ok && !slices.Contains(dbs, k.Database) {
						dbs = append(dbs, k.Database)
					}
				}
				return dbs
			}
			statistics("stats_db10")
			for _, drop := range []struct {
				name string
				fn   func(db string) error
			}{
				{"Coordinator", func(db string) error {
					return Coordinator{Repo: w, Session: sess, Layout: paths.Layout553}.DropDatabase(ctx, db)
				}},
			} {
				if err := CreateDatabase(ctx, w, paths.Layout553, config.Database{Name: "stats_db", DataSources: map[string]config.DataSource{"ds": ds}}); err != nil {
					t.Fatal(err)
				}
				statistics("stats_db")
				if got := left(); !slices.Equal(got, []string{"stats_db", "stats_db10"}) {
					t.Fatalf("statistics before the drop: %v", got)
				}
				if err := drop.fn("stats_db"); err != nil {
					t.Fatalf("%s: %v", drop.name, err)
				}
				if got := left(); !slices.Equal(got, []string{"stats_db10"}) {
					t.Fatalf("after %s of stats_db, statistics of %v are left, want only stats_db10's", drop.name, got)
				}
			}
		})
	}
}
