package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// TestLayoutAtStart, on real etcd and ZooKeeper, with a tree written in
// the 5.5.4 layout and a registered ShardingSphere 5.5.4 node: a node
// configured with layoutVersion 5.5.3 refuses to start, naming the node,
// unless allowed explicitly, and then shows in its status that the node
// does not load its layout; a node without layoutVersion writes the
// tree's layout, which the registered node loads.
func TestLayoutAtStart(t *testing.T) {
	for name, repoConf := range realRepositories {
		t.Run(name, func(t *testing.T) {
			ctx := testenv.Context(t)
			rc := repoConf(t)
			repo := keyedTree(ctx, t, rc, paths.Layout554)
			sess, err := repo.NewSession(ctx, registry.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close(context.WithoutCancel(ctx))
			online, _ := paths.Online(paths.Proxy, "ss-554")
			if err := sess.PutEphemeral(ctx, online, []byte("attribute: 127.0.0.1@3307\ndatabaseName: ''\nversion: 5.5.4\n")); err != nil {
				t.Fatal(err)
			}

			configured := rc
			configured.Layout, configured.LayoutSet = paths.Layout553, true
			_, err = Start(ctx, Config{Repository: configured, Node: cluster.Config{InstanceID: "layout-refused"}})
			var mismatch *metadata.LayoutMismatchError
			if !errors.As(err, &mismatch) || !strings.Contains(err.Error(), "ss-554") || !strings.Contains(err.Error(), "5.5.4") || !strings.Contains(err.Error(), "--allow-layout-mismatch") {
				t.Fatalf("start with layoutVersion 5.5.3 next to a 5.5.4 node: %v, want the mismatch naming the node", err)
			}

			d, err := Start(ctx, Config{Repository: configured, Node: cluster.Config{InstanceID: "layout-allowed"}, AllowLayoutMismatch: true,
				HTTP: &HTTPConfig{Addr: "127.0.0.1:0", OpenReads: true}})
			if err != nil {
				t.Fatalf("start with --allow-layout-mismatch: %v", err)
			}
			st := layoutOf(t, d.HTTPAddr)
			if st.Writes != "5.5.3" || st.Reason != "layoutVersion" || strings.Join(st.TreeAtStart, ",") != "5.5.4" ||
				len(st.Readers) != 1 || st.Readers[0].InstanceID != "ss-554" || st.Readers[0].Layout != "5.5.4" || st.Readers[0].ReadsAll {
				t.Fatalf("status layout with the mismatch allowed: %+v", st)
			}
			if err := d.Close(ctx); err != nil {
				t.Fatal(err)
			}

			d, err = Start(ctx, Config{Repository: rc, Node: cluster.Config{InstanceID: "layout-picked"}, HTTP: &HTTPConfig{Addr: "127.0.0.1:0", OpenReads: true}})
			if err != nil {
				t.Fatalf("start without layoutVersion: %v", err)
			}
			defer d.Close(context.WithoutCancel(ctx))
			if d.Layout != (metadata.LayoutChoice{Layout: paths.Layout554, Reason: "tree"}) {
				t.Fatalf("without layoutVersion the node writes %+v, want the tree's 5.5.4", d.Layout)
			}
			if st := layoutOf(t, d.HTTPAddr); st.Writes != "5.5.4" || len(st.Readers) != 1 || !st.Readers[0].ReadsAll {
				t.Fatalf("status layout of the node that picked the tree's: %+v", st)
			}
		})
	}
}

// realRepositories are fresh namespaces of the test environment's etcd
// and ZooKeeper.
var realRepositories = map[string]func(t *testing.T) config.Repository{
	"etcd": etcdRepository,
	"zookeeper": func(t *testing.T) config.Repository {
		zs := zktest.New(t)
		return config.Repository{Type: config.RepositoryZooKeeper, ServerLists: zs.Servers, Namespace: zs.Namespace(t, "sk_daemon_"),
			TimeToLive: 10 * time.Second, ConnectTimeout: 10 * time.Second}
	},
}

// keyedTree opens rc and writes database db, unit ds_0, whose sharding
// table t_order has a key generate strategy, in layout's places.
func keyedTree(ctx context.Context, t *testing.T, rc config.Repository, layout paths.Layout) registry.Repository {
	t.Helper()
	repo, err := connect.Open(ctx, rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repo.Close() })
	keyed := config.Rule{Type: "sharding", Content: map[string]any{"tables": map[string]any{"t_order": map[string]any{
		"actualDataNodes": "ds_0.t_order", "keyGenerateStrategy": map[string]any{"column": "order_id", "keyGeneratorName": "snowflake"}}},
		"keyGenerators": map[string]any{"snowflake": map[string]any{"type": "SNOWFLAKE"}}}}
	db := config.Database{Name: "db", DataSources: map[string]config.DataSource{"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", "")},
		Rules: []config.Rule{keyed}}
	if err := metadatatest.CreateDatabase(ctx, repo, layout, db); err != nil {
		t.Fatal(err)
	}
	return repo
}

// layoutStatus is the status document's layout.
type layoutStatus struct {
	Writes      string   `json:"writes"`
	Reason      string   `json:"reason"`
	TreeAtStart []string `json:"treeAtStart"`
	Readers     []struct {
		InstanceID string `json:"instanceId"`
		Layout     string `json:"layout"`
		ReadsAll   bool   `json:"readsAll"`
	} `json:"readers"`
}

func layoutOf(t *testing.T, addr string) layoutStatus {
	t.Helper()
	r, err := http.Get("http://" + addr + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var doc struct {
		Layout layoutStatus `json:"layout"`
	}
	if err := json.NewDecoder(r.Body).Decode(&doc); err != nil {
		t.Fatalf("status: %d %v", r.StatusCode, err)
	}
	return doc.Layout
}

// TestRunningNodeFollowsAMigration, on real etcd and ZooKeeper: a running
// node without layoutVersion, writing 5.5.3, migrates the tree to 5.5.4
// through its API, then writes 5.5.4: its status says so, and a rule it
// changes afterwards keeps the tree wholly in the 5.5.4 layout.
func TestRunningNodeFollowsAMigration(t *testing.T) {
	for name, repoConf := range realRepositories {
		t.Run(name, func(t *testing.T) {
			ctx := testenv.Context(t)
			rc := repoConf(t)
			repo := keyedTree(ctx, t, rc, paths.Layout553)
			const token = "layout-token"
			d, err := Start(ctx, Config{Repository: rc, Node: cluster.Config{InstanceID: "layout-follows"}, HTTP: &HTTPConfig{Addr: "127.0.0.1:0", Token: token, OpenReads: true}})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close(context.WithoutCancel(ctx))
			if st := layoutOf(t, d.HTTPAddr); st.Writes != "5.5.3" {
				t.Fatalf("before the migration the node writes %+v", st)
			}
			post := func(path, body string) {
				t.Helper()
				req, _ := http.NewRequest("POST", "http://"+d.HTTPAddr+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				r, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				r.Body.Close()
				if r.StatusCode != http.StatusOK {
					t.Fatalf("POST %s %s: %d", path, body, r.StatusCode)
				}
			}
			post("/api/v1/registry/migrate", `{"to":"5.5.4"}`)
			testenv.Eventually(t, "the node to write the migrated layout", func() bool {
				st := layoutOf(t, d.HTTPAddr)
				return st.Writes == "5.5.4" && st.Reason == "migration"
			})
			post("/api/v1/databases/db/rules", `{"statement":"CREATE SHARDING TABLE RULE t_item (DATANODES('ds_0.t_item'), KEY_GENERATE_STRATEGY(COLUMN=item_id, TYPE(NAME='snowflake')))"}`)
			if tree, err := metadata.TreeLayouts(ctx, repo); err != nil || len(tree) != 1 || tree[0] != paths.Layout554 {
				t.Fatalf("after a rule change on the migrated node the tree is in %v %v, want 5.5.4", tree, err)
			}
		})
	}
}
