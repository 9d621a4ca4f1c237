package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
)

// TestHalfWrittenImportShown: an import that died between its
// transactions (its third fails and nothing after it reaches the registry,
// as when its node is killed) leaves half_db marked; a node on real etcd
// and on real ZooKeeper shows it as incomplete, with the drop and the
// import to run, in SHOW DATABASES over mariadb and psql (a warning), in
// GET /api/v1/databases and on the status page's /api/v1/status; after
// `shardkeeper databases drop half_db` the import, run again over mariadb,
// finishes and nothing is shown any more.
func TestHalfWrittenImportShown(t *testing.T) {
	requireMariaDB(t)
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql not found: scripts/servers.sh installs Debian postgresql-client")
	}
	eachRegistry(t, func(t *testing.T, typ string) {
		dir := t.TempDir()
		yaml := fmt.Sprintf("databaseName: half_db\ndataSources:\n  ds_0:\n    url: jdbc:sqlite:%s\n  ds_1:\n    url: jdbc:sqlite:%s\nrules:\n- !SHARDING\n  tables:\n    t_order:\n      actualDataNodes: ds_${0..1}.t_order\n",
			filepath.Join(dir, "0.db"), filepath.Join(dir, "1.db"))
		file := filepath.Join(dir, "half.yaml")
		if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		statement := "IMPORT DATABASE CONFIGURATION FROM FILE '" + file + "'"
		httpAddr, pgAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
		cl := startCluster(t, typ, 1, clusterOptions{prefix: "e2e-half", mysql: true,
			extra: []string{"--distsql-file-dir", dir, "--allow-sqlite-units", "--http", httpAddr, "--postgresql", pgAddr},
			seed: func(ctx context.Context, repo registry.Repository) {
				var commits atomic.Int32
				var dead atomic.Bool
				faulty := fault.Wrap(repo, func(op, key string) fault.Action {
					if dead.Load() || op == "commit" && commits.Add(1) == 4 {
						dead.Store(true)
						return fault.Action{Err: registry.ErrUnavailable}
					}
					return fault.Action{}
				})
				sess, err := faulty.NewSession(ctx, registry.SessionOptions{})
				if err != nil {
					t.Fatal(err)
				}
				_, err = dbconfig.Import(ctx, faulty, file, []byte(yaml), dbconfig.Options{Session: sess, MaxTxnKeys: 5, Statement: statement, Instance: "e2e-killed"})
				if !errors.Is(err, registry.ErrUnavailable) {
					t.Fatalf("the dying import: %v", err)
				}
				dead.Store(false)
				_ = sess.Close(ctx)
			}})
		n := cl.mysql[0]
		showDatabases := func() string {
			t.Helper()
			rows, stderr, err := mariadb(t, localCmd, "127.0.0.1", n.port, "root", "", "SHOW DATABASES", "--show-warnings")
			if err != nil {
				t.Fatalf("SHOW DATABASES: %v\n%s", err, stderr)
			}
			var out []string
			for _, r := range rows {
				out = append(out, strings.Join(r, "\t"))
			}
			return strings.Join(out, "\n") + stderr
		}
		out := showDatabases()
		for _, want := range []string{"half_db", "half_db is incomplete", "shardkeeper databases drop half_db", statement, "e2e-killed"} {
			if !strings.Contains(out, want) {
				t.Fatalf("mariadb SHOW DATABASES lacks %q:\n%s", want, out)
			}
		}
		pg, err := psqlRun(t, "", strings.Replace(pgDSN(pgAddr, "root", "", "sslmode=disable"), "dbname=sharding_db", "dbname=postgres", 1), "-c", "SHOW DATABASES")
		if err != nil || !strings.Contains(pg, "half_db is incomplete") {
			t.Fatalf("psql SHOW DATABASES: %v\n%s", err, pg)
		}
		var dbs struct {
			Databases []struct{ Name, Incomplete string } `json:"databases"`
		}
		getJSON(t, "http://"+httpAddr+"/api/v1/databases", &dbs)
		if len(dbs.Databases) != 1 || dbs.Databases[0].Name != "half_db" || !strings.Contains(dbs.Databases[0].Incomplete, "shardkeeper databases drop half_db") {
			t.Fatalf("GET /api/v1/databases: %+v", dbs)
		}
		var status struct {
			Databases []struct{ Name, Incomplete string } `json:"databases"`
		}
		getJSON(t, "http://"+httpAddr+"/api/v1/status", &status)
		if len(status.Databases) != 1 || !strings.Contains(status.Databases[0].Incomplete, "half_db is incomplete") {
			t.Fatalf("GET /api/v1/status: %+v", status)
		}

		// Drop it, run the import again: it finishes, nothing is shown.
		if b, err := exec.Command(testenv.ShardkeeperBinary(t), "databases", "drop", "half_db", "--conf", cl.conf).CombinedOutput(); err != nil {
			t.Fatalf("databases drop: %v\n%s", err, b)
		}
		if _, stderr, err := mariadb(t, localCmd, "127.0.0.1", n.port, "root", "", statement); err != nil {
			t.Fatalf("%s: %v\n%s", statement, err, stderr)
		}
		testenv.Eventually(t, "half_db imported, with no warning", func() bool {
			out := showDatabases()
			return strings.Contains(out, "half_db") && !strings.Contains(out, "incomplete")
		})
	})
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestKilledImportShown kills (SIGKILL) a node on real etcd and on real
// ZooKeeper while its IMPORT, typed into mariadb, writes a database of
// 4000 tables in its many transactions: a node started afterwards shows
// the database as incomplete in SHOW DATABASES, and the import is refused
// until the database is dropped, then finishes.
func TestKilledImportShown(t *testing.T) {
	requireMariaDB(t)
	// The unit's 4000 tables are created once for both registries: each
	// CREATE TABLE makes SQLite scan its whole schema table again, so
	// building the file is quadratic in the tables (about a minute under
	// -race on a quiet 2-core machine). The nodes only read the file.
	fixture := time.Now()
	lite := filepath.Join(t.TempDir(), "big.db")
	db, err := sql.Open("sqlite", "file:"+lite)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4000 {
		if _, err := tx.Exec(fmt.Sprintf("CREATE TABLE t_%d (id INTEGER PRIMARY KEY, a TEXT, b TEXT)", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	t.Logf("the 4000-table unit built in %v", time.Since(fixture).Round(time.Millisecond))
	eachRegistry(t, func(t *testing.T, typ string) {
		setup := time.Now()
		dir := t.TempDir()
		file := filepath.Join(dir, "big.yaml")
		if err := os.WriteFile(file, []byte("databaseName: big_db\ndataSources:\n  ds_0:\n    url: jdbc:sqlite:"+lite+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		statement := "IMPORT DATABASE CONFIGURATION FROM FILE '" + file + "'"
		opts := clusterOptions{prefix: "e2e-kill", mysql: true, extra: []string{"--distsql-file-dir", dir, "--allow-sqlite-units"}}
		cl := startCluster(t, typ, 1, opts)
		n := cl.mysql[0]
		client := exec.Command("mariadb", "--protocol=TCP", "-h", "127.0.0.1", "-P", fmt.Sprint(n.port), "-u", "root", "-e", statement)
		var clientOut testenv.SyncBuffer
		client.Stdout, client.Stderr = &clientOut, &clientOut
		if err := client.Start(); err != nil {
			t.Fatal(err)
		}
		clientStart := time.Now()
		clientDone := make(chan error, 1)
		go func() { clientDone <- client.Wait() }()
		defer func() { _ = client.Process.Kill(); <-clientDone }()
		// Kill the node once the database's first transaction is in.
		// The poll pauses between reads: a busy loop competes with the
		// node's import for the registry and the CPU on a small machine.
		started := time.Now()
		deadline := started.Add(180 * time.Second)
		for {
			// A context of its own for each read: one made at the test's
			// start ends after testenv.Timeout, which a slow setup (a
			// cluster started under -race on a busy machine) can pass, and
			// then every read failed, as if the import wrote nothing.
			ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
			_, err := cl.repo.Get(ctx, "/metadata/big_db")
			cancel()
			if err == nil {
				break
			}
			if !errors.Is(err, registry.ErrNotFound) {
				t.Fatalf("read /metadata/big_db: %v", err)
			}
			if time.Now().After(deadline) {
				// Where the import waits: SIGQUIT makes the node print
				// every goroutine's stack to its log, and exit.
				_ = n.cmd.Process.Signal(syscall.SIGQUIT)
				time.Sleep(2 * time.Second)
				state := "still running"
				select {
				case err := <-clientDone:
					clientDone <- err
					state = fmt.Sprintf("exited (%v; %v), started %v before", err, client.ProcessState, time.Since(clientStart).Round(time.Second))
				default:
				}
				var keys []string
				for _, prefix := range []string{"/metadata", "/nodes"} {
					kvs, err := cl.repo.List(testenv.Context(t), prefix)
					if err != nil {
						keys = append(keys, fmt.Sprintf("List(%s): %v", prefix, err))
					}
					for _, kv := range kvs[:min(len(kvs), 20)] {
						keys = append(keys, kv.Key)
					}
				}
				t.Fatalf("the import wrote nothing in 180 s (the cluster took %v before it); mariadb %s, printed:\n%s\nthe test's registry client lists under /metadata and /nodes (20 each at most): %v\nthe node's log (with its goroutines):\n%s",
					started.Sub(setup).Round(time.Second), state, clientOut.String(), keys, n.stderr.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("setup %v, the import's first transaction %v after the statement", started.Sub(setup).Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
		if err := n.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = n.stop(t) // reaped
		ctx := testenv.Context(t)
		store, err := metadata.Load(ctx, cl.repo, nil)
		if err != nil {
			t.Fatal(err)
		}
		tables := 0
		if d := store.Current().Databases["big_db"]; d != nil {
			for _, sc := range d.Schemas {
				tables += len(sc.Tables)
			}
		}
		if tables >= 4000 {
			t.Fatal("the import finished before the kill: the test proves nothing (make the database bigger)")
		}
		marks, err := dbconfig.IncompleteImports(ctx, cl.repo, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := marks["big_db"]; !ok {
			t.Fatalf("big_db is half-written (%d of 4000 tables) and not marked", tables)
		}
		t.Logf("killed with %d of 4000 tables written", tables)
		// A node started afterwards shows it, and refuses to import over it.
		m := startMySQLNode(t, cl.conf, "e2e-kill-2", "127.0.0.1", opts.extra...)
		var out string
		testenv.Eventually(t, "SHOW DATABASES to show big_db incomplete", func() bool {
			rows, stderr, _ := mariadb(t, localCmd, "127.0.0.1", m.port, "root", "", "SHOW DATABASES", "--show-warnings")
			out = fmt.Sprint(rows) + stderr
			return strings.Contains(out, "big_db is incomplete")
		})
		if !strings.Contains(out, statement) || !strings.Contains(out, "e2e-kill-1") {
			t.Fatalf("SHOW DATABASES: %s", out)
		}
		if _, stderr, err := mariadb(t, localCmd, "127.0.0.1", m.port, "root", "", statement); err == nil || !strings.Contains(stderr, "drop the database") {
			t.Fatalf("import over the half-written database: %v %s", err, stderr)
		}
		if b, err := exec.Command(testenv.ShardkeeperBinary(t), "databases", "drop", "big_db", "--conf", cl.conf).CombinedOutput(); err != nil {
			t.Fatalf("databases drop: %v\n%s", err, b)
		}
		if _, stderr, err := mariadb(t, localCmd, "127.0.0.1", m.port, "root", "", statement); err != nil {
			t.Fatalf("%s: %v\n%s", statement, err, stderr)
		}
		if marks, _ := dbconfig.IncompleteImports(testenv.Context(t), cl.repo, nil); len(marks) != 0 {
			t.Fatalf("marks after the import finished: %v", marks)
		}
	})
}
