package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// announced is one database announcement as a watcher of the registry
// saw it: its value, how long it stood, and, read when it appeared,
// whether the database existed and the versions of its keys.
type announced struct {
	value     string
	stood     time.Duration
	dbExisted bool
	version   registry.Version // the announcement's
	dbVersion registry.Version // /metadata/{db}'s
	dbKeys    []registry.KV    // every key under /metadata/{db}
	goneAfter bool             // the database was gone once the announcement went
	err       error            // a read that failed
}

// TestDatabaseAnnouncedOneWay: CREATE and DROP DATABASE through the MySQL
// console, the HTTP API and the CLI, and IMPORT through the console, each
// announce the database to the other nodes the same way
// (metadata.Coordinator.Announce): a CREATE is committed in the one
// transaction that writes the database, so every key of the database has
// the announcement's version (etcd's revision, ZooKeeper's zxid) and a
// node that follows the announcement loads the whole database; a DROP
// stands while the database is deleted; every announcement stands
// metadata.ListenerHold, then goes.
func TestDatabaseAnnouncedOneWay(t *testing.T) {
	requireMariaDB(t)
	eachRegistry(t, func(t *testing.T, typ string) {
		servers := registryServers(t, typ)
		conf := writeConf(t, typ, servers)
		ctx := testenv.Context(t)
		mode, err := config.LoadMode(ctx, conf)
		if err != nil {
			t.Fatal(err)
		}
		files := t.TempDir()
		imported := filepath.Join(files, "imported.yaml")
		unit := "jdbc:sqlite:" + filepath.Join(t.TempDir(), "imported.db")
		if err := os.WriteFile(imported, []byte("databaseName: imported_db\ndataSources:\n  ds_0:\n    url: "+unit+
			"\nrules:\n- !SHARDING\n  tables:\n    t_order:\n      actualDataNodes: ds_0.t_order_${0..1}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("SHARDKEEPER_TOKEN", token)
		httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		n := startMySQLNode(t, conf, "e2e-announce", "127.0.0.1", "--http", httpAddr,
			"--distsql-file-dir", files, "--allow-sqlite-units")

		repo, err := connect.Open(ctx, mode.Repository, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer repo.Close()
		seen := watchAnnouncements(t, ctx, repo)

		console := func(statement string) func() {
			return func() {
				if _, errOut, err := mariadb(t, localCmd, "127.0.0.1", n.port, "root", "", statement); err != nil {
					t.Fatalf("%s: %v\n%s", statement, err, errOut)
				}
			}
		}
		api := func(method, path, body string, want int) func() {
			return func() {
				if code := call(t, method, "http://"+httpAddr+path, body, nil); code != want {
					t.Fatalf("%s %s: %d, want %d", method, path, code, want)
				}
			}
		}
		cli := func(args ...string) func() {
			return func() {
				out, err := exec.Command(testenv.ShardkeeperBinary(t), append(args, "--conf", conf)...).CombinedOutput()
				if err != nil {
					t.Fatalf("shardkeeper %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
		}
		for _, step := range []struct {
			path   string
			db     string
			create bool
			run    func()
		}{
			{"console", "console_db", true, console("CREATE DATABASE console_db")},
			{"console", "console_db", false, console("DROP DATABASE console_db")},
			{"HTTP API", "http_db", true, api("POST", "/api/v1/databases", `{"name":"http_db"}`, 201)},
			{"HTTP API", "http_db", false, api("DELETE", "/api/v1/databases/http_db", "", 200)},
			{"CLI", "cli_db", true, cli("databases", "create", "cli_db")},
			{"CLI", "cli_db", false, cli("databases", "drop", "cli_db")},
			{"IMPORT", "imported_db", true, console("IMPORT DATABASE CONFIGURATION FROM FILE '" + imported + "'")},
		} {
			what := fmt.Sprintf("%s %s", step.path, map[bool]string{true: "CREATE", false: "DROP"}[step.create])
			step.run()
			var a announced
			select {
			case a = <-seen.next(step.db):
			case <-time.After(testenv.Timeout):
				t.Fatalf("%s %s: no announcement came and went", what, step.db)
			}
			if a.err != nil {
				t.Fatalf("%s %s: %v", what, step.db, a.err)
			}
			if want := paths.DefaultLayout.ListenerValue(step.create); a.value != want {
				t.Errorf("%s %s: announced %q, want %q", what, step.db, a.value, want)
			}
			// The watcher sees the announcement come and go late, each by
			// its own delay (more on a loaded machine): allow half a second
			// less, and some seconds more, than the hold.
			if a.stood < metadata.ListenerHold-500*time.Millisecond || a.stood > metadata.ListenerHold+10*time.Second {
				t.Errorf("%s %s: the announcement stood %v, want the hold of %v", what, step.db, a.stood, metadata.ListenerHold)
			}
			if !a.dbExisted {
				t.Errorf("%s %s: the database did not exist when the announcement came", what, step.db)
			}
			if step.create {
				if a.dbVersion != a.version {
					t.Errorf("%s %s: the database (version %d) and its announcement (version %d) were not one transaction", what, step.db, a.dbVersion, a.version)
				}
				for _, kv := range a.dbKeys {
					if kv.Version != a.version {
						t.Errorf("%s %s: %s has version %d, the announcement %d: written apart from it", what, step.db, kv.Key, kv.Version, a.version)
					}
				}
			} else if !a.goneAfter {
				t.Errorf("%s %s: the database was still there when the DROP announcement went", what, step.db)
			}
		}
	})
}

// announcements hands out, per database, the announcements a watcher saw
// come and go.
type announcements struct {
	ch map[string]chan announced
}

func (s *announcements) next(db string) <-chan announced { return s.ch[db] }

// watchAnnouncements watches the database listener coordinator's nodes of
// the default layout on repo until ctx ends; for each announcement of the
// databases of TestDatabaseAnnouncedOneWay it reads, when the announcement
// appears, its version and the database's keys, and when it goes, whether
// the database is gone.
func watchAnnouncements(t *testing.T, ctx context.Context, repo registry.Repository) *announcements {
	t.Helper()
	root := paths.DatabaseListenerRoot
	if paths.DefaultLayout == paths.Layout552 {
		root = paths.DatabaseListenerRoot552
	}
	s := &announcements{ch: map[string]chan announced{}}
	for _, db := range []string{"console_db", "http_db", "cli_db", "imported_db"} {
		s.ch[db] = make(chan announced, 2)
	}
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	initial, events, err := repo.Watch(wctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(initial) > 0 {
		t.Fatalf("announcements stand before the test: %v", initial)
	}
	go func() {
		open := map[string]*announced{}
		came := map[string]time.Time{}
		for ev := range events {
			if ev.Err != nil {
				return
			}
			db := strings.TrimPrefix(ev.KV.Key, root+"/")
			out, ok := s.ch[db]
			if !ok {
				continue
			}
			dbKey, _ := paths.Database(db)
			switch ev.Type {
			case registry.EventPut:
				at := time.Now()
				a := &announced{value: string(ev.KV.Value)}
				kv, err := repo.Get(ctx, ev.KV.Key)
				a.version = kv.Version
				var dbNode registry.KV
				if err == nil {
					dbNode, err = repo.Get(ctx, dbKey)
					if errors.Is(err, registry.ErrNotFound) {
						err = nil
					} else if err == nil {
						a.dbExisted, a.dbVersion = true, dbNode.Version
					}
				}
				if err == nil && a.dbExisted {
					a.dbKeys, err = repo.List(ctx, dbKey)
				}
				a.err = err
				open[db], came[db] = a, at
			case registry.EventDelete:
				a := open[db]
				if a == nil {
					continue
				}
				a.stood = time.Since(came[db])
				_, err := repo.Get(ctx, dbKey)
				a.goneAfter = errors.Is(err, registry.ErrNotFound)
				delete(open, db)
				out <- *a
			}
		}
	}()
	return s
}
