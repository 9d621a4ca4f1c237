package e2e

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// mysqlUnitURL returns the JDBC URL and user of the MariaDB server for
// tests (testenv.MySQLURL), skipping the test when it is unreachable.
func mysqlUnitURL(t *testing.T) (jdbc, user string) {
	t.Helper()
	u, err := url.Parse(testenv.MySQLURL())
	if err != nil {
		t.Fatal(err)
	}
	jdbc, user = "jdbc:mysql://"+u.Host+u.Path, u.User.Username()
	pw, _ := u.User.Password()
	if err := datasource.Ping(testenv.Context(t), "probe", config.NewDataSource(jdbc, user, pw)); err != nil {
		testenv.DatabaseUnreachable(t, "MariaDB", err)
	}
	return jdbc, user
}

// TestDatabaseConfigurationOverMySQL types the configuration statements
// into mariadb connected to a node on real etcd and on real ZooKeeper, with
// storage units on the real MariaDB server: an IMPORT DATABASE
// CONFIGURATION whose last rule is wrong is refused with its code and
// leaves the registry's configuration byte-identical; a good one imports,
// exports (to the client and to a file), takes REGISTER / UNREGISTER
// STORAGE UNIT, and LOCK / UNLOCK CLUSTER answer with upstream's codes.
func TestDatabaseConfigurationOverMySQL(t *testing.T) {
	requireMariaDB(t)
	jdbc, user := mysqlUnitURL(t)
	eachRegistry(t, func(t *testing.T, typ string) {
		ctx := testenv.Context(t)
		dir := t.TempDir()
		cl := startCluster(t, typ, 1, clusterOptions{prefix: "e2e-cfg", mysql: true, extra: []string{"--distsql-file-dir", dir}})
		n, r := cl.mysql[0], cl.repo
		dump := func() map[string]string {
			kvs, err := r.List(ctx, "/")
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]string{}
			for _, kv := range kvs {
				if !registry.IsUnder(kv.Key, "/nodes") && !registry.IsUnder(kv.Key, "/reservation") {
					out[kv.Key] = string(kv.Value)
				}
			}
			return out
		}
		sql := func(statement string) ([][]string, string, error) {
			t.Helper()
			return mariadb(t, localCmd, "127.0.0.1", n.port, "root", "", statement)
		}
		must := func(statement string) [][]string {
			t.Helper()
			rows, stderr, err := sql(statement)
			if err != nil {
				t.Fatalf("%s: %v\n%s", statement, err, stderr)
			}
			return rows
		}
		refused := func(statement, code string) {
			t.Helper()
			_, stderr, err := sql(statement)
			if err == nil || !strings.Contains(stderr, "ERROR "+code) {
				t.Fatalf("%s: err %v, stderr %q; want ERROR %s", statement, err, stderr, code)
			}
		}

		good := fmt.Sprintf("databaseName: sharding_db\ndataSources:\n  ds_0:\n    url: %s\n    username: %s\n    password: ''\nrules:\n- !SHARDING\n  tables:\n    t_order:\n      actualDataNodes: ds_0.t_order_${0..1}\n", jdbc, user)
		bad := good + "- !READWRITE_SPLITTING\n  dataSourceGroups:\n    rw:\n      writeDataSourceName: ds_0\n      readDataSourceNames:\n      - ds_9\n"
		for name, content := range map[string]string{"good.yaml": good, "bad.yaml": bad} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		before := dump()
		refused("IMPORT DATABASE CONFIGURATION FROM FILE '"+filepath.Join(dir, "bad.yaml")+"'", "10102 (44000)")
		if after := dump(); !reflect.DeepEqual(before, after) {
			t.Fatalf("a refused IMPORT changed the registry:\nbefore %v\nafter  %v", before, after)
		}
		must("IMPORT DATABASE CONFIGURATION FROM FILE '" + filepath.Join(dir, "good.yaml") + "'")
		rows := must("EXPORT DATABASE CONFIGURATION FROM sharding_db")
		if got := column(t, rows, "result"); len(got) != 1 || !strings.HasPrefix(got[0], `databaseName: sharding_db\ndataSources:\n  ds_0:`) {
			t.Fatalf("EXPORT: %v", got)
		}
		file := filepath.Join(dir, "export.yaml")
		must("EXPORT DATABASE CONFIGURATION FROM sharding_db TO FILE '" + file + "'")
		if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("exported file: %v %v", st, err)
		}

		must(fmt.Sprintf("USE sharding_db; REGISTER STORAGE UNIT ds_1 (URL='%s', USER='%s', PASSWORD='')", jdbc, user))
		refused(fmt.Sprintf("USE sharding_db; REGISTER STORAGE UNIT ds_1 (URL='%s', USER='%s', PASSWORD='')", jdbc, user), "10104 (42S01)")
		refused("USE sharding_db; UNREGISTER STORAGE UNIT ds_0", "10103 (44000)")
		must("USE sharding_db; UNREGISTER STORAGE UNIT ds_1")

		must("LOCK CLUSTER WITH LOCK_STRATEGY(TYPE='WRITE')")
		refused("LOCK CLUSTER WITH WRITE", "15030 (HY000)")
		must("UNLOCK CLUSTER")
		refused("UNLOCK CLUSTER", "15031 (HY000)")

		rows = must("EXPORT METADATA")
		if strings.Join(rows[0], ",") != "id,create_time,cluster_info" || column(t, rows, "id")[0] != "e2e-cfg-1" {
			t.Fatalf("EXPORT METADATA: %v", rows)
		}
	})
}
