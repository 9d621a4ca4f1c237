package httpapi

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

// threeClients opens three clients of open's namespace.
func threeClients(t *testing.T, open func(t testing.TB) registry.Repository) (r [3]registry.Repository) {
	for i := range r {
		r[i] = open(t)
	}
	return r
}

// rwDatabase is a logical database with one readwrite-splitting group.
func rwDatabase() config.Database {
	ds := func(n string) config.DataSource {
		return config.NewDataSource("jdbc:mysql://127.0.0.1:3306/"+n, "root", "")
	}
	return config.Database{
		Name:        "rw_db",
		DataSources: map[string]config.DataSource{"write_ds": ds("write_ds"), "read_ds_0": ds("read_ds_0"), "read_ds_1": ds("read_ds_1")},
		Rules: []config.Rule{{Type: "readwrite_splitting", Content: map[string]any{
			"dataSourceGroups": map[string]any{"readwrite_ds": map[string]any{
				"writeDataSourceName": "write_ds", "readDataSourceNames": []any{"read_ds_0", "read_ds_1"}}},
		}}},
	}
}

func states(t *testing.T, n *testNode) map[string]string {
	t.Helper()
	r := get(t, n, "/api/v1/readwrite-splitting/states")
	if r.status != 200 {
		t.Fatalf("GET states: %d %s", r.status, r.body)
	}
	var v struct {
		DataSources []dataSourceState `json:"dataSources"`
	}
	r.json(t, &v)
	out := map[string]string{}
	for _, d := range v.DataSources {
		out[d.Database+"."+d.Group+"."+d.StorageUnit] = d.State
	}
	return out
}

// TestDataSourceStateSeenByThreeNodes: a
// qualified data source state changed through the API of one node is seen
// by three nodes on one real registry, and the registry holds it in
// ShardingSphere's format, byte for byte what ShardingSphere's YAML
// swapper writes (SnakeYAML's dumpAsMap of a YamlQualifiedDataSourceState
// mirror), which loads back there.
func TestDataSourceStateSeenByThreeNodes(t *testing.T) {
	yamlJava := testenv.SnakeYAML(t, "testdata/snakeyaml/QualifiedDataSourceStateYaml.java", "QualifiedDataSourceStateYaml")
	upstream := func(args ...string) string {
		t.Helper()
		out, err := yamlJava(args...).CombinedOutput()
		if err != nil {
			t.Fatalf("QualifiedDataSourceStateYaml %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	realtest.Each(t, "sk_qds_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repos := threeClients(t, open)
		if err := metadatatest.CreateDatabase(ctx, repos[0], paths.DefaultLayout, rwDatabase()); err != nil {
			t.Fatal(err)
		}
		var nodes [3]*testNode
		for i := range nodes {
			nodes[i] = startNode(t, repos[i], "qds-"+string(rune('a'+i)), nil)
		}
		const q = "rw_db.readwrite_ds.read_ds_1"
		for _, n := range nodes {
			if got := states(t, n); len(got) != 2 || got[q] != "ENABLED" || got["rw_db.readwrite_ds.read_ds_0"] != "ENABLED" {
				t.Fatalf("states before: %v", got)
			}
		}
		r := put(t, nodes[0], "/api/v1/readwrite-splitting/rw_db/readwrite_ds/read_ds_1/state", `{"state":"DISABLE"}`)
		if r.status != 200 || !strings.Contains(string(r.body), `"state":"DISABLED"`) {
			t.Fatalf("DISABLE: %d %s", r.status, r.body)
		}
		for i, n := range nodes {
			testenv.Eventually(t, "node "+string(rune('a'+i))+" to see read_ds_1 disabled", func() bool { return states(t, n)[q] == "DISABLED" })
		}
		kv, err := repos[2].Get(ctx, paths.QualifiedDataSourcesRoot+"/"+q)
		if err != nil {
			t.Fatal(err)
		}
		if want := upstream("dump", "DISABLED"); string(kv.Value) != want {
			t.Errorf("registry holds %q, ShardingSphere writes %q", kv.Value, want)
		}
		file := filepath.Join(t.TempDir(), "state.yaml")
		if err := os.WriteFile(file, kv.Value, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(upstream("load", file)); got != "DISABLED" {
			t.Errorf("SnakeYAML loads %q, want DISABLED", got)
		}

		// ShardingSphere's checks, on another node.
		p := "/api/v1/readwrite-splitting/"
		put(t, nodes[1], p+"rw_db/readwrite_ds/read_ds_1/state", `{"state":"DISABLE"}`).apiError(t, 409, 10120, "storage unit is already disabled")
		put(t, nodes[1], p+"rw_db/readwrite_ds/read_ds_0/state", `{"state":"ENABLE"}`).apiError(t, 409, 10120, "storage unit is not disabled")
		put(t, nodes[1], p+"rw_db/readwrite_ds/write_ds/state", `{"state":"DISABLE"}`).apiError(t, 404, 20203, "Can not find readwrite-splitting READ data source 'write_ds'")
		put(t, nodes[1], p+"rw_db/other/read_ds_0/state", `{"state":"DISABLE"}`).apiError(t, 404, 10202, "Readwrite-splitting rule 'other' do not exist in database 'rw_db'.")
		put(t, nodes[1], p+"no_db/readwrite_ds/read_ds_0/state", `{"state":"DISABLE"}`).apiError(t, 404, 0, "Unknown database 'no_db'.")
		put(t, nodes[1], p+"rw_db/readwrite_ds/read_ds_0/state", `{"state":"OFF"}`).apiError(t, 400, 0, "want ENABLE or DISABLE")
		do(t, nodes[1], "PUT", p+"rw_db/readwrite_ds/read_ds_0/state", "", `{"state":"DISABLE"}`).apiError(t, 401, 0, "")

		r = put(t, nodes[2], p+"RW_DB/x/y/state", `{"state":"ENABLE"}`)
		r.apiError(t, 404, 0, "Unknown database")
		r = put(t, nodes[2], p+"rw_db/READWRITE_DS/read_ds_1/state", `{"state":"ENABLE"}`)
		if r.status != 200 || !strings.Contains(string(r.body), `"group":"readwrite_ds"`) {
			t.Fatalf("ENABLE with the group in upper case: %d %s", r.status, r.body)
		}
		for _, n := range nodes {
			testenv.Eventually(t, "every node to see read_ds_1 enabled", func() bool { return states(t, n)[q] == "ENABLED" })
		}
		kv, _ = repos[0].Get(ctx, paths.QualifiedDataSourcesRoot+"/"+q)
		if want := upstream("dump", "ENABLED"); string(kv.Value) != want {
			t.Errorf("registry holds %q, ShardingSphere writes %q", kv.Value, want)
		}

		// The status page document carries the states.
		var st struct {
			DataSources []dataSourceState `json:"dataSources"`
		}
		get(t, nodes[1], "/api/v1/status").json(t, &st)
		if len(st.DataSources) != 2 || st.DataSources[1].StorageUnit != "read_ds_1" || st.DataSources[1].State != "ENABLED" {
			t.Errorf("status dataSources = %+v", st.DataSources)
		}
	})
}

// TestCreateDropDatabaseAnnounced creates and drops a database through
// one node's API: every node follows, and (on etcd, whose watch misses
// nothing) the database listener coordinator node appears with CREATE,
// then DROP, as ShardingSphere writes them, and is gone afterwards.
func TestCreateDropDatabaseAnnounced(t *testing.T) {
	realtest.Each(t, "sk_qds_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repos := threeClients(t, open)
		var nodes [3]*testNode
		for i := range nodes {
			nodes[i] = startNode(t, repos[i], "cdb-"+string(rune('a'+i)), nil)
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		_, events, err := repos[2].Watch(wctx, paths.DatabaseListenerRoot)
		if err != nil {
			t.Fatal(err)
		}
		r := do(t, nodes[0], "POST", "/api/v1/databases", testToken, `{"name":"new_db"}`)
		if r.status != 201 {
			t.Fatalf("POST databases: %d %s", r.status, r.body)
		}
		for _, n := range nodes {
			testenv.Eventually(t, "every node to see new_db", func() bool { return get(t, n, "/api/v1/databases/new_db").status == 200 })
		}
		do(t, nodes[1], "POST", "/api/v1/databases", testToken, `{"name":"new_db"}`).apiError(t, 409, 0, "Database 'new_db' already exists.")
		do(t, nodes[1], "POST", "/api/v1/databases", testToken, `{"name":"../x"}`).apiError(t, 400, 0, "database name")
		do(t, nodes[1], "POST", "/api/v1/databases", "", `{"name":"y"}`).apiError(t, 401, 0, "")
		r = do(t, nodes[1], "DELETE", "/api/v1/databases/new_db", testToken, "")
		if r.status != 200 {
			t.Fatalf("DELETE new_db: %d %s", r.status, r.body)
		}
		for _, n := range nodes {
			testenv.Eventually(t, "every node to lose new_db", func() bool { return get(t, n, "/api/v1/databases/new_db").status == 404 })
		}
		do(t, nodes[2], "DELETE", "/api/v1/databases/new_db", testToken, "").apiError(t, 404, 0, "Unknown database 'new_db'.")
		if _, err := repos[0].Get(ctx, paths.DatabaseListenerRoot+"/new_db"); err == nil {
			t.Error("the announcement is left behind")
		}
		if _, onEtcd := repos[0].(*etcd.Repo); !onEtcd {
			return
		}
		var seen []string
		deadline := time.After(5 * time.Second)
		for len(seen) < 4 {
			select {
			case ev := <-events:
				seen = append(seen, ev.Type.String()+" "+ev.KV.Key+"="+string(ev.KV.Value))
			case <-deadline:
				t.Fatalf("announcements seen: %q", seen)
			}
		}
		key := paths.DatabaseListenerRoot + "/new_db"
		want := []string{"PUT " + key + "=CREATE", "DELETE " + key + "=", "PUT " + key + "=DROP", "DELETE " + key + "="}
		if strings.Join(seen, "\n") != strings.Join(want, "\n") {
			t.Errorf("announcements\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
		}
	})
}

func TestStatistics(t *testing.T) {
	repo := memory.New()
	n := startNode(t, repo, "stats-node", nil)
	ctx := testenv.Context(t)
	for k, v := range map[string]string{
		"/statistics/databases/shardingsphere/schemas/shardingsphere/tables/sharding_table_statistics/k1": "rows:\n- 1\n- sharding_db\nuniqueKey: k1\n",
		"/statistics/databases/shardingsphere/schemas/shardingsphere/tables/sharding_table_statistics/k2": "rows: {oops",
	} {
		if _, err := repo.Put(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	r := get(t, n, "/api/v1/statistics")
	if r.status != 200 || !strings.Contains(string(r.body), `{"uniqueKey":"k1","rows":[1,"sharding_db"]}`) || !strings.Contains(string(r.body), "k2: not a YamlRowStatistics") {
		t.Fatalf("GET statistics: %d %s", r.status, r.body)
	}
	if r := get(t, n, "/api/v1/statistics?database=other"); r.status != 200 || string(r.body) != "{\"databases\":[]}\n" {
		t.Fatalf("GET statistics of a database without any: %d %s", r.status, r.body)
	}
	get(t, n, "/api/v1/statistics?database=a/b").apiError(t, 400, 0, "database")
}
