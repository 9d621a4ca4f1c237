package console_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/pgfront"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
)

// clients is one node's engine behind both front ends, driven by the real
// mariadb and psql clients.
type clients struct {
	t              *testing.T
	mysqlPort      string
	pgHost, pgPort string
}

// startClients starts a node on repo with the MySQL and PostgreSQL front
// ends on one engine.
func startClients(t *testing.T, repo registry.Repository, id string) (*clients, *mysqlConsole) {
	t.Helper()
	for _, bin := range []string{"mariadb", "psql"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s client missing: bash -c 'source scripts/servers.sh && install_servers'", bin)
		}
	}
	mc := startMySQLConsole(t, repo, id, console.Deps{})
	pg, err := pgfront.New(pgfront.Config{Executor: mc.engine, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = pg.Serve(ln) }()
	t.Cleanup(func() { _ = pg.Close(context.Background()) })
	c := &clients{t: t}
	_, c.mysqlPort, _ = net.SplitHostPort(mc.addr)
	c.pgHost, c.pgPort, _ = net.SplitHostPort(ln.Addr().String())
	return c, mc
}

// mariadb runs statements ("; " between them) in one session of the real
// mariadb client, going on after an error, and returns its output.
func (c *clients) mariadb(statements string) string {
	c.t.Helper()
	statements = strings.ReplaceAll(statements, "; ", ";\n") // --force goes on at the next line
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mariadb", "--protocol=TCP", "-h", "127.0.0.1", "-P", c.mysqlPort, "-u", "root",
		"--skip-ssl", "--batch", "--skip-column-names", "--force", "--connect-timeout=10")
	cmd.Stdin = strings.NewReader(statements)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// psql runs statements in one session of the real psql client (going on
// after an error) and returns its output.
func (c *clients) psql(db, statements string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"-X", "-A", "-t", "-v", "VERBOSITY=verbose", "-h", c.pgHost, "-p", c.pgPort, "-U", "root", "-d", db}
	for _, s := range strings.Split(statements, ";\n") {
		args = append(args, "-c", s)
	}
	cmd := exec.CommandContext(ctx, "psql", args...)
	cmd.Env = append(cmd.Environ(), "PGSSLMODE=disable", "PGCONNECT_TIMEOUT=10")
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// persistRuleDB writes database name with units ds_0 and ds_1 and rules,
// as a ShardingSphere node sharing the namespace would, and waits for the
// node to load it.
func persistRuleDB(t *testing.T, repo registry.Repository, mc *mysqlConsole, name string, rules ...config.Rule) {
	t.Helper()
	db := config.Database{Name: name, DataSources: map[string]config.DataSource{}, Rules: rules}
	for _, u := range []string{"ds_0", "ds_1"} {
		db.DataSources[u] = config.DataSource{URL: "jdbc:mysql://127.0.0.1:1/" + u, Username: "u", MaxPoolSize: 2}
	}
	if err := metadatatest.CreateDatabase(testenv.Context(t), repo, paths.DefaultLayout, db); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the node to load "+name, func() bool {
		d := mc.store.Current().Databases[name]
		return d != nil && len(d.Units) == 2 && len(d.Rules) == len(rules)
	})
}

func shardingTables(tables map[string]any) config.Rule {
	return config.Rule{Type: "sharding", Content: map[string]any{"tables": tables}}
}

// TestUpstreamInlineSpelling is the $->{..} spelling of inline
// expressions, which ended the node (a panic in the statement's
// goroutine): CREATE SHARDING TABLE RULE with it, over the real mariadb
// and psql clients, expands it as ${..}; a rule item written in upstream's
// own form (actualDataNodes: ds_$->{0..1}.t_ss_$->{0..1}) answers SHOW
// SHARDING TABLE NODES, SHOW STORAGE UNITS WHERE USAGE_COUNT, SHOW RULES
// USED STORAGE UNIT, UNREGISTER STORAGE UNIT (in use) and further
// CREATEs; the node answers after each.
func TestUpstreamInlineSpelling(t *testing.T) {
	s := etcdtest.New(t)
	repo := s.Open(t, s.Namespace(t, "inline-spelling"))
	c, mc := startClients(t, repo, "inline-a")
	persistRuleDB(t, repo, mc, "up_db", shardingTables(map[string]any{
		"t_ss": map[string]any{"actualDataNodes": "ds_$->{0..1}.t_ss_$->{0..1}"},
	}))

	out := c.mariadb("USE up_db; CREATE SHARDING TABLE RULE t_my (DATANODES('ds_$->{0..1}.t_my_$->{[\"a\",\"b\"]}')); SHOW SHARDING TABLE NODES t_my")
	if want := "t_my\tds_0.t_my_a, ds_0.t_my_b, ds_1.t_my_a, ds_1.t_my_b"; !strings.Contains(out, want) {
		t.Fatalf("mariadb: CREATE and SHOW with $->{}:\n%s\nwant %q", out, want)
	}
	out = c.psql("up_db", "CREATE SHARDING TABLE RULE t_pg (DATANODES('ds_$->{0..1}.t_pg'));\nSHOW SHARDING TABLE NODES t_pg")
	if want := "t_pg|ds_0.t_pg, ds_1.t_pg"; !strings.Contains(out, want) {
		t.Fatalf("psql: CREATE and SHOW with $->{}:\n%s\nwant %q", out, want)
	}
	out = c.mariadb("USE up_db; SHOW SHARDING TABLE NODES t_ss; SHOW STORAGE UNITS WHERE USAGE_COUNT = 1; SHOW RULES USED STORAGE UNIT ds_1; UNREGISTER STORAGE UNIT ds_1; CREATE SHARDING TABLE RULE t_more (DATANODES('ds_0.t_more'))")
	for _, want := range []string{
		"t_ss\tds_0.t_ss_0, ds_0.t_ss_1, ds_1.t_ss_0, ds_1.t_ss_1",
		"sharding\tt_ss",
		"ERROR 10103 (44000) at line 5: Storage unit 'ds_1' still used by '[ShardingRule]'.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("mariadb on upstream's rule item: want %q in\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\nds_0\t") + strings.Count(out, "\nds_1\t"); n != 2 {
		t.Errorf("USAGE_COUNT = 1: %d units, want ds_0 and ds_1:\n%s", n, out)
	}
	out = c.psql("up_db", "SHOW SHARDING TABLE RULES")
	for _, table := range []string{"t_ss|", "t_my|", "t_pg|", "t_more|"} {
		if !strings.Contains(out, "\n"+table) && !strings.HasPrefix(out, table) {
			t.Errorf("psql: SHOW SHARDING TABLE RULES lacks %s\n%s", table, out)
		}
	}
}

// TestHostileInlineBounds replays the expansions that cost seconds of CPU
// and hundreds of MB from statements of a few hundred bytes, over the
// real mariadb and psql clients: each is refused with 10200 (44000) naming
// the bound before a name is built, nothing is written, and the session
// goes on. A stored rule beyond the bound (written by another node) is
// shown as written by SHOW SHARDING TABLE NODES, and a stored string that
// chains ${..} pieces in algorithm props leaves the usage count to the
// fields that name units.
func TestHostileInlineBounds(t *testing.T) {
	s := etcdtest.New(t)
	repo := s.Open(t, s.Namespace(t, "inline-bounds"))
	c, mc := startClients(t, repo, "bounds-a")
	persistRuleDB(t, repo, mc, "b_db")

	parts := make([]string, 8)
	for i := range parts {
		parts[i] = fmt.Sprintf("u%d_${0..9999}.t", i)
	}
	eleven := make([]string, 11) // 11 tables of 10,000 nodes: 110,000 in one statement
	for i := range eleven {
		eleven[i] = fmt.Sprintf("t_%d (DATANODES('ds_${0..1}.t_%d_${0..4999}'))", i, i)
	}
	for _, stmt := range []string{
		"CREATE SHARDING TABLE RULE t_x (DATANODES('" + strings.Join(parts, ",") + "'))", // the 177-byte statement
		"CREATE SHARDING TABLE RULE t_x (DATANODES('ds_${0..1}.t_${0..9999}${0..9999}'))",
		"CREATE SHARDING TABLE RULE t_x (DATANODES('ds_${0..1}.t_" + strings.Repeat("${0..9}", 30) + "'))",
		"CREATE SHARDING TABLE RULE t_x (STORAGE_UNITS('ds_${0..99999}'), SHARDING_COLUMN=id, TYPE(NAME='hash_mod', PROPERTIES('sharding-count'='4')))",
		"CREATE SHARDING TABLE RULE " + strings.Join(eleven, ", "),
	} {
		out := c.mariadb("USE b_db; " + stmt + "; SHOW SHARDING TABLE RULES")
		if !strings.Contains(out, "ERROR 10200 (44000)") || !strings.Contains(out, "names") {
			t.Errorf("mariadb: %.80s...: want 10200 naming the bound, got\n%.600s", stmt, out)
		}
		if strings.Contains(out, "t_x\t") || strings.Contains(out, "t_0\t") {
			t.Errorf("mariadb: %.80s...: a refused statement wrote its table:\n%.600s", stmt, out)
		}
		out = c.psql("b_db", stmt+";\nSHOW SHARDING TABLE RULES")
		if !strings.Contains(out, "ERROR:  44000:") || !strings.Contains(out, "names") {
			t.Errorf("psql: %.80s...: want 44000 naming the bound, got\n%.600s", stmt, out)
		}
	}
	// Within the bounds: 10,000 names in one expression.
	if out := c.mariadb("USE b_db; CREATE SHARDING TABLE RULE t_big (DATANODES('ds_${0..1}.t_big_${0..4999}')); SHOW SHARDING TABLE NODES t_big"); !strings.Contains(out, "ds_1.t_big_4999") {
		t.Errorf("10,000 nodes: %.300s", out)
	}

	// Stored by another node beyond the bounds: shown as written, and
	// the usage count reads only the fields that name units.
	chained := "${0..4095}" + strings.Repeat("${[a]}", 2000)
	persistRuleDB(t, repo, mc, "stored_db", shardingTables(map[string]any{
		"t_huge": map[string]any{"actualDataNodes": "ds_${0..1}.t_huge_${0..999999}"},
	}))
	persistRuleDB(t, repo, mc, "chain_db", config.Rule{Type: "sharding", Content: map[string]any{
		"tables": map[string]any{"t_c": map[string]any{"actualDataNodes": "ds_0.t_c",
			"tableStrategy": map[string]any{"standard": map[string]any{"shardingColumn": "id", "shardingAlgorithmName": "chain"}}}},
		"shardingAlgorithms": map[string]any{"chain": map[string]any{"type": "INLINE", "props": map[string]any{"algorithm-expression": chained, "note": "ds_1"}}},
	}})
	out := c.mariadb("USE stored_db; SHOW SHARDING TABLE NODES; SHOW STORAGE UNITS WHERE USAGE_COUNT = 1")
	if !strings.Contains(out, "t_huge\tds_${0..1}.t_huge_${0..999999}") {
		t.Errorf("stored_db: want t_huge as written:\n%.600s", out)
	}
	if n := strings.Count(out, "\nds_"); n != 2 {
		t.Errorf("stored_db: USAGE_COUNT = 1 lists %d units, want ds_0 and ds_1:\n%.600s", n, out)
	}
	out = c.psql("chain_db", "SHOW STORAGE UNITS WHERE USAGE_COUNT = 1;\nSHOW STORAGE UNITS WHERE USAGE_COUNT = 0")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "WARNING:") { // the loopback-only notice
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ds_0|") || !strings.HasPrefix(lines[1], "ds_1|") {
		t.Errorf("chain_db: USAGE_COUNT = 1 then 0: want ds_0 then ds_1 (a prop naming ds_1 is no use of it):\n%.600s\n%s", out, c.mariadb("USE chain_db; SHOW STORAGE UNITS"))
	}
}

// maskStatement is CREATE MASK RULE table with one algorithm of n props.
func maskStatement(table string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE MASK RULE %s (COLUMNS((NAME=phone, TYPE(NAME='KEEP_FIRST_N_LAST_M', PROPERTIES('first-n'=3, 'last-m'=4, 'replace-char'='*'", table)
	for i := range n {
		fmt.Fprintf(&b, ", 'extra-%d'='value-%d'", i, i)
	}
	b.WriteString(")))))")
	return b.String()
}

// TestHostileMaskProps replays CREATE MASK RULE with 20,000 props (249
// KB, seconds of CPU on every node) over the real mariadb client and with
// 2,000 over psql: refused with 10200 naming the bound of one algorithm's
// props, nothing written, the session goes on; 997 props besides the
// algorithm's own 3 are written.
func TestHostileMaskProps(t *testing.T) {
	s := etcdtest.New(t)
	repo := s.Open(t, s.Namespace(t, "mask-props"))
	c, mc := startClients(t, repo, "props-a")
	persistRuleDB(t, repo, mc, "m_db")
	out := c.mariadb("USE m_db; " + maskStatement("t_big", 20000) + "; SHOW MASK RULES")
	if !strings.Contains(out, "ERROR 10200 (44000)") || !strings.Contains(out, "more than the 1000 one algorithm may have") || strings.Contains(out, "t_big\t") {
		t.Errorf("mariadb, 20,000 props: want 10200 and nothing written:\n%.600s", out)
	}
	out = c.psql("m_db", maskStatement("t_big", 2000)+";\nSHOW MASK RULES")
	if !strings.Contains(out, "ERROR:  44000:") || !strings.Contains(out, "more than the 1000 one algorithm may have") || strings.Contains(out, "t_big|") {
		t.Errorf("psql, 2,000 props: want 44000 and nothing written:\n%.600s", out)
	}
	out = c.mariadb("USE m_db; " + maskStatement("t_ok", 997) + "; SHOW MASK RULES")
	if !strings.Contains(out, "t_ok\tphone\tKEEP_FIRST_N_LAST_M") {
		t.Errorf("mariadb, 1,000 props: want the rule written:\n%.300s", out)
	}
}
