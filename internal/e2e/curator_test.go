package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

var curatorSummary = regexp.MustCompile(`events (\d+) null-events (\d+) keys (\d+) null-keys (\d+)`)

// TestCuratorReadsEveryZnode reads a ZooKeeper namespace with Curator the
// way ShardingSphere's ZookeeperRepository does (testdata/curator): a
// CuratorCache listener started before the node, which takes each event's
// data as upstream's listener does, and a getData of every key at the end,
// as upstream's query does. A node bootstraps a database from its conf
// dir, then IMPORTs one, CREATEs and DROPs one (HTTP API), LOCKs and
// UNLOCKs the cluster and REGISTERs and UNREGISTERs a storage unit (MySQL
// console). No event and no key may carry null data: upstream throws on
// both, and the event is lost.
func TestCuratorReadsEveryZnode(t *testing.T) {
	requireMariaDB(t)
	curator := testenv.Curator(t, "testdata/curator/CuratorRead.java", "CuratorRead")
	servers := registryServers(t, config.RepositoryZooKeeper)
	conf := writeGlobal(t, config.RepositoryZooKeeper, servers, 30, "")
	ctx := testenv.Context(t)
	mode, err := config.LoadMode(ctx, conf)
	if err != nil {
		t.Fatal(err)
	}
	units := t.TempDir()
	unit := func(name string) string { return "jdbc:sqlite:" + filepath.Join(units, name+".db") }
	database := func(name string) string {
		return fmt.Sprintf("databaseName: %s\ndataSources:\n  ds_0:\n    url: %s\nrules:\n- !SHARDING\n  tables:\n    t_order:\n      actualDataNodes: ds_0.t_order_${0..1}\n", name, unit(name))
	}
	if err := os.WriteFile(filepath.Join(conf, "database-boot.yaml"), []byte(database("boot_db")), 0o644); err != nil {
		t.Fatal(err)
	}
	files := t.TempDir() // the node's --distsql-file-dir
	imported := filepath.Join(files, "imported.yaml")
	if err := os.WriteFile(imported, []byte(database("imported_db")), 0o600); err != nil {
		t.Fatal(err)
	}

	// The Curator reader, initialized before the node acts.
	cmd := curator(strings.Join(mode.Repository.ServerLists, ","), mode.Repository.Namespace)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, stderr testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	testenv.Eventually(t, "the Curator reader to be ready", func() bool {
		if strings.Contains(out.String(), "ready") {
			return true
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("CuratorRead exited: %v\n%s%s", err, out.String(), stderr.String())
		default:
		}
		return false
	})

	// The MySQL console for DistSQL, the HTTP API for CREATE and DROP
	// DATABASE.
	t.Setenv("SHARDKEEPER_TOKEN", token)
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	n := startMySQLNode(t, conf, "e2e-curator-1", "127.0.0.1", "--http", httpAddr,
		"--distsql-file-dir", files, "--allow-sqlite-units")
	must := func(statement string) {
		t.Helper()
		if _, errOut, err := mariadb(t, localCmd, "127.0.0.1", n.port, "root", "", statement); err != nil {
			t.Fatalf("%s: %v\n%s", statement, err, errOut)
		}
	}
	must("IMPORT DATABASE CONFIGURATION FROM FILE '" + imported + "'")
	if code := call(t, "POST", "http://"+httpAddr+"/api/v1/databases", `{"name":"created_db"}`, nil); code != 201 {
		t.Fatalf("CREATE DATABASE: %d", code)
	}
	if code := call(t, "DELETE", "http://"+httpAddr+"/api/v1/databases/created_db", "", nil); code != 200 {
		t.Fatalf("DROP DATABASE: %d", code)
	}
	must("LOCK CLUSTER WITH LOCK_STRATEGY(TYPE='WRITE')")
	must("UNLOCK CLUSTER")
	must(fmt.Sprintf("USE boot_db; REGISTER STORAGE UNIT ds_1 (URL='%s', USER='', PASSWORD='')", unit("boot_ds_1")))
	must("USE boot_db; UNREGISTER STORAGE UNIT ds_1")

	// A key written last through a client of our own ends the events the
	// reader waits for; then it reads every key.
	repo, err := connect.Open(ctx, mode.Repository, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	const marker = "/curator_read_done"
	if _, err := repo.Put(ctx, marker, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(stdin, "done %s\n", marker); err != nil {
		t.Fatal(err)
	}
	var exitErr error
	select {
	case exitErr = <-exited:
		exited <- exitErr
	case <-time.After(testenv.Timeout):
		t.Fatalf("CuratorRead did not finish\n%s%s", out.String(), stderr.String())
	}
	m := curatorSummary.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("CuratorRead: %v, no summary\n%s%s", exitErr, out.String(), stderr.String())
	}
	events, _ := strconv.Atoi(m[1])
	keys, _ := strconv.Atoi(m[3])
	t.Logf("Curator: %s", m[0])
	if exitErr != nil || m[2] != "0" || m[4] != "0" {
		t.Fatalf("Curator read null data (upstream throws on each key and loses each event): %v\n%s", exitErr, out.String())
	}
	// What the reader saw is the node's work, not an empty namespace.
	if events < 50 || keys < 30 {
		t.Fatalf("Curator saw %d events and %d keys, too few for a bootstrap, an IMPORT and the rest:\n%s", events, keys, out.String())
	}
}
