package console

import (
	"context"
	"net/url"
	"reflect"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// TestSingleTablesOnRealUnits registers two storage units on the real
// MariaDB server and loads, shows, counts and unloads their tables as
// single tables, on real etcd and ZooKeeper.
func TestSingleTablesOnRealUnits(t *testing.T) {
	ctx := testenv.Context(t)
	my, err := url.Parse(testenv.MySQLURL())
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := my.User.Password()
	admin, err := datasource.Open(ctx, "admin", config.NewDataSource("jdbc:mariadb://"+my.Host+my.Path, my.User.Username(), pw))
	if err != nil {
		testenv.DatabaseUnreachable(t, "MariaDB", err)
	}
	defer admin.Close()
	dbs := []string{testenv.Namespace("sk_single0_"), testenv.Namespace("sk_single1_")}
	t.Cleanup(func() {
		for _, d := range dbs {
			_, _ = admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+d)
		}
	})
	for i, q := range []string{
		"CREATE DATABASE " + dbs[0], "CREATE DATABASE " + dbs[1],
		"CREATE TABLE " + dbs[0] + ".t_a (id int PRIMARY KEY)", "CREATE TABLE " + dbs[0] + ".t_b (id int PRIMARY KEY)",
		"CREATE TABLE " + dbs[1] + ".t_c (id int PRIMARY KEY)",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%d %s: %v", i, q, err)
		}
	}
	unit := func(name, db string) string {
		s := name + " (URL='jdbc:mysql://" + my.Host + "/" + db + "', USER='" + my.User.Username() + "'"
		if pw != "" {
			s += ", PASSWORD='" + pw + "'"
		}
		return s + ")"
	}
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		repo := open(t)
		n := startNode(t, repo, "single", nil)
		s := newSession()
		exec(t, n, s, "CREATE DATABASE single_db")
		exec(t, n, s, "USE single_db")
		exec(t, n, s, "REGISTER STORAGE UNIT "+unit("u0", dbs[0])+", "+unit("u1", dbs[1]))

		if got := rowStrings(exec(t, n, s, "SHOW SINGLE TABLES")); len(got) != 0 {
			t.Errorf("before LOAD: %v", got)
		}
		for _, c := range []struct {
			sql   string
			code  uint16
			state string
			msg   string
		}{
			{"LOAD SINGLE TABLE u9.t_a", 10102, "44000", "Storage units '[u9]' do not exist in database 'single_db'."},
			{"LOAD SINGLE TABLE u0.t_c", 10501, "42S02", "Single table 'u0.t_c' does not exist."},
			{"UNLOAD SINGLE TABLE t_a", 10501, "42S02", "Single table 't_a' does not exist."},
		} {
			if e := execError(t, n, s, c.sql); e.Code != c.code || e.SQLState != c.state || e.Message != c.msg {
				t.Errorf("%s: %d %s %q, want %d %s %q", c.sql, e.Code, e.SQLState, e.Message, c.code, c.state, c.msg)
			}
		}
		exec(t, n, s, "LOAD SINGLE TABLE u0.t_a")
		if got, want := rowStrings(exec(t, n, s, "SHOW SINGLE TABLES")), [][]string{{"t_a", "u0"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("after LOAD u0.t_a: %v, want %v", got, want)
		}
		exec(t, n, s, "LOAD SINGLE TABLE u1.*")
		if got, want := rowStrings(exec(t, n, s, "SHOW SINGLE TABLES")), [][]string{{"t_a", "u0"}, {"t_c", "u1"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("after LOAD u1.*: %v, want %v", got, want)
		}
		if got, want := rowStrings(exec(t, n, s, "COUNT SINGLE TABLE")), [][]string{{"single", "single_db", "2"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("COUNT: %v", got)
		}
		if got, want := rowStrings(exec(t, n, s, "SHOW RULES USED STORAGE UNIT u0")), [][]string{{"single", "t_a"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("SHOW RULES USED STORAGE UNIT u0: %v", got)
		}
		if e := execError(t, n, s, "UNLOAD SINGLE TABLE t_c"); e.Code != 10500 {
			t.Errorf("UNLOAD of a table a wildcard loads: %+v", e)
		}
		exec(t, n, s, "UNLOAD SINGLE TABLE t_a")
		if got, want := rowStrings(exec(t, n, s, "SHOW SINGLE TABLE t_c")), [][]string{{"t_c", "u1"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("after UNLOAD t_a: %v, want %v", got, want)
		}
		exec(t, n, s, "LOAD SINGLE TABLE *.*")
		if got := rowStrings(exec(t, n, s, "SHOW SINGLE TABLES LIKE 't_%'")); len(got) != 3 {
			t.Errorf("after LOAD *.*: %v", got)
		}
		exec(t, n, s, "UNLOAD ALL SINGLE TABLES")
		if got := rowStrings(exec(t, n, s, "SHOW SINGLE TABLES")); len(got) != 0 {
			t.Errorf("after UNLOAD ALL: %v", got)
		}
	})
}
