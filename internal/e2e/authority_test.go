package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestUsersAddedLaterRefuseStart follows the README's order the wrong way
// round with the real binary and mariadb, on real etcd and ZooKeeper: a
// node started without users (loopback-only: `mariadb -pnope` gets in,
// and is told once that no password was checked) creates a database; then
// users are added to global.yaml. The next start refuses, naming the users
// and never a password, and the two ways on; a start with
// --apply-authority writes them (logged), after which the wrong password
// is refused (1045), the right one logs in, and a plain start is clean.
func TestUsersAddedLaterRefuseStart(t *testing.T) {
	requireMariaDB(t)
	const secret = "app-Secret-9"
	eachRegistry(t, func(t *testing.T, typ string) {
		conf := writeGlobal(t, typ, registryServers(t, typ), 10, "")
		first := startMySQLNode(t, conf, "e2e-auth-1", "127.0.0.1")
		told, err := exec.Command("mariadb", "--protocol=TCP", "-h", "127.0.0.1", "-P", strconv.Itoa(first.port), "-u", "root", "-pnope",
			"--batch", "--show-warnings", "-e", "CREATE DATABASE app_db; SHOW DATABASES").CombinedOutput()
		if err != nil || strings.Count(string(told), "no users are configured on this node") != 1 || !strings.Contains(string(told), "app_db") {
			t.Fatalf("loopback-only mode, a password sent: %v\n%s", err, told)
		}
		if err := first.stop(t); err != nil {
			t.Fatalf("stop: %v", err)
		}

		users := "authority:\n  users:\n    - user: root@%\n      password: root\n      admin: true\n    - user: app@%\n      password: " + secret + "\n"
		f, err := os.OpenFile(filepath.Join(conf, "global.yaml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(users); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()

		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		refused := exec.CommandContext(ctx, testenv.ShardkeeperBinary(t), "serve", "--conf", conf, "--instance-id", "e2e-auth-2",
			"--mysql", "127.0.0.1:"+strconv.Itoa(freePort(t)), "--http", "off", "--reservation", "1500ms")
		out, err := refused.CombinedOutput()
		if err == nil || ctx.Err() != nil {
			t.Fatalf("a node whose users differ from the registry's started (or hung): %v\n%s", err, out)
		}
		for _, want := range []string{"root@% only in the local configuration", "app@% only in the local configuration", "the registry has no users",
			"--apply-authority", "remove the authority rule from the local global.yaml"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("the refusal lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(string(out), secret) {
			t.Fatalf("the refusal shows a password:\n%s", out)
		}

		applied := startMySQLNode(t, conf, "e2e-auth-3", "127.0.0.1", "--apply-authority")
		if log := applied.stderr.String(); !strings.Contains(log, "applying the local authority rule") || strings.Contains(log, secret) {
			t.Fatalf("the apply's log:\n%s", log)
		}
		if _, stderr, err := mariadb(t, localCmd, "127.0.0.1", applied.port, "root", "nope", "SHOW COMPUTE NODES"); err == nil || !strings.Contains(stderr, "ERROR 1045 (28000)") {
			t.Fatalf("mariadb -u root -pnope after the apply: %v %s", err, stderr)
		}
		if _, stderr, err := mariadb(t, localCmd, "127.0.0.1", applied.port, "root", "root", "SHOW COMPUTE NODES"); err != nil {
			t.Fatalf("mariadb -u root -proot after the apply: %v %s", err, stderr)
		}
		if err := applied.stop(t); err != nil {
			t.Fatalf("stop: %v", err)
		}
		again := startMySQLNode(t, conf, "e2e-auth-4", "127.0.0.1")
		if strings.Contains(again.stderr.String(), "not_applied") {
			t.Fatalf("a start with the applied users still warns:\n%s", again.stderr.String())
		}
	})
}
