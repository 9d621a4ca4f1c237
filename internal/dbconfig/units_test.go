package dbconfig

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

func TestStorageUnits(t *testing.T) {
	realtest.Each(t, "sk_dbconfig_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo := open(t)
		dir := importShardingDB(ctx, t, repo)
		snap := func() *metadata.Snapshot { return loadSnapshot(ctx, t, repo) }
		sqlite := func(name string) config.DataSource {
			return config.NewDataSource("jdbc:sqlite:"+filepath.Join(dir, name), "", "")
		}
		code := func(err error) uint16 {
			var e *sqlerr.Error
			if errors.As(err, &e) {
				return e.Code
			}
			t.Helper()
			t.Fatalf("not an *sqlerr.Error: %v", err)
			return 0
		}

		// REGISTER: duplicates and existing names are refused before any
		// connection; an unreachable unit fails the whole statement.
		if _, err := RegisterUnits(ctx, repo, snap(), "sharding_db", []Unit{{"ds_2", sqlite("2.db")}, {"ds_2", sqlite("3.db")}}, false, UnitOptions{}); code(err) != 10104 {
			t.Fatalf("duplicate names: %v", err)
		}
		if _, err := RegisterUnits(ctx, repo, snap(), "sharding_db", []Unit{{"ds_0", sqlite("x.db")}}, false, UnitOptions{}); code(err) != 10104 {
			t.Fatalf("existing name: %v", err)
		}
		var unknown *UnknownDatabaseError
		if _, err := RegisterUnits(ctx, repo, snap(), "no_db", []Unit{{"ds_9", sqlite("x.db")}}, false, UnitOptions{}); !errors.As(err, &unknown) || unknown.Name != "no_db" {
			t.Fatalf("no database: %v", err)
		}
		testenv.TCPRefused(t, "127.0.0.1:1")
		before := dump(t, repo)
		bad := config.NewDataSource("jdbc:mysql://127.0.0.1:1/nothing", "root", "")
		if _, err := RegisterUnits(ctx, repo, snap(), "sharding_db", []Unit{{"ds_2", sqlite("2.db")}, {"ds_3", bad}}, false, UnitOptions{}); code(err) != 10110 {
			t.Fatalf("unreachable unit: %v", err)
		}
		if after := dump(t, repo); !reflect.DeepEqual(before, after) {
			t.Fatal("a refused REGISTER wrote")
		}
		got, err := RegisterUnits(ctx, repo, snap(), "sharding_db", []Unit{{"ds_0", sqlite("x.db")}, {"ds_2", sqlite("2.db")}, {"ds_3", sqlite("3.db")}}, true, UnitOptions{})
		if err != nil || !reflect.DeepEqual(got, []string{"ds_2", "ds_3"}) {
			t.Fatalf("REGISTER IF NOT EXISTS = %v, %v", got, err)
		}
		if u := snap().Databases["sharding_db"].Units; len(u) != 4 || !u["ds_2"].Equal(sqlite("2.db")) {
			t.Fatalf("units after REGISTER: %v", u)
		}

		// ALTER: the pool may change, not what the unit points to.
		bigger := sqlite("2.db")
		bigger.MaxPoolSize = 7
		if err := AlterUnits(ctx, repo, snap(), "sharding_db", []Unit{{"ds_2", bigger}}, UnitOptions{}); err != nil {
			t.Fatal(err)
		}
		if u := snap().Databases["sharding_db"].Units["ds_2"]; u.MaxPoolSize != 7 {
			t.Fatalf("ALTER did not apply: %v", u)
		}
		if err := AlterUnits(ctx, repo, snap(), "sharding_db", []Unit{{"ds_2", sqlite("elsewhere.db")}}, UnitOptions{}); code(err) != 10111 {
			t.Fatalf("ALTER to another database: %v", err)
		}
		if err := AlterUnits(ctx, repo, snap(), "sharding_db", []Unit{{"ds_9", sqlite("9.db")}}, UnitOptions{}); code(err) != 10102 {
			t.Fatalf("ALTER of a missing unit: %v", err)
		}

		// UNREGISTER: units in use by the sharding rule (and, unless
		// ignored, by the broadcast rule) stay.
		if _, err := UnregisterUnits(ctx, repo, snap(), "sharding_db", []string{"ds_1"}, false, false, false); code(err) != 10103 {
			t.Fatalf("unit used by the sharding rule: %v", err)
		}
		if _, err := UnregisterUnits(ctx, repo, snap(), "sharding_db", []string{"ds_3"}, false, false, false); code(err) != 10103 {
			t.Fatalf("unit used by broadcast tables: %v", err)
		}
		if _, err := UnregisterUnits(ctx, repo, snap(), "sharding_db", []string{"ds_9"}, false, false, true); code(err) != 10102 {
			t.Fatalf("missing unit: %v", err)
		}
		gone, err := UnregisterUnits(ctx, repo, snap(), "sharding_db", []string{"ds_3", "ds_9"}, true, false, true)
		if err != nil || !reflect.DeepEqual(gone, []string{"ds_3"}) {
			t.Fatalf("UNREGISTER IF EXISTS ... IGNORE BROADCAST TABLES = %v, %v", gone, err)
		}
		if _, ok := snap().Databases["sharding_db"].Units["ds_3"]; ok {
			t.Fatal("ds_3 still registered")
		}
	})
}
