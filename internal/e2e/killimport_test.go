package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// bigTables is how many tables the imported database has.
const bigTables = 500

// TestKillDuringImport kills a node with SIGKILL while it IMPORTs a
// database of 500 tables (a SQLite unit), on real etcd and ZooKeeper, once
// some tables and not all are in the registry. Every active_version in the
// namespace then names a version that exists (ShardingSphere can leave one
// naming a missing version, apache/shardingsphere#37821), and the node
// starts again on that registry and serves the partial database. The
// import commits batches in order, each version before its active_version
// (with the order reversed this test fails).
func TestKillDuringImport(t *testing.T) {
	requireMariaDB(t)
	unitFile := filepath.Join(t.TempDir(), "big.db")
	db, err := datasource.Open(testenv.Context(t), "big", config.NewDataSource("jdbc:sqlite:"+unitFile, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	var ddl strings.Builder
	for i := range bigTables {
		fmt.Fprintf(&ddl, "CREATE TABLE t_%03d (id INTEGER PRIMARY KEY, name VARCHAR(32), amount DECIMAL(10,2));\n", i)
	}
	if _, err := db.ExecContext(testenv.Context(t), ddl.String()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	files := t.TempDir() // the node's --distsql-file-dir
	imported := filepath.Join(files, "big.yaml")
	yaml := fmt.Sprintf("databaseName: big_db\ndataSources:\n  ds_0:\n    url: jdbc:sqlite:%s\nrules:\n- !SHARDING\n  tables:\n    t_000:\n      actualDataNodes: ds_0.t_000\n", unitFile)
	if err := os.WriteFile(imported, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}

	eachRegistry(t, func(t *testing.T, typ string) {
		cl := startCluster(t, typ, 1, clusterOptions{prefix: "e2e-kill", mysql: true, ttl: 10,
			extra: []string{"--distsql-file-dir", files, "--allow-sqlite-units"}})
		n, repo := cl.mysql[0], cl.repo
		tables := func() int {
			t.Helper()
			kvs, err := repo.List(testenv.Context(t), "/metadata/big_db/schemas")
			if err != nil {
				t.Fatal(err)
			}
			count := 0
			for _, kv := range kvs {
				if k, ok := paths.ParseKey(kv.Key); ok && k.Kind == paths.KindTable && k.Leaf == paths.ActiveVersionName {
					count++
				}
			}
			return count
		}
		client := localCmd("mariadb", "--protocol=TCP", "-h", "127.0.0.1", "-P", fmt.Sprint(n.port), "-u", "root", "--batch",
			"-e", "IMPORT DATABASE CONFIGURATION FROM FILE '"+imported+"'")
		var clientOut testenv.SyncBuffer
		client.Stdout, client.Stderr = &clientOut, &clientOut
		if err := client.Start(); err != nil {
			t.Fatal(err)
		}
		clientDone := make(chan error, 1)
		go func() { clientDone <- client.Wait() }()
		// Kill once the tables are being written.
		deadline := time.Now().Add(testenv.Timeout)
		for tables() == 0 {
			select {
			case err := <-clientDone:
				t.Fatalf("IMPORT ended before any table was written: %v\n%s", err, clientOut.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no table written in %v", testenv.Timeout)
			}
			time.Sleep(2 * time.Millisecond)
		}
		if err := n.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-n.done
		n.done <- errors.New("killed")
		atKill := tables()
		if err := <-clientDone; err == nil {
			t.Logf("the client reported success: %s", clientOut.String())
		}
		t.Logf("%s: killed with %d of %d tables active", typ, atKill, bigTables)
		if atKill >= bigTables {
			t.Fatalf("the node wrote all %d tables before SIGKILL: not killed in the middle", bigTables)
		}
		checkActiveVersions(t, repo)

		// The node starts again on what it left.
		again := startMySQLNode(t, cl.conf, n.id, "127.0.0.1")
		if _, stderr, err := mariadb(t, localCmd, "127.0.0.1", again.port, "root", "", "SHOW STORAGE UNITS FROM big_db"); err != nil {
			t.Errorf("after the restart: %v\n%s", err, stderr)
		}
		checkActiveVersions(t, repo)
	})
}

// checkActiveVersions fails t for each active_version in the namespace
// that does not name an existing version of its node.
func checkActiveVersions(t *testing.T, repo registry.Repository) {
	t.Helper()
	kvs, err := repo.List(testenv.Context(t), "/")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, kv := range kvs {
		keys[kv.Key] = true
	}
	active := 0
	for _, kv := range kvs {
		node, ok := strings.CutSuffix(kv.Key, "/"+paths.ActiveVersionName)
		if !ok {
			continue
		}
		active++
		if v := node + "/" + paths.VersionsName + "/" + string(kv.Value); !keys[v] {
			t.Errorf("%s = %q names %s, which does not exist", kv.Key, kv.Value, v)
		}
	}
	t.Logf("%d active versions checked", active)
}
