package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestJDBCCatalog browses both consoles of a node on real etcd and on real
// ZooKeeper through JDBC's DatabaseMetaData (getCatalogs, getSchemas,
// getTables, getColumns, getPrimaryKeys), what DBeaver, DataGrip and MySQL
// Workbench call, with Debian's MariaDB Connector/J and PostgreSQL JDBC
// driver (testdata/jdbc): each lists the logical database and its logic
// tables with their columns and primary keys.
func TestJDBCCatalog(t *testing.T) {
	requireMariaDB(t)
	jdbc := testenv.JDBC(t, "testdata/jdbc/JdbcCatalog.java", "JdbcCatalog")
	eachRegistry(t, func(t *testing.T, typ string) {
		n, pgAddr := startClientsNode(t, typ)
		testenv.Eventually(t, "the logic tables' columns", func() bool {
			rows, _, err := mariadb(t, localCmd, "127.0.0.1", n.port, "root", "", "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_NAME = 't_order'", "-D", "sharding_db")
			return err == nil && len(rows) == 4
		})
		for _, c := range []struct {
			name, url string
			wants     []string
		}{
			{"MariaDB Connector/J", fmt.Sprintf("jdbc:mariadb://127.0.0.1:%d/sharding_db", n.port), []string{
				"catalog sharding_db", "table sharding_db null t_order TABLE", "table sharding_db null t_user TABLE",
				"column t_order order_id BIGINT 0", "column t_order status VARCHAR 1", "column t_user name VARCHAR 1", "key t_order order_id 1",
			}},
			{"PostgreSQL JDBC", "jdbc:postgresql://" + pgAddr + "/sharding_db?sslmode=disable", []string{
				"catalog sharding_db", "schema public", "table null public t_order TABLE", "table null public t_user TABLE",
				"column t_order order_id int8 0", "column t_order status varchar 1", "column t_user name varchar 1", "key t_order order_id 1",
			}},
		} {
			out, err := jdbc(c.url, "root", "").CombinedOutput()
			if err != nil {
				t.Errorf("%s: %v\n%s", c.name, err, out)
				continue
			}
			for _, w := range c.wants {
				if !strings.Contains(string(out), w+"\n") {
					t.Errorf("%s: no %q in\n%s", c.name, w, out)
				}
			}
			t.Logf("%s:\n%s", c.name, out)
		}
	})
}
