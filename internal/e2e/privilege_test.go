package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
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
      user-database-mappings: root@%=*, app@%=app_db
`

// TestConsolePrivileges drives one node on real etcd and on real ZooKeeper
// with the real mariadb and psql clients, as an admin (root) and as an
// ordinary user (app, permitted app_db only):
//
//   - app's IMPORT METADATA of an !AUTHORITY rule naming evil@% is refused
//     with 1045 on both protocols and changes nothing: root still logs in,
//     evil does not; EXPORT METADATA, IMPORT and files are refused to app
//     too; app sees and uses app_db only (1044 for other_db);
//   - while root's REGISTER STORAGE UNIT ... PASSWORD="..." runs on both
//     protocols, SHOW FULL PROCESSLIST shows it masked to root, not at all
//     to app, and the answer written to execution_nodes/{task}/{node} for
//     a ShardingSphere-style trigger holds the mask, never the password;
//     app cannot KILL root's session (1095);
//   - EXPORT ... TO FILE writes only new files in --distsql-file-dir, mode
//     0600: never outside it, never over an existing file or through a
//     link; a property value holding a newline stays one quoted YAML
//     value; IMPORT ... FROM FILE refuses a FIFO at once and a file
//     outside the directory with one message that shows none of it;
//   - a SQLite unit is refused without --allow-sqlite-units, its file not
//     created;
//   - app's REGISTER STORAGE UNIT of a refused port and of a silent one
//     answer alike on both protocols, after the unit's connection timeout.
func TestConsolePrivileges(t *testing.T) {
	requireMariaDB(t)
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql not found: scripts/servers.sh installs Debian postgresql-client")
	}
	jdbc, unitUser := mysqlUnitURL(t)
	eachRegistry(t, func(t *testing.T, typ string) {
		ctx := testenv.Context(t)
		dir := t.TempDir()
		outside := t.TempDir()
		pgAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		cl := startCluster(t, typ, 1, clusterOptions{prefix: "e2e-priv", mysql: true, global: privilegeUsers,
			extra: []string{"--distsql-file-dir", dir, "--postgresql", pgAddr}})
		n := cl.mysql[0]
		sql := func(user, statement string) ([][]string, string, error) {
			t.Helper()
			return mariadb(t, localCmd, "127.0.0.1", n.port, user, user, statement)
		}
		must := func(user, statement string) [][]string {
			t.Helper()
			rows, stderr, err := sql(user, statement)
			if err != nil {
				t.Fatalf("%s: %s: %v\n%s", user, statement, err, stderr)
			}
			return rows
		}
		refused := func(user, statement, code string) string {
			t.Helper()
			_, stderr, err := sql(user, statement)
			if err == nil || !strings.Contains(stderr, "ERROR "+code) {
				t.Fatalf("%s: %s: err %v, stderr %q; want ERROR %s", user, statement, err, stderr, code)
			}
			return stderr
		}
		psql := func(user, statement string) (string, error) {
			t.Helper()
			dsn := strings.Replace(pgDSN(pgAddr, user, user, "sslmode=disable"), "dbname=sharding_db", "dbname=app_db", 1)
			return psqlRun(t, user, dsn, "-v", "VERBOSITY=verbose", "-A", "-t", "-c", statement)
		}
		writeFile := func(name, content string) string {
			t.Helper()
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
		database := func(name string) string {
			return fmt.Sprintf("databaseName: %s\ndataSources:\n  ds_0:\n    url: %s\n    username: %s\n    password: ''\n", name, jdbc, unitUser)
		}
		must("root", "IMPORT DATABASE CONFIGURATION FROM FILE '"+writeFile("app.yaml", database("app_db"))+"'")
		must("root", "IMPORT DATABASE CONFIGURATION FROM FILE '"+writeFile("other.yaml", database("other_db"))+"'")

		// 1. app rewrites who may log in: refused on both protocols.
		info, err := json.Marshal(dbconfig.ClusterInfo{MetaData: dbconfig.ClusterMetaData{
			Rules: "rules:\n- !AUTHORITY\n  users:\n  - user: evil@%\n    password: evil\n    admin: true\n"}})
		if err != nil {
			t.Fatal(err)
		}
		evil := "IMPORT METADATA '" + base64.StdEncoding.EncodeToString(info) + "'"
		refused("app", evil, "1045 (28000)")
		if out, err := psql("app", evil); err == nil || !strings.Contains(out, "42501") || !strings.Contains(out, "needs an admin user") {
			t.Fatalf("psql: app's IMPORT METADATA: %v\n%s", err, out)
		}
		must("root", "SHOW COMPUTE NODES")
		refused("evil", "SHOW COMPUTE NODES", "1045 (28000)")
		refused("app", "EXPORT METADATA", "1045 (28000)")
		refused("app", "IMPORT DATABASE CONFIGURATION FROM FILE '"+filepath.Join(dir, "app.yaml")+"'", "1045 (28000)")
		refused("app", "EXPORT DATABASE CONFIGURATION FROM app_db TO FILE '"+filepath.Join(dir, "app-export.yaml")+"'", "1045 (28000)")
		if got := column(t, must("app", "SHOW DATABASES"), "Database"); !slices.Equal(got, []string{"app_db"}) {
			t.Fatalf("app's SHOW DATABASES: %v", got)
		}
		if got := column(t, must("root", "SHOW DATABASES"), "Database"); !slices.Equal(got, []string{"app_db", "other_db"}) {
			t.Fatalf("root's SHOW DATABASES: %v", got)
		}
		refused("app", "USE other_db", "1044 (42000)")
		refused("app", "SHOW STORAGE UNITS FROM other_db", "1044 (42000)")
		must("app", "SHOW STORAGE UNITS FROM app_db")
		if out, err := psql("app", "SHOW STORAGE UNITS FROM other_db"); err == nil || !strings.Contains(out, "42501") {
			t.Fatalf("psql: app's SHOW STORAGE UNITS FROM other_db: %v\n%s", err, out)
		}

		// 1b. Cluster-wide statements need an admin on both protocols, and
		// the global rules' secrets are masked to app.
		const recovery = "r3covery-Pa55"
		must("root", "ALTER TRANSACTION RULE (DEFAULT='XA', TYPE(NAME='Narayana', PROPERTIES('recoveryStoreUser'='sa', 'recoveryStorePassword'='"+recovery+"')))")
		for _, q := range []string{
			"LOCK CLUSTER WITH LOCK_STRATEGY(TYPE(NAME='READ_WRITE'))", "UNLOCK CLUSTER", "SET DIST VARIABLE sql_show = true",
			"ALTER TRANSACTION RULE (DEFAULT='LOCAL')", "ALTER SQL_PARSER RULE (PARSE_TREE_CACHE(INITIAL_CAPACITY=1, MAXIMUM_SIZE=2))",
			"ALTER SQL_FEDERATION RULE (SQL_FEDERATION_ENABLED=true)", "ALTER GLOBAL CLOCK RULE (TYPE='TSO', PROVIDER='local', ENABLED=true)",
			"LABEL COMPUTE NODE 'e2e-priv-1' WITH tenant_b", "DISABLE COMPUTE NODE 'e2e-priv-1'", "REFRESH DATABASE METADATA",
		} {
			if e := refused("app", q, "1045 (28000)"); !strings.Contains(e, "needs an admin user") {
				t.Fatalf("app: %s: %s", q, e)
			}
			if out, err := psql("app", q); err == nil || !strings.Contains(out, "42501") || !strings.Contains(out, "needs an admin user") {
				t.Fatalf("psql: app's %s: %v\n%s", q, err, out)
			}
		}
		if got := column(t, must("app", "SHOW TRANSACTION RULE"), "props"); len(got) != 1 || strings.Contains(got[0], recovery) || !strings.Contains(got[0], `"recoveryStorePassword":"******"`) {
			t.Fatalf("app's SHOW TRANSACTION RULE: %v", got)
		}
		if out, err := psql("app", "SHOW TRANSACTION RULE"); err != nil || strings.Contains(out, recovery) || !strings.Contains(out, "******") {
			t.Fatalf("psql: app's SHOW TRANSACTION RULE: %v\n%s", err, out)
		}
		if got := column(t, must("root", "SHOW TRANSACTION RULE"), "props"); len(got) != 1 || !strings.Contains(got[0], recovery) {
			t.Fatalf("root's SHOW TRANSACTION RULE: %v", got)
		}
		must("root", "SHOW COMPUTE NODES")

		// 2. Passwords of running statements: masked, on both protocols,
		// in SHOW FULL PROCESSLIST and in the registry's answers.
		silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers: the ping waits
		if err != nil {
			t.Fatal(err)
		}
		defer silent.Close()
		go func() {
			for {
				c, err := silent.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		const secret = "s3cr3t-Pa55"
		register := fmt.Sprintf(`REGISTER STORAGE UNIT slow_%%s (URL="jdbc:mysql://%s/db", USER="u", PASSWORD="%s")`, silent.Addr(), secret)
		var clients []*exec.Cmd
		for _, c := range []*exec.Cmd{
			exec.Command("mariadb", "--protocol=TCP", "-h", "127.0.0.1", "-P", fmt.Sprint(n.port), "-u", "root", "-proot", "-D", "app_db", "-e", fmt.Sprintf(register, "my")),
			exec.Command("psql", "-X", strings.Replace(pgDSN(pgAddr, "root", "root", "sslmode=disable"), "dbname=sharding_db", "dbname=app_db", 1), "-c", fmt.Sprintf(register, "pg")),
		} {
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
		}
		defer func() {
			for _, c := range clients {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		}()
		var infos []string
		testenv.Eventually(t, "both REGISTER statements in root's SHOW FULL PROCESSLIST", func() bool {
			rows, _, err := sql("root", "SHOW FULL PROCESSLIST")
			if err != nil || len(rows) == 0 {
				return false
			}
			infos = nil
			for _, i := range column(t, rows, "Info") {
				if strings.Contains(i, "REGISTER STORAGE UNIT slow_") {
					infos = append(infos, i)
				}
			}
			return len(infos) == 2
		})
		for _, i := range infos {
			if strings.Contains(i, secret) || !strings.Contains(i, `PASSWORD="******"`) {
				t.Fatalf("SHOW FULL PROCESSLIST shows %q", i)
			}
		}
		rows := must("app", "SHOW FULL PROCESSLIST")
		for _, u := range column(t, rows, "User") {
			if u != "app" {
				t.Fatalf("app sees %s's sessions: %v", u, rows)
			}
		}
		// A ShardingSphere node's trigger: the answer persisted for it.
		task := fmt.Sprintf("%032x", time.Now().UnixNano()) // an asker's task id: 32 hex digits
		trigger, err := paths.ShowProcessListTrigger("e2e-priv-1", task)
		if err != nil {
			t.Fatal(err)
		}
		answer, err := paths.ExecutionNode(task, "e2e-priv-1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.repo.Put(ctx, trigger, nil); err != nil {
			t.Fatal(err)
		}
		var persisted string
		testenv.Eventually(t, "the answer under "+answer, func() bool {
			kv, err := cl.repo.Get(ctx, answer)
			persisted = string(kv.Value)
			return err == nil && strings.Count(persisted, "REGISTER STORAGE UNIT slow_") == 2
		})
		_ = cl.repo.Delete(ctx, answer)
		if strings.Contains(persisted, secret) || !strings.Contains(persisted, "******") {
			t.Fatalf("%s holds:\n%s", answer, persisted)
		}
		// app may not end root's session.
		var rootID string
		for _, r := range must("root", "SHOW PROCESSLIST")[1:] {
			if r[1] == "root" && strings.HasPrefix(r[7], "REGISTER") {
				rootID = r[0]
			}
		}
		refused("app", "KILL "+rootID, "1095 (HY000)")

		// 3. Server files: only new files in the directory, 0600.
		victim := filepath.Join(outside, "authorized_keys")
		if err := os.WriteFile(victim, []byte("ssh-ed25519 AAAA owner\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		must("root", "USE app_db; REGISTER STORAGE UNIT nl (URL='"+jdbc+"', USER='"+unitUser+"', PASSWORD='', PROPERTIES('x'='\nssh-ed25519 AAAAC3Nz evil@attacker\n'))")
		for _, target := range []string{victim, filepath.Join(dir, "link"), filepath.Join(dir, "app.yaml"), "../" + filepath.Base(outside) + "/x"} {
			refused("root", "EXPORT DATABASE CONFIGURATION FROM app_db TO FILE '"+target+"'", "30020 (HY000)")
		}
		if b, _ := os.ReadFile(victim); string(b) != "ssh-ed25519 AAAA owner\n" {
			t.Fatalf("a file outside the directory was written: %q", b)
		}
		if st, _ := os.Stat(victim); st.Mode().Perm() != 0o644 {
			t.Fatalf("the victim's mode changed: %v", st.Mode())
		}
		export := filepath.Join(dir, "export.yaml")
		must("root", "EXPORT DATABASE CONFIGURATION FROM app_db TO FILE '"+export+"'")
		st, err := os.Stat(export)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("exported file: %v %v", st, err)
		}
		b, _ := os.ReadFile(export)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "ssh-ed25519") {
				t.Fatalf("the property's newline made a line of its own:\n%s", b)
			}
		}
		if !strings.Contains(string(b), "evil@attacker") {
			t.Fatalf("the property is not in the export:\n%s", b)
		}
		// A FIFO is refused at once, not waited on.
		if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		stderr := refused("root", "IMPORT DATABASE CONFIGURATION FROM FILE '"+filepath.Join(dir, "fifo")+"'", "30020 (HY000)")
		if d := time.Since(start); d > 10*time.Second || !strings.Contains(stderr, "not a regular file") {
			t.Fatalf("FIFO: %v after %v", stderr, d)
		}

		// 11. A file outside the directory: one refusal that shows nothing
		// of it.
		leak := filepath.Join(outside, "leak.yaml")
		if err := os.WriteFile(leak, []byte("sshkeyname: AAAA-first-chars\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{leak, filepath.Join(outside, "missing.yaml"), "/etc/passwd"} {
			stderr := refused("root", "IMPORT DATABASE CONFIGURATION FROM FILE '"+f+"'", "30020 (HY000)")
			if strings.Contains(stderr, "sshkeyname") || strings.Contains(stderr, "AAAA") || strings.Contains(stderr, "root:") ||
				strings.Contains(stderr, "no such file") || !strings.Contains(stderr, "only files directly in the node's --distsql-file-dir") {
				t.Fatalf("refusal of %s: %s", f, stderr)
			}
		}
		// SQLite units: off unless the operator allows them.
		lite := filepath.Join(outside, "created.db")
		stderr = refused("root", "USE app_db; REGISTER STORAGE UNIT lite (URL='jdbc:sqlite:"+lite+"', USER='')", "10110 (08000)")
		if !strings.Contains(stderr, "--allow-sqlite-units") {
			t.Fatalf("SQLite refusal: %s", stderr)
		}
		if _, err := os.Stat(lite); err == nil {
			t.Fatal("a refused SQLite unit created its file")
		}

		// 11. An ordinary user's REGISTER STORAGE UNIT is no port scanner:
		// a refused port and a silent one answer alike, after the timeout.
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		refusedAddr := closed.Addr().String()
		_ = closed.Close()
		probe := func(addr string) string {
			return fmt.Sprintf("REGISTER STORAGE UNIT probe (URL='jdbc:mysql://%s/db', USER='u', PASSWORD='', PROPERTIES('connectionTimeoutMilliseconds'=2000))", addr)
		}
		var answers []string
		for _, addr := range []string{refusedAddr, silent.Addr().String()} {
			start := time.Now()
			stderr := strings.Replace(refused("app", "USE app_db; "+probe(addr), "10110 (08000)"), addr, "ADDR", -1)
			mysqlTook := time.Since(start)
			start = time.Now()
			out, err := psql("app", probe(addr))
			pgTook := time.Since(start)
			if err == nil || !strings.Contains(out, "08000") {
				t.Fatalf("psql: app's probe of %s: %v\n%s", addr, err, out)
			}
			for _, took := range []time.Duration{mysqlTook, pgTook} {
				if took < 2*time.Second {
					t.Fatalf("app's probe of %s answered after %v, before the unit's 2 s connection timeout", addr, took)
				}
			}
			answers = append(answers, stderr, strings.Replace(out, addr, "ADDR", -1))
		}
		if answers[0] != answers[2] || answers[1] != answers[3] || !strings.Contains(answers[0], "could not connect within 2s") {
			t.Fatalf("a refused and a silent port answer differently:\n%s", strings.Join(answers, "\n"))
		}
	})
}

// TestLoopbackOnlyWarnsEveryLocalProcessIsAdmin: with no users, the
// start log says that every local process is an admin.
func TestLoopbackOnlyWarnsEveryLocalProcessIsAdmin(t *testing.T) {
	requireMariaDB(t)
	cl := startCluster(t, "etcd", 1, clusterOptions{prefix: "e2e-noadmin", mysql: true})
	testenv.Eventually(t, "the warning", func() bool {
		return strings.Contains(cl.procs[0].stderr.String(), "every local process is an admin")
	})
}

// TestPrivilegeTypeRefusedAtLoad: serve refuses a privilege type it does
// not implement, naming the file and line, before it starts.
func TestPrivilegeTypeRefusedAtLoad(t *testing.T) {
	conf := writeGlobal(t, "etcd", strings.Join(testenv.EtcdEndpoints(t), ","), 0,
		"authority:\n  users:\n    - user: root@%\n      password: root\n  privilege:\n    type: SCHEMA_PRIVILEGES_PERMITTED\n")
	out, err := exec.Command(testenv.ShardkeeperBinary(t), "serve", "--conf", conf, "--http", "off", "--mysql", "off").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "global.yaml:") || !strings.Contains(string(out), `privilege type "SCHEMA_PRIVILEGES_PERMITTED" is not implemented`) {
		t.Fatalf("serve: %v\n%s", err, out)
	}
}

// TestEmbeddedDataDirIsNoFileDir: with the embedded registry, EXPORT
// METADATA TO FILE '<datadir>/member/snap/db' is refused and the node
// restarts on its data; --distsql-file-dir naming the data dir (or a
// directory inside it) refuses to start.
func TestEmbeddedDataDirIsNoFileDir(t *testing.T) {
	requireMariaDB(t)
	conf := t.TempDir()
	data := filepath.Join(conf, "data")
	files := t.TempDir()
	global := "mode:\n  type: Standalone\n  repository:\n    type: Embedded\n    props:\n      dataDir: " + data +
		"\n      clientUrl: " + fmt.Sprintf("http://127.0.0.1:%d", freePort(t)) + "\n"
	if err := os.WriteFile(filepath.Join(conf, "global.yaml"), []byte(global), 0o644); err != nil {
		t.Fatal(err)
	}
	n := startMySQLNode(t, conf, "e2e-embedded-files", "127.0.0.1", "--distsql-file-dir", files)
	snap := filepath.Join(data, "member", "snap", "db")
	_, stderr, err := mariadb(t, localCmd, "127.0.0.1", n.port, "root", "", "EXPORT METADATA TO FILE '"+snap+"'")
	if err == nil || !strings.Contains(stderr, "ERROR 30020") {
		t.Fatalf("EXPORT METADATA TO FILE %s: %v %s", snap, err, stderr)
	}
	if err := n.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	for _, bad := range []string{data, filepath.Join(data, "member")} {
		out, err := exec.Command(testenv.ShardkeeperBinary(t), "serve", "--conf", conf, "--http", "off", "--mysql", "off", "--distsql-file-dir", bad).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "must not be the registry's data dir") {
			t.Fatalf("--distsql-file-dir %s: %v\n%s", bad, err, out)
		}
	}
	// The data survived: the node starts on it again.
	startMySQLNode(t, conf, "e2e-embedded-files", "127.0.0.1")
}
