package e2e

import (
	"context"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// TestReadDataSourceStateThreeDaemons: three `serve` processes on one
// namespace of real etcd and of real ZooKeeper load a database with a
// readwrite-splitting group; a read data source disabled through node 1's
// API is seen by every node, and the registry holds it as ShardingSphere's
// QualifiedDataSourceStatePersistService writes it.
func TestReadDataSourceStateThreeDaemons(t *testing.T) {
	eachRegistry(t, func(t *testing.T, typ string) {
		cl := startCluster(t, typ, 3, clusterOptions{prefix: "rw-node", port: 3300, ttl: 10,
			seed: func(ctx context.Context, repo registry.Repository) {
				t.Cleanup(func() { // after the nodes stopped, before the close
					for _, p := range []string{"/metadata", "/nodes", "/reservation", "/rules", "/props", "/states"} {
						_ = repo.Delete(context.Background(), p)
					}
				})
				ds := config.NewDataSource("jdbc:mysql://127.0.0.1:3306/test", "root", "")
				if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "rw_db",
					DataSources: map[string]config.DataSource{"write_ds": ds, "read_ds_0": ds, "read_ds_1": ds},
					Rules: []config.Rule{{Type: "readwrite_splitting", Content: map[string]any{"dataSourceGroups": map[string]any{
						"readwrite_ds": map[string]any{"writeDataSourceName": "write_ds", "readDataSourceNames": []any{"read_ds_0", "read_ds_1"}}}}}},
				}); err != nil {
					t.Fatal(err)
				}
			}})
		ctx, repo, procs := testenv.Context(t), cl.repo, cl.procs
		type row struct {
			Database, Group, StorageUnit, State string
		}
		state := func(p *proc, unit string) string {
			var v struct {
				DataSources []row `json:"dataSources"`
			}
			call(t, "GET", p.url+"/api/v1/readwrite-splitting/states", "", &v)
			for _, r := range v.DataSources {
				if r.Database == "rw_db" && r.Group == "readwrite_ds" && r.StorageUnit == unit {
					return r.State
				}
			}
			return ""
		}
		for _, p := range procs {
			testenv.Eventually(t, p.id+" sees read_ds_1 enabled", func() bool { return state(p, "read_ds_1") == "ENABLED" })
		}
		var r row
		if code := call(t, "PUT", procs[0].url+"/api/v1/readwrite-splitting/rw_db/readwrite_ds/read_ds_1/state", `{"state":"DISABLE"}`, &r); code != 200 || r.State != "DISABLED" {
			t.Fatalf("DISABLE: %d %+v", code, r)
		}
		for _, p := range procs {
			testenv.Eventually(t, p.id+" sees read_ds_1 disabled", func() bool { return state(p, "read_ds_1") == "DISABLED" })
			if got := state(p, "read_ds_0"); got != "ENABLED" {
				t.Errorf("%s: read_ds_0 %s", p.id, got)
			}
		}
		kv, err := repo.Get(ctx, "/nodes/qualified_data_sources/rw_db.readwrite_ds.read_ds_1")
		if err != nil || string(kv.Value) != "state: DISABLED\n" {
			t.Fatalf("registry: %q %v, want ShardingSphere's %q", kv.Value, err, "state: DISABLED\n")
		}
		if code := call(t, "PUT", procs[2].url+"/api/v1/readwrite-splitting/rw_db/readwrite_ds/read_ds_1/state", `{"state":"DISABLE"}`, nil); code != 409 {
			t.Errorf("DISABLE again on node 3: %d, want 409", code)
		}
	})
}
