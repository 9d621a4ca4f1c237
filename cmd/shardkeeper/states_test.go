package main

import (
	"context"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
)

// TestSharedStateOnRegistry runs readwrite-splitting, statistics and
// databases create/drop with --conf against real etcd and ZooKeeper.
func TestSharedStateOnRegistry(t *testing.T) {
	for _, reg := range realRegistries(t) {
		t.Run(reg.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			conf := clusterConf(t, reg, "sk_state_", "", nil)
			repo := openConf(ctx, t, conf, "/nodes", "/metadata", "/statistics", "/states")
			ds := config.NewDataSource("jdbc:mysql://127.0.0.1:3306/x", "root", "")
			if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "rw_db",
				DataSources: map[string]config.DataSource{"write_ds": ds, "read_ds_0": ds},
				Rules: []config.Rule{{Type: "readwrite_splitting", Content: map[string]any{"dataSourceGroups": map[string]any{
					"readwrite_ds": map[string]any{"writeDataSourceName": "write_ds", "readDataSourceNames": []any{"read_ds_0"}}}}}},
			}); err != nil {
				t.Fatal(err)
			}
			cli := cliExpect(t, "--conf", conf)
			cli(0, "rw_db readwrite_ds read_ds_0 ENABLED true", "readwrite-splitting", "status")
			cli(0, "read data source rw_db.readwrite_ds.read_ds_0 disabled (state DISABLED)", "readwrite-splitting", "disable", "rw_db", "READWRITE_DS", "read_ds_0")
			kv, err := repo.Get(ctx, "/nodes/qualified_data_sources/rw_db.readwrite_ds.read_ds_0")
			if err != nil || string(kv.Value) != "state: DISABLED\n" {
				t.Fatalf("registry: %q %v", kv.Value, err)
			}
			cli(0, "rw_db readwrite_ds read_ds_0 DISABLED true", "rw", "status")
			cli(1, "Invalid storage unit status, error message is: storage unit is already disabled. (code 10120)", "rw", "disable", "rw_db", "readwrite_ds", "read_ds_0")
			cli(1, "Can not find readwrite-splitting READ data source 'write_ds' in database.data_source_rule: 'rw_db'.'readwrite_ds'. (code 20203)", "rw", "disable", "rw_db", "readwrite_ds", "write_ds")
			cli(1, "Unknown database 'nope'.", "rw", "enable", "nope", "g", "u")
			cli(2, "usage: shardkeeper readwrite-splitting enable DATABASE GROUP STORAGE_UNIT", "rw", "enable", "rw_db")
			cli(0, "read data source rw_db.readwrite_ds.read_ds_0 enabled (state ENABLED)", "rw", "enable", "rw_db", "readwrite_ds", "read_ds_0")

			if _, err := repo.Put(ctx, "/statistics/databases/shardingsphere/schemas/shardingsphere/tables/sharding_table_statistics/k1",
				[]byte("rows:\n- 1\n- sharding_db\nuniqueKey: k1\n")); err != nil {
				t.Fatal(err)
			}
			cli(0, `shardingsphere shardingsphere sharding_table_statistics k1 [1,"sharding_db"]`, "statistics", "show")
			cli(0, `"uniqueKey": "k1"`, "statistics", "show", "shardingsphere", "-o", "json")

			cli(0, "database new_db created", "databases", "create", "new_db")
			cli(0, "new_db 0 0", "databases", "list")
			cli(1, "Database 'new_db' already exists.", "databases", "create", "new_db")
			cli(0, "database new_db dropped", "databases", "drop", "new_db")
			cli(1, "Unknown database 'new_db'.", "databases", "drop", "new_db")
			if _, err := repo.Get(ctx, "/states/database_listener_coordinator/new_db"); err == nil {
				t.Error("the announcement is left behind")
			}
		})
	}
}
