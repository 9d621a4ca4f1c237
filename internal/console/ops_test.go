package console

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// dumpAll returns every key of the namespace with its value, except the
// running node's own registration and fence (/nodes, /reservation), which
// it renews by itself.
func dumpAll(t *testing.T, repo registry.Repository) map[string]string {
	t.Helper()
	kvs, err := repo.List(testenv.Context(t), "/")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		if registry.IsUnder(kv.Key, "/nodes") || registry.IsUnder(kv.Key, "/reservation") {
			continue
		}
		out[kv.Key] = string(kv.Value)
	}
	if len(out) == 0 {
		t.Fatal("the dump is empty")
	}
	return out
}

// acknowledge starts n's props acknowledgement, as the daemon does.
func acknowledge(t *testing.T, n *testNode) {
	t.Helper()
	a, err := distvar.StartAcker(testenv.Context(t), n.repo, distvar.AckerConfig{InstanceID: n.node.InstanceID(), Node: n.node, Store: n.store, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
}

func TestSetDistVariableAndLockCluster(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		a, b := startNode(t, open(t), "ops-a", nil), startNode(t, open(t), "ops-b", nil)
		acknowledge(t, a)
		acknowledge(t, b)
		s := newSession()

		res := exec(t, a, s, "SET DIST VARIABLE sql_show = true")
		if len(res.Warnings) != 0 {
			t.Fatalf("SET with every node acknowledging warned: %v", res.Warnings)
		}
		// Both nodes applied it when the statement returned.
		for _, n := range []*testNode{a, b} {
			if got := n.store.Current().Props["sql-show"]; got != "true" {
				t.Fatalf("%s applied sql-show=%q", n.node.InstanceID(), got)
			}
		}
		if e := execError(t, a, s, "SET DIST VARIABLE no_such_thing = 1"); e.Code != 12010 || e.SQLState != "44000" {
			t.Fatalf("unknown variable: %+v", e)
		}
		if e := execError(t, a, s, "SET DIST VARIABLE sql_show = 'maybe'"); e.Code != 12011 || e.SQLState != "HY004" {
			t.Fatalf("bad value: %+v", e)
		}

		exec(t, a, s, "LOCK CLUSTER WITH LOCK_STRATEGY(TYPE(NAME='WRITE')) TIMEOUT 2000")
		if got := a.store.Current().ClusterState; got != "READ_ONLY" {
			t.Fatalf("state after LOCK on a's view: %s", got)
		}
		if e := execError(t, b, s, "LOCK CLUSTER WITH READ_WRITE"); e.Code != 15030 {
			t.Fatalf("second LOCK: %+v", e)
		}
		exec(t, b, s, "UNLOCK CLUSTER")
		if e := execError(t, a, s, "UNLOCK CLUSTER"); e.Code != 15031 {
			t.Fatalf("UNLOCK of an unlocked cluster: %+v", e)
		}
	})
}

func TestDatabaseStatements(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		dir := t.TempDir()
		fileDir, err := dbconfig.OpenFileDir(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		n := startNode(t, open(t), "ops-db", nil, func(d *Deps) { d.FileDir = fileDir })
		file := filepath.Join(dir, "sharding_db.yaml")
		yaml := fmt.Sprintf("databaseName: sharding_db\ndataSources:\n  ds_0:\n    url: jdbc:sqlite:%s\n  ds_1:\n    url: jdbc:sqlite:%s\nrules:\n- !SHARDING\n  tables:\n    t_order:\n      actualDataNodes: ds_${0..1}.t_order\n",
			filepath.Join(dir, "0.db"), filepath.Join(dir, "1.db"))
		if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		local := newSession()

		// An error in the last rule: the registry stays byte-identical.
		bad := filepath.Join(dir, "bad.yaml")
		badYAML := yaml + "- !READWRITE_SPLITTING\n  dataSourceGroups:\n    rw:\n      writeDataSourceName: ds_0\n      readDataSourceNames:\n      - ds_9\n"
		if err := os.WriteFile(bad, []byte(badYAML), 0o600); err != nil {
			t.Fatal(err)
		}
		before := dumpAll(t, n.repo)
		if e := execError(t, n, local, "IMPORT DATABASE CONFIGURATION FROM FILE '"+bad+"'"); e.Code != 10102 {
			t.Fatalf("import with a bad last rule: %+v", e)
		}
		if after := dumpAll(t, n.repo); !reflect.DeepEqual(before, after) {
			t.Fatalf("a refused IMPORT changed the registry:\nbefore %v\nafter  %v", before, after)
		}
		if e := execError(t, n, local, "IMPORT DATABASE CONFIGURATION FROM FILE '/etc/passwd'"); e.Code != 30020 || strings.Contains(e.Message, "root") {
			t.Fatalf("a file outside the file dir: %+v", e)
		}
		exec(t, n, local, "IMPORT DATABASE CONFIGURATION FROM FILE '"+file+"'")
		if d := n.store.Current().Databases["sharding_db"]; d == nil || len(d.Units) != 2 {
			t.Fatalf("database after IMPORT: %+v", d)
		}

		res := exec(t, n, local, "EXPORT DATABASE CONFIGURATION FROM sharding_db")
		if got := columnNames(res); len(got) != 1 || got[0] != "result" || !strings.HasPrefix(*res.Rows[0][0], "databaseName: sharding_db\n") {
			t.Fatalf("EXPORT = %v %v", got, res.Rows)
		}
		out := filepath.Join(dir, "export.yaml")
		res = exec(t, n, local, "EXPORT DATABASE CONFIGURATION FROM sharding_db TO FILE '"+out+"'")
		if *res.Rows[0][0] != "Successfully exported to: '"+out+"'" {
			t.Fatalf("EXPORT TO FILE = %v", *res.Rows[0][0])
		}
		if e := execError(t, n, local, "EXPORT DATABASE CONFIGURATION FROM sharding_db TO FILE '"+out+"'"); e.Code != 30020 {
			t.Fatalf("EXPORT over an existing file: %+v", e)
		}

		// An unknown database and none selected are answered as USE and
		// SHOW answer them: 1049 (42000), 1046 (3D000).
		for _, q := range []string{"EXPORT DATABASE CONFIGURATION FROM nope", "REFRESH DATABASE METADATA nope"} {
			if e := execError(t, n, local, q); e.Code != 1049 || e.SQLState != "42000" || e.Message != "Unknown database 'nope'" {
				t.Errorf("%s: %+v", q, e)
			}
		}
		pg := &Session{ID: NewSessionID(), User: "postgres", Protocol: "PostgreSQL"}
		if e := execError(t, n, pg, "EXPORT DATABASE CONFIGURATION FROM nope"); e.Code != 1049 || e.SQLState != "3D000" || e.Message != `database "nope" does not exist` {
			t.Errorf("EXPORT of an unknown database over PostgreSQL: %+v", e)
		}
		if e := execError(t, n, local, "UNREGISTER STORAGE UNIT ds_1"); e.Code != 1046 || e.SQLState != "3D000" || e.Message != "No database selected" {
			t.Errorf("UNREGISTER without a database: %+v", e)
		}
		local.Database = "nope"
		if e := execError(t, n, local, "UNREGISTER STORAGE UNIT ds_1"); e.Code != 1049 || e.SQLState != "42000" {
			t.Errorf("UNREGISTER in an unknown database: %+v", e)
		}

		local.Database = "sharding_db"
		exec(t, n, local, fmt.Sprintf("REGISTER STORAGE UNIT ds_2 (URL='jdbc:sqlite:%s', USER='', PROPERTIES('maxPoolSize'=3))", filepath.Join(dir, "2.db")))
		if u, ok := n.store.Current().Databases["sharding_db"].Units["ds_2"]; !ok || u.MaxPoolSize != 3 {
			t.Fatalf("ds_2 after REGISTER: %+v %v", u, ok)
		}
		if e := execError(t, n, local, "UNREGISTER STORAGE UNIT ds_1"); e.Code != 10103 {
			t.Fatalf("UNREGISTER of a unit in use: %+v", e)
		}
		exec(t, n, local, "UNREGISTER STORAGE UNIT ds_2")
		exec(t, n, local, "REFRESH DATABASE METADATA sharding_db")

		res = exec(t, n, local, "EXPORT METADATA")
		if got := columnNames(res); strings.Join(got, ",") != "id,create_time,cluster_info" || *res.Rows[0][0] != "ops-db" {
			t.Fatalf("EXPORT METADATA = %v %v", got, res.Rows)
		}
		if _, err := base64.StdEncoding.DecodeString(*res.Rows[0][2]); err != nil {
			t.Fatalf("cluster_info is not Base64: %v", err)
		}
		// The database exists with units: the whole import is refused.
		if e := execError(t, n, local, "IMPORT METADATA '"+*res.Rows[0][2]+"'"); e.Code != 30001 {
			t.Fatalf("IMPORT METADATA over an existing database: %+v", e)
		}
	})
}
