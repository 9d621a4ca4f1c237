package metadata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// backend opens clients on one fresh namespace of a real registry.
type backend struct {
	name string
	open func(t testing.TB) registry.Repository
}

func realBackends(t testing.TB) []backend {
	return []backend{etcdBackend(t), zkBackend(t)}
}

func etcdBackend(t testing.TB) backend {
	srv := etcdtest.New(t)
	return backend{name: "etcd", open: func(t testing.TB) registry.Repository {
		t.Helper()
		ns := srv.Namespace(t, "sk_meta_")
		return openClient(t, func(ctx context.Context) (registry.Repository, error) {
			return etcd.Open(ctx, srv.Config(ns))
		}, ns)
	}}
}

func zkBackend(t testing.TB) backend {
	zs := zktest.New(t)
	return backend{name: "zookeeper", open: func(t testing.TB) registry.Repository {
		t.Helper()
		ns := zs.Namespace(t, "sk_meta_")
		return openClient(t, func(ctx context.Context) (registry.Repository, error) {
			return zookeeper.Open(ctx, zs.Config(ns))
		}, ns)
	}}
}

// openClient returns a factory-backed repository: the first client; more
// clients on the same namespace come from clients(t, repo).
func openClient(t testing.TB, open func(context.Context) (registry.Repository, error), ns string) registry.Repository {
	t.Helper()
	r, err := open(testenv.Context(t))
	if err != nil {
		t.Fatalf("open %s: %v", ns, err)
	}
	opened[r] = open
	t.Cleanup(func() {
		_ = r.Close()
		delete(opened, r)
	})
	return r
}

// opened remembers how to open more clients on a namespace (tests in this
// file do not run in parallel).
var opened = map[registry.Repository]func(context.Context) (registry.Repository, error){}

// another opens one more client on r's namespace.
func another(t testing.TB, r registry.Repository) registry.Repository {
	t.Helper()
	c, err := opened[r](testenv.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func bootOn(t testing.TB, repo registry.Repository, cfg *config.Config, in Introspector) (*Store, registry.Session) {
	t.Helper()
	ctx := testenv.Context(t)
	sess, err := repo.NewSession(ctx, registry.SessionOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close(context.Background()) })
	s, err := Bootstrap(ctx, repo, sess, cfg, Options{Introspect: in})
	if err != nil {
		t.Fatal(err)
	}
	return s, sess
}

func runStore(t testing.TB, s *Store) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// sqliteConfig is a config whose one database is a SQLite file with two
// tables, introspected for real.
func sqliteConfig(t *testing.T) *config.Config {
	t.Helper()
	ds := config.NewDataSource("jdbc:sqlite:"+filepath.Join(t.TempDir(), "lite.db"), "", "")
	db, err := datasource.Open(testenv.Context(t), "lite", ds)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE TABLE t_user (user_id INTEGER PRIMARY KEY, name VARCHAR(64) NOT NULL)",
		"CREATE INDEX idx_name ON t_user (name)",
		"CREATE TABLE t_address (address_id BIGINT PRIMARY KEY, city TEXT)",
	} {
		if _, err := db.ExecContext(testenv.Context(t), q); err != nil {
			t.Fatal(err)
		}
	}
	cfg := confConfig(t) // its mode, global rules and props
	cfg.Databases = []config.Database{{Name: "lite_db", DataSources: map[string]config.DataSource{"lite": ds},
		Rules: []config.Rule{{Type: "single", Content: map[string]any{"tables": []any{"*.*"}, "defaultDataSource": "lite"}}}}}
	return cfg
}

func TestPathAThenPathBOnRealRegistries(t *testing.T) {
	for _, b := range realBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			repo1 := b.open(t)
			s1, _ := bootOn(t, repo1, sqliteConfig(t), datasource.Introspect)
			tbl, ok := s1.Current().Table("lite_db", "lite_db", "t_user")
			if !ok || len(tbl.Columns) != 2 || !tbl.Columns[0].PrimaryKey || tbl.Indexes[0].Name != "idx_name" {
				t.Fatalf("t_user = %+v", tbl)
			}
			if got := get(t, repo1, "/metadata/lite_db/schemas/lite_db/tables/t_address/active_version"); got != "0" {
				t.Fatalf("active_version = %q", got)
			}
			// Node 2, another client and another local config, ends with node 1's metadata.
			repo2 := another(t, repo1)
			s2, _ := bootOn(t, repo2, otherConfig(), fakeIntrospect)
			a, c := s1.Current(), s2.Current()
			if !reflect.DeepEqual(a.Databases, c.Databases) || !reflect.DeepEqual(a.Props, c.Props) || !reflect.DeepEqual(a.GlobalRules, c.GlobalRules) {
				t.Fatal("node 2's snapshot differs from node 1's")
			}
			if c.Databases["other_db"] != nil || c.Props.Bool("sql-show") {
				t.Fatal("node 2's local config leaked into the registry")
			}
			// Live: a change made through node 2 reaches node 1's watches.
			runStore(t, s1)
			if err := SetProps(testenv.Context(t), repo2, map[string]string{"sql-show": "true"}); err != nil {
				t.Fatal(err)
			}
			if err := DropUnit(testenv.Context(t), repo2, "lite_db", "lite"); err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(testenv.Context(t), 10*time.Second)
			defer cancel()
			if _, err := s1.Wait(wctx, func(s *Snapshot) bool {
				return s.Props.Bool("sql-show") && len(s.Databases["lite_db"].Units) == 0
			}); err != nil {
				t.Fatalf("node 1 never saw node 2's changes: %v", err)
			}
		})
	}
}

func TestBootFromRealDatabases(t *testing.T) {
	ctx := testenv.Context(t)
	pg, err := url.Parse(testenv.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	my, err := url.Parse(testenv.MySQLURL())
	if err != nil {
		t.Fatal(err)
	}
	pgPass, _ := pg.User.Password()
	myPass, _ := my.User.Password()
	pgDS := config.NewDataSource("jdbc:postgresql://"+pg.Host+pg.Path, pg.User.Username(), pgPass)
	myAdmin := config.NewDataSource("jdbc:mariadb://"+my.Host+my.Path, my.User.Username(), myPass)
	pgConn, err := datasource.Open(ctx, "pg", pgDS)
	if err != nil {
		testenv.DatabaseUnreachable(t, "PostgreSQL", err)
	}
	defer pgConn.Close()
	myConn, err := datasource.Open(ctx, "my", myAdmin)
	if err != nil {
		testenv.DatabaseUnreachable(t, "MariaDB", err)
	}
	defer myConn.Close()
	// PostgreSQL: two unique schemas in the test database (other schemas
	// there are introspected too; the checks look only at ours).
	s1, s2 := testenv.Namespace("sk_a_"), testenv.Namespace("sk_b_")
	myDB := testenv.Namespace("sk_")
	t.Cleanup(func() {
		_, _ = pgConn.ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+s1+" CASCADE")
		_, _ = pgConn.ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+s2+" CASCADE")
		_, _ = myConn.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+myDB)
	})
	for _, q := range []string{
		"CREATE SCHEMA " + s1, "CREATE SCHEMA " + s2,
		"CREATE TABLE " + s1 + ".t_order (order_id bigint PRIMARY KEY, user_id int NOT NULL, note text)",
		"CREATE INDEX idx_order_user ON " + s1 + ".t_order (user_id)",
		"CREATE TABLE " + s2 + ".t_item (item_id serial PRIMARY KEY, sku varchar(20) UNIQUE)",
	} {
		if _, err := pgConn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := myConn.ExecContext(ctx, "CREATE DATABASE "+myDB); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE " + myDB + ".t_user (user_id bigint unsigned AUTO_INCREMENT PRIMARY KEY, email varchar(100) NOT NULL, UNIQUE KEY uk_email (email))",
		"CREATE TABLE " + myDB + ".t_log (id int, msg text)",
	} {
		if _, err := myConn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	myDS := myAdmin
	myDS.URL = "jdbc:mysql://" + my.Host + "/" + myDB + "?useSSL=false&serverTimezone=UTC"
	cfg := sqliteConfig(t)
	cfg.Databases = append(cfg.Databases,
		config.Database{Name: "pg_db", DataSources: map[string]config.DataSource{"ds_pg": pgDS}},
		config.Database{Name: "my_db", DataSources: map[string]config.DataSource{"ds_my": myDS}},
	)
	repo := memory.New()
	store, _ := bootOn(t, repo, cfg, datasource.Introspect)
	snap := store.Current()
	check := func(db, schema, table string, cols int, pkCol string) datasource.Table {
		t.Helper()
		tbl, ok := snap.Table(db, schema, table)
		if !ok || len(tbl.Columns) != cols || tbl.Columns[0].Name != pkCol || !tbl.Columns[0].PrimaryKey {
			t.Fatalf("%s.%s.%s = %+v", db, schema, table, tbl)
		}
		node := fmt.Sprintf("/metadata/%s/schemas/%s/tables/%s", db, schema, table)
		if get(t, repo, node+"/active_version") != "0" || !strings.Contains(get(t, repo, node+"/versions/0"), "name: "+pkCol) {
			t.Fatalf("%s not persisted", node)
		}
		return tbl
	}
	o := check("pg_db", s1, "t_order", 3, "order_id")
	if o.Columns[1].Nullable || !o.Columns[2].Nullable || o.Indexes[0].Name != "idx_order_user" {
		t.Errorf("t_order = %+v", o)
	}
	it := check("pg_db", s2, "t_item", 2, "item_id")
	if !it.Columns[0].Generated || len(it.Indexes) != 1 || !it.Indexes[0].Unique {
		t.Errorf("t_item = %+v", it)
	}
	u := check("my_db", "my_db", "t_user", 2, "user_id")
	if !u.Columns[0].Unsigned || !u.Columns[0].Generated || u.Indexes[0].Name != "uk_email" || !u.Indexes[0].Unique {
		t.Errorf("t_user = %+v", u)
	}
	if l, ok := snap.Table("my_db", "my_db", "t_log"); !ok || l.Columns[0].PrimaryKey {
		t.Errorf("t_log = %+v", l)
	}
	check("lite_db", "lite_db", "t_user", 2, "user_id")
	// The unit's password is in the registry (other nodes connect with it)
	// but never in a unit's String.
	if strings.Contains(snap.Databases["pg_db"].Units["ds_pg"].String(), "password="+pgPass+" ") && pgPass != "" {
		t.Error("String shows the password")
	}
}

func TestUnreachableDataSourceFailsBootstrapWithoutWriting(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	ds := config.NewDataSource("jdbc:postgresql://127.0.0.1:1/nowhere", "postgres", "hunter2-secret")
	ds.ConnectionTimeout = time.Second
	cfg := &config.Config{Databases: []config.Database{{Name: "bad", DataSources: map[string]config.DataSource{"ds_bad": ds}}}}
	sess, _ := repo.NewSession(ctx, registry.SessionOptions{})
	_, err := Bootstrap(ctx, repo, sess, cfg, Options{Introspect: datasource.Introspect})
	if err == nil || !strings.Contains(err.Error(), "ds_bad") || !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v", err)
	}
	if dbs, _ := repo.Children(ctx, "/metadata"); len(dbs) != 0 {
		t.Fatalf("bootstrap wrote %v before failing", dbs)
	}
}

// TestNotAppliedOnRealRegistries: a node that finds the cluster's
// configuration in the registry says, in one warning, what of its local
// configuration it left out (a changed authority rule, a prop, a database
// the registry lacks), and says nothing when its local configuration is
// the one the registry holds, upstream's example configuration with its
// global rules' defaults included.
func TestNotAppliedOnRealRegistries(t *testing.T) {
	for _, b := range realBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			repo1 := b.open(t)
			bootOn(t, repo1, exampleConfig(t), fakeIntrospect)

			boot := func(cfg *config.Config) string {
				t.Helper()
				var logs strings.Builder
				log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
				repo := another(t, repo1)
				sess, err := repo.NewSession(testenv.Context(t), registry.SessionOptions{TTL: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				defer sess.Close(context.Background())
				s, err := Bootstrap(testenv.Context(t), repo, sess, cfg, Options{Introspect: fakeIntrospect, Logger: log})
				if err != nil {
					t.Fatal(err)
				}
				for _, item := range NotApplied(cfg, s.Current()) {
					if !strings.Contains(logs.String(), strings.ReplaceAll(item, `"`, `\"`)) { // as the text handler quotes it
						t.Fatalf("the warning does not list %s:\n%s", item, logs.String())
					}
				}
				return logs.String()
			}
			if logs := boot(exampleConfig(t)); logs != "" {
				t.Fatalf("the same local configuration: %s", logs)
			}
			changed := exampleConfig(t)
			for i, r := range changed.GlobalRules {
				if r.Type == "transaction" {
					changed.GlobalRules[i].Content = map[string]any{"defaultType": "XA", "providerType": "Atomikos", "props": map[string]any{"recoveryStorePassword": "other"}}
				}
			}
			changed.Props["sql-show"] = "true"
			changed.Databases = append(changed.Databases, config.Database{Name: "local_only_db"})
			logs := boot(changed)
			for _, want := range []string{"global rule transaction", `props sql-show: local \"true\", registry \"false\"`, "database local_only_db (not in the registry)"} {
				if !strings.Contains(logs, want) {
					t.Errorf("the warning lacks %q:\n%s", want, logs)
				}
			}
			if strings.Contains(logs, "other") || strings.Contains(logs, "global rule authority") {
				t.Errorf("the warning names more than what differs, or a password:\n%s", logs)
			}
		})
	}
}

// TestRequireDatabase: a database is found by its own node, and by keys
// below it alone where that node is absent (as an etcd writer may leave
// a database); a database with neither is ErrNoDatabase.
func TestRequireDatabase(t *testing.T) {
	for _, b := range append([]backend{{name: "memory", open: func(testing.TB) registry.Repository { return memory.New() }}}, realBackends(t)...) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			repo := b.open(t)
			if err := CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "with_node"}); err != nil {
				t.Fatal(err)
			}
			below := "/metadata/below_only/data_sources/units/ds_0/active_version"
			if _, err := repo.Put(ctx, below, []byte("0")); err != nil {
				t.Fatal(err)
			}
			if _, err := repo.Get(ctx, "/metadata/below_only"); b.name != "zookeeper" && !errors.Is(err, registry.ErrNotFound) {
				t.Fatalf("%s holds /metadata/below_only: %v", b.name, err) // ZooKeeper creates the parents
			}
			for _, db := range []string{"with_node", "below_only"} {
				if err := requireDatabase(ctx, repo, db); err != nil {
					t.Errorf("%s: %v", db, err)
				}
			}
			if err := requireDatabase(ctx, repo, "nope"); !errors.Is(err, ErrNoDatabase) {
				t.Errorf("nope: %v, want ErrNoDatabase", err)
			}
		})
	}
}
