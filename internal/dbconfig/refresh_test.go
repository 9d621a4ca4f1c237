package dbconfig

import (
	"path/filepath"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

func TestRefresh(t *testing.T) {
	realtest.Each(t, "sk_dbconfig_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo := open(t)
		dir := importShardingDB(ctx, t, repo)
		exec := func(unit, file, sql string) {
			t.Helper()
			db, err := datasource.Open(ctx, unit, config.NewDataSource("jdbc:sqlite:"+filepath.Join(dir, file), "", ""))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(ctx, sql); err != nil {
				t.Fatal(err)
			}
		}
		snap := func() *metadata.Snapshot { return loadSnapshot(ctx, t, repo) }
		refresh := func(force bool) Refreshed {
			t.Helper()
			out, err := Refresh(ctx, repo, paths.DefaultLayout, snap(), "sharding_db", force, nil)
			if err != nil || len(out) != 1 {
				t.Fatalf("Refresh = %v, %v", out, err)
			}
			return out[0]
		}
		exec("ds_0", "ds0.db", "CREATE TABLE t_order_0 (order_id BIGINT PRIMARY KEY, user_id INT)")
		exec("ds_1", "ds1.db", "CREATE TABLE t_user (id BIGINT PRIMARY KEY)")
		if r := refresh(false); r.Written != 2 || r.Dropped != 0 {
			t.Fatalf("first refresh: %+v", r)
		}
		if tb, ok := snap().Table("sharding_db", "sharding_db", "t_order_0"); !ok || len(tb.Columns) != 2 {
			t.Fatalf("t_order_0 after refresh: %+v %v", tb, ok)
		}
		if r := refresh(false); r.Written != 0 || r.Dropped != 0 {
			t.Fatalf("refresh without changes wrote: %+v", r)
		}
		exec("ds_0", "ds0.db", "ALTER TABLE t_order_0 ADD COLUMN status VARCHAR(16)")
		exec("ds_1", "ds1.db", "DROP TABLE t_user")
		if r := refresh(false); r.Written != 1 || r.Dropped != 1 {
			t.Fatalf("refresh after ALTER and DROP: %+v", r)
		}
		if tb, _ := snap().Table("sharding_db", "sharding_db", "t_order_0"); len(tb.Columns) != 3 {
			t.Fatalf("t_order_0 columns after ALTER: %+v", tb.Columns)
		}
		if _, ok := snap().Table("sharding_db", "sharding_db", "t_user"); ok {
			t.Fatal("t_user still in the registry")
		}
		if r := refresh(true); r.Written != 1 {
			t.Fatalf("FORCE refresh: %+v", r)
		}
		if _, err := Refresh(ctx, repo, paths.DefaultLayout, snap(), "no_db", false, nil); err == nil {
			t.Fatal("refresh of an unknown database succeeded")
		}
	})
}
