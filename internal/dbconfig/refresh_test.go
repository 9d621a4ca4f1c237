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
		// A table named in mixed case is stored under its lower-case node
		// up to 5.5.3 and under its name in 5.5.4; a refresh without
		// changes leaves it alone in both.
		exec("ds_1", "ds1.db", "CREATE TABLE T_Mixed (id BIGINT PRIMARY KEY)")
		for _, c := range []struct {
			layout     paths.Layout
			node, gone string
		}{{paths.Layout553, "t_mixed", "T_Mixed"}, {paths.Layout554, "T_Mixed", "t_mixed"}} {
			for i := range 2 {
				out, err := Refresh(ctx, repo, c.layout, snap(), "sharding_db", false, nil)
				if err != nil || len(out) != 1 {
					t.Fatalf("%s: Refresh = %v, %v", c.layout, out, err)
				}
				if i == 1 && (out[0].Written != 0 || out[0].Dropped != 0) {
					t.Fatalf("%s: refresh without changes: %+v", c.layout, out[0])
				}
			}
			d := snap().Databases["sharding_db"].Schemas["sharding_db"]
			if tb, ok := d.Tables[c.node]; !ok || tb.Name != "T_Mixed" {
				t.Fatalf("%s: node %s = %+v, %v", c.layout, c.node, tb, ok)
			}
			if _, ok := d.Tables[c.gone]; ok {
				t.Fatalf("%s: node %s is still there", c.layout, c.gone)
			}
			if _, ok := snap().Table("sharding_db", "sharding_db", "T_MIXED"); !ok {
				t.Fatalf("%s: T_MIXED not found", c.layout)
			}
		}
	})
}
