package console

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
)

// privilegeUsers: root is an admin; app is an ordinary user, permitted
// app_db only.
const privilegeUsers = `authority:
  users:
    - user: root@%
      password: root
      admin: true
    - user: app@%
      password: app
  privilege:
    type: DATABASE_PERMITTED
    props:
      user-database-mappings: app@%=app_db
`

// TestPrivilegeModel runs the engine on real etcd and ZooKeeper with an
// admin (root), an ordinary user permitted one database (app) and a
// session whose user left the rule (ghost): the admin statements, the
// databases, the process list and KILL answer as docs/distsql.md says.
func TestPrivilegeModel(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		cfg, err := config.ParseGlobal("global.yaml", []byte(privilegeUsers))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		fileDir, err := dbconfig.OpenFileDir(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		n := startNode(t, open(t), "priv", cfg, func(d *Deps) { d.FileDir = fileDir })
		root := newSession()
		app := &Session{ID: NewSessionID(), User: "app", Host: "10.0.0.9", Protocol: "MySQL"}
		ghost := &Session{ID: NewSessionID(), User: "ghost", Host: "127.0.0.1", Protocol: "MySQL"}
		for _, db := range []string{"app_db", "other_db"} {
			file := filepath.Join(dir, db+".yaml")
			yaml := fmt.Sprintf("databaseName: %s\ndataSources:\n  ds_0:\n    url: jdbc:sqlite:%s\n", db, filepath.Join(dir, db+".db"))
			if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			exec(t, n, root, "IMPORT DATABASE CONFIGURATION FROM FILE '"+file+"'")
		}
		code := func(s *Session, q string) uint16 {
			t.Helper()
			return execError(t, n, s, q).Code
		}
		for _, q := range []string{
			"IMPORT METADATA 'e30='", "IMPORT METADATA FROM FILE 'x.json'", "EXPORT METADATA", "EXPORT METADATA TO FILE 'y.json'",
			"IMPORT DATABASE CONFIGURATION FROM FILE 'app_db.yaml'", "EXPORT DATABASE CONFIGURATION FROM app_db TO FILE 'z.yaml'",
			"REFRESH DATABASE METADATA",
		} {
			if c := code(app, q); c != 1045 {
				t.Errorf("app: %s: %d, want 1045", q, c)
			}
			if c := code(ghost, q); c != 1045 {
				t.Errorf("ghost: %s: %d, want 1045", q, c)
			}
		}
		pg := &Session{ID: NewSessionID(), User: "app", Host: "10.0.0.9", Protocol: "PostgreSQL"}
		if e := execError(t, n, pg, "EXPORT METADATA"); e.Code != 1045 || e.SQLState != "42501" {
			t.Errorf("PostgreSQL: %+v", e)
		}
		exec(t, n, app, "REFRESH DATABASE METADATA app_db")
		exec(t, n, app, "EXPORT DATABASE CONFIGURATION FROM app_db")
		for _, q := range []string{"USE other_db", "SHOW TABLES FROM other_db", "SHOW STORAGE UNITS FROM other_db", "EXPORT DATABASE CONFIGURATION FROM other_db",
			"REFRESH DATABASE METADATA other_db", "USE no_such_db", "DROP DATABASE other_db", "CREATE DATABASE not_permitted_db",
			"SHOW READWRITE_SPLITTING RULES FROM other_db", "DROP READWRITE_SPLITTING RULE IF EXISTS rw FROM other_db",
			"SHOW SINGLE TABLES FROM other_db", "SHOW SHARDING TABLE NODES FROM other_db", "COUNT SHARDING RULE FROM other_db",
			"SHOW DEFAULT SINGLE TABLE STORAGE UNIT FROM other_db", "SHOW BROADCAST TABLE RULES FROM other_db"} {
			if c := code(app, q); c != 1044 {
				t.Errorf("app: %s: %d, want 1044", q, c)
			}
		}
		app.Database = "other_db" // as a PostgreSQL startup or a stale USE may leave it
		// The catalog shows only the permitted databases, whatever the
		// session's database.
		if got := rowStrings(exec(t, n, app, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA")); !reflect.DeepEqual(got, [][]string{{"information_schema"}, {"app_db"}}) {
			t.Errorf("app's SCHEMATA: %v", got)
		}
		if e := execError(t, n, app, "SHOW CREATE DATABASE other_db"); e.Code != 1049 {
			t.Errorf("app's SHOW CREATE DATABASE other_db: %+v", e)
		}
		pgApp := &Session{ID: NewSessionID(), User: "app", Host: "10.0.0.9", Protocol: "PostgreSQL", Database: "other_db"}
		if got := rowStrings(exec(t, n, pgApp, "SELECT datname FROM pg_catalog.pg_database")); !reflect.DeepEqual(got, [][]string{{"app_db"}}) {
			t.Errorf("app's pg_database: %v", got)
		}
		if got := rowStrings(exec(t, n, pgApp, "SELECT table_name FROM information_schema.tables")); len(got) != 0 {
			t.Errorf("app's tables of other_db: %v", got)
		}
		for _, q := range []string{"UNREGISTER STORAGE UNIT ds_0", "CREATE SHARDING TABLE RULE t_x (DATANODES('ds_0.t_x'))",
			"SET DEFAULT SINGLE TABLE STORAGE UNIT = ds_0", "SHOW SINGLE TABLES", "SHOW SHARDING TABLE RULES"} {
			if c := code(app, q); c != 1044 {
				t.Errorf("app: %s in other_db: %d, want 1044", q, c)
			}
		}
		app.Database = ""
		res := exec(t, n, app, "SHOW DATABASES")
		if len(res.Rows) != 1 || *res.Rows[0][0] != "app_db" {
			t.Fatalf("app's SHOW DATABASES: %v", res.Rows)
		}
		if res := exec(t, n, root, "SHOW DATABASES"); len(res.Rows) != 2 {
			t.Fatalf("root's SHOW DATABASES: %v", res.Rows)
		}

		// Sessions: app sees and ends its own only.
		killed := make(chan string, 2)
		for _, s := range []*Session{root, app} {
			remove := n.procs.Add(process.Process{ID: s.ID, Username: s.User, Hostname: s.Host, StartMillis: time.Now().UnixMilli(), Idle: true},
				func() { killed <- s.User }, func() {})
			defer remove()
		}
		res = exec(t, n, app, "SHOW PROCESSLIST")
		var ids []string
		for _, r := range res.Rows {
			ids = append(ids, *r[0])
		}
		if !slices.Equal(ids, []string{app.ID}) {
			t.Fatalf("app's SHOW PROCESSLIST: %v", ids)
		}
		if res := exec(t, n, root, "SHOW PROCESSLIST"); len(res.Rows) != 2 {
			t.Fatalf("root's SHOW PROCESSLIST: %d rows", len(res.Rows))
		}
		if c := code(app, "KILL "+root.ID); c != 1095 {
			t.Fatalf("app's KILL of root: %d", c)
		}
		if c := code(app, fmt.Sprintf("KILL QUERY %d", process.Number(root.ID))); c != 1095 {
			t.Fatalf("app's KILL QUERY of root by number: %d", c)
		}
		exec(t, n, app, "KILL "+app.ID)
		exec(t, n, root, "KILL "+root.ID)
		for range 2 {
			select {
			case <-killed:
			case <-time.After(10 * time.Second):
				t.Fatal("a permitted KILL did not end its session")
			}
		}
	})
}

// TestStorageUnitCheckIsNoPortScanner: an ordinary user's REGISTER
// STORAGE UNIT against a refused port, a silent one and an unknown database
// on the real MariaDB, and its ALTER STORAGE UNIT with a wrong password,
// get one message, no sooner than the unit's connection timeout: the
// statements tell nothing of what answers on the node's network. An admin
// sees the driver's message at once.
func TestStorageUnitCheckIsNoPortScanner(t *testing.T) {
	my, err := url.Parse(testenv.MySQLURL())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.ParseGlobal("global.yaml", []byte(privilegeUsers))
	if err != nil {
		t.Fatal(err)
	}
	s := etcdtest.New(t)
	n := startNode(t, s.Open(t, s.Namespace(t, "probe")), "probe", cfg)
	root := newSession()
	app := &Session{ID: NewSessionID(), User: "app", Host: "10.0.0.9", Protocol: "MySQL"}
	exec(t, n, root, "CREATE DATABASE app_db")
	root.Database, app.Database = "app_db", "app_db"
	mariadb := "jdbc:mysql://" + my.Host + my.Path
	rootPassword, _ := my.User.Password()
	exec(t, n, root, fmt.Sprintf("REGISTER STORAGE UNIT real (URL='%s', USER='%s', PASSWORD='%s')", mariadb, my.User.Username(), rootPassword))

	const timeout = time.Second
	unit := func(verb, name, url, user, password string) string {
		return fmt.Sprintf("%s STORAGE UNIT %s (URL='%s', USER='%s', PASSWORD='%s', PROPERTIES('connectionTimeoutMilliseconds'=%d))",
			verb, name, url, user, password, timeout.Milliseconds())
	}
	refusedPort := "jdbc:mysql://" + closedPort(t) + "/db"
	statements := []string{
		unit("REGISTER", "probe", refusedPort, "root", ""),
		unit("REGISTER", "probe", "jdbc:mysql://"+silentPort(t)+"/db", "root", ""),
		unit("REGISTER", "probe", "jdbc:mysql://"+my.Host+"/no_such_database_here", my.User.Username(), rootPassword),
		unit("ALTER", "real", mariadb, my.User.Username(), "wrong-password"),
	}
	var answers []string
	for _, q := range statements {
		start := time.Now()
		e := execError(t, n, app, q)
		took := time.Since(start)
		if took < timeout+probeSlack || took > timeout+probeSlack+time.Second {
			t.Errorf("%s: answered after %v, want %v plus at most 1 s", q, took, timeout+probeSlack)
		}
		answers = append(answers, fmt.Sprintf("%d %s %s", e.Code, e.SQLState, strings.Replace(e.Message, "real:", "probe:", 1)))
	}
	for _, a := range answers[1:] {
		if a != answers[0] {
			t.Fatalf("the answers differ:\n%s", strings.Join(answers, "\n"))
		}
	}
	if !strings.HasPrefix(answers[0], "10110 08000") || !strings.Contains(answers[0], "could not connect within 1s") {
		t.Fatalf("the answer: %s", answers[0])
	}
	start := time.Now()
	e := execError(t, n, root, unit("REGISTER", "probe", refusedPort, "root", ""))
	if took := time.Since(start); took > timeout || !strings.Contains(e.Message, "connection refused") {
		t.Fatalf("the admin's answer after %v: %s", took, e.Message)
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// silentPort is a loopback address that accepts connections and never
// answers.
func silentPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return l.Addr().String()
}

// TestClusterWideStatementsNeedAdmin runs the engine on real etcd and
// ZooKeeper: every statement whose effect reaches beyond one database is
// refused to an ordinary user (app, permitted app_db) with 1045 naming it
// and leaves the registry as it was; the storage unit and rule statements
// of app_db stay open to app; SHOW TRANSACTION RULE and SHOW GLOBAL CLOCK
// RULE show app their secret props masked and root in clear.
func TestClusterWideStatementsNeedAdmin(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		cfg, err := config.ParseGlobal("global.yaml", []byte(privilegeUsers))
		if err != nil {
			t.Fatal(err)
		}
		repo := open(t)
		n := startNode(t, repo, "wide", cfg)
		root := newSession()
		app := &Session{ID: NewSessionID(), User: "app", Host: "10.0.0.9", Protocol: "MySQL", Database: "app_db"}
		exec(t, n, root, "CREATE DATABASE app_db")
		root.Database = "app_db"
		exec(t, n, root, fmt.Sprintf("REGISTER STORAGE UNIT ds_0 (URL='jdbc:sqlite:%s', USER='', PASSWORD='')", filepath.Join(t.TempDir(), "ds_0.db")))
		const secret = "s3cr3t-Recovery"
		exec(t, n, root, "ALTER TRANSACTION RULE (DEFAULT='XA', TYPE(NAME='Narayana', PROPERTIES('recoveryStoreUser'='sa', 'recoveryStorePassword'='"+secret+"')))")
		exec(t, n, root, "ALTER GLOBAL CLOCK RULE (TYPE='TSO', PROVIDER='redis', ENABLED=true, PROPERTIES('host'='127.0.0.1', 'password'='"+secret+"'))")

		before := dumpRegistry(t, repo)
		for q, what := range map[string]string{
			"LOCK CLUSTER WITH LOCK_STRATEGY(TYPE(NAME='READ_WRITE'))": "LOCK CLUSTER",
			"UNLOCK CLUSTER": "UNLOCK CLUSTER",
			"ALTER TRANSACTION RULE (DEFAULT='LOCAL')":                                     "ALTER TRANSACTION RULE",
			"ALTER SQL_PARSER RULE (PARSE_TREE_CACHE(INITIAL_CAPACITY=1, MAXIMUM_SIZE=2))": "ALTER SQL_PARSER RULE",
			"ALTER SQL_FEDERATION RULE (SQL_FEDERATION_ENABLED=true)":                      "ALTER SQL_FEDERATION RULE",
			"ALTER GLOBAL CLOCK RULE (TYPE='TSO', PROVIDER='local', ENABLED=false)":        "ALTER GLOBAL CLOCK RULE",
			"SET DIST VARIABLE sql_show = true":                                            "SET DIST VARIABLE",
			"DISABLE COMPUTE NODE 'wide'":                                                  "DISABLE COMPUTE NODE",
			"ENABLE COMPUTE NODE 'wide'":                                                   "ENABLE COMPUTE NODE",
			"LABEL COMPUTE NODE 'wide' WITH tenant_b":                                      "LABEL COMPUTE NODE",
			"RELABEL COMPUTE NODE 'wide' WITH tenant_b":                                    "RELABEL COMPUTE NODE",
			"UNLABEL COMPUTE NODE 'wide'":                                                  "UNLABEL COMPUTE NODE",
			"REFRESH DATABASE METADATA":                                                    "REFRESH DATABASE METADATA of every database",
			"ALTER SQL_TRANSLATOR RULE (TYPE(NAME='NATIVE'))":                              "ALTER SQL_TRANSLATOR RULE",
			"CONVERT YAML CONFIGURATION FROM FILE 'database-x.yaml'":                       "CONVERT YAML CONFIGURATION",
			"EXPORT STORAGE NODES":                                                         "EXPORT STORAGE NODES",
			"ALTER COMPUTE NODE 'wide' SET XA_RECOVERY_NODES = 'wide'":                     "ALTER COMPUTE NODE",
		} {
			e := execError(t, n, app, q)
			if e.Code != 1045 || e.SQLState != "28000" || !strings.Contains(e.Message, what+" needs an admin user") {
				t.Errorf("app: %s: %d %s %s; want 1045 naming %s", q, e.Code, e.SQLState, e.Message, what)
			}
		}
		pg := &Session{ID: NewSessionID(), User: "app", Host: "10.0.0.9", Protocol: "PostgreSQL", Database: "app_db"}
		if e := execError(t, n, pg, "LOCK CLUSTER WITH LOCK_STRATEGY(TYPE(NAME='WRITE'))"); e.Code != 1045 || e.SQLState != "42501" {
			t.Errorf("PostgreSQL: %+v", e)
		}
		if after := dumpRegistry(t, repo); !maps.Equal(before, after) {
			t.Fatalf("refused statements changed the registry:\nbefore %v\nafter  %v", before, after)
		}

		// Confined to app_db: open to app.
		exec(t, n, app, "SET DEFAULT SINGLE TABLE STORAGE UNIT = ds_0")
		exec(t, n, app, "CREATE SHARDING TABLE RULE t_order (DATANODES('ds_0.t_order'))")
		exec(t, n, app, "REFRESH DATABASE METADATA app_db")
		exec(t, n, app, "SHOW STORAGE UNITS")

		// The global rules' secrets: masked to app, in clear to root.
		for _, q := range []string{"SHOW TRANSACTION RULE", "SHOW GLOBAL CLOCK RULE"} {
			props := func(s *Session) string {
				res := exec(t, n, s, q)
				return *res.Rows[0][len(res.Columns)-1]
			}
			if got := props(app); strings.Contains(got, secret) || !strings.Contains(got, `"password":"******"`) && !strings.Contains(got, `"recoveryStorePassword":"******"`) {
				t.Errorf("app: %s: props %s", q, got)
			}
			if got := props(root); !strings.Contains(got, secret) {
				t.Errorf("root: %s: props %s, want the secret in clear", q, got)
			}
		}
		if got := *exec(t, n, app, "SHOW TRANSACTION RULE").Rows[0][2]; !strings.Contains(got, `"recoveryStoreUser":"sa"`) {
			t.Errorf("app: SHOW TRANSACTION RULE masks more than secrets: %s", got)
		}
	})
}

// dumpRegistry is every key and value of the registry but the worker id
// reservations and the online nodes, which move on their own.
func dumpRegistry(t *testing.T, repo registry.Repository) map[string]string {
	t.Helper()
	ctx := testenv.Context(t)
	out := map[string]string{}
	var walk func(p string)
	walk = func(p string) {
		if p == paths.ReservationTop || p == paths.OnlineRoot {
			return
		}
		if kv, err := repo.Get(ctx, p); err == nil {
			out[p] = string(kv.Value)
		}
		children, err := repo.Children(ctx, p)
		if err != nil {
			return
		}
		for _, c := range children {
			walk(strings.TrimSuffix(p, "/") + "/" + c)
		}
	}
	walk("/")
	return out
}
