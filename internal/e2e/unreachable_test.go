package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// ownServers are an etcd and a ZooKeeper server of the test's own
// (scripts/servers.sh in a child shell), which it may stop and resume
// without disturbing the tests that share the usual ones.
type ownServers struct {
	etcd, zk       string // endpoints / servers
	etcdPID, zkPID int
}

// startOwnServers starts them and stops them at the test's cleanup (the
// child shell's exit trap).
func startOwnServers(t *testing.T) *ownServers {
	t.Helper()
	script, err := filepath.Abs("../../scripts/servers.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", `source "$0" && start_servers >&2 && `+
		`echo "servers $SHARDKEEPER_ETCD_ENDPOINTS $SHARDKEEPER_ZK_SERVERS $SK_ETCD_PID $SK_ZK_PID" && read -r _`, script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testenv.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // read returns, the shell exits, its trap stops the servers
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	s := &ownServers{}
	if _, perr := fmt.Sscanf(line, "servers %s %s %d %d", &s.etcd, &s.zk, &s.etcdPID, &s.zkPID); err != nil || perr != nil {
		t.Fatalf("servers.sh: %q, %v, %v\n%s", line, err, perr, stderr.String())
	}
	return s
}

// signal sends sig to the server of registry typ.
func (s *ownServers) signal(t *testing.T, typ string, sig syscall.Signal) {
	t.Helper()
	pid := s.etcdPID
	if typ == config.RepositoryZooKeeper {
		pid = s.zkPID
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
}

// TestDistSQLWithTheRegistryStopped types the DistSQL that writes the
// registry into mariadb connected to a node whose registry (an etcd or
// ZooKeeper of the test's own) is stopped with SIGSTOP: SET DIST VARIABLE,
// IMPORT DATABASE CONFIGURATION, LOCK CLUSTER and REGISTER STORAGE UNIT
// each fail within a bound with an error that names the registry, never
// report success (ShardingSphere does, apache/shardingsphere#38641), and
// after SIGCONT the registry holds exactly what it held before.
func TestDistSQLWithTheRegistryStopped(t *testing.T) {
	requireMariaDB(t)
	own := startOwnServers(t)
	eachRegistry(t, func(t *testing.T, typ string) {
		// The two registries run at once: each stops only its own server,
		// its node has ports of its own, and most of each run is the node
		// waiting out its request timeout (4 statements of up to 10 s).
		t.Parallel()
		servers := own.etcd
		if typ == config.RepositoryZooKeeper {
			servers = own.zk
		}
		// The node's requests end within 10 s on etcd (its request
		// timeout) and within 2/3 of the session timeout on ZooKeeper
		// (when the client gives up on the connection): 10 s here too.
		conf := writeGlobal(t, typ, servers, 15, "")
		units := t.TempDir()
		unit := func(name string) string { return "jdbc:sqlite:" + filepath.Join(units, name+".db") }
		database := func(name string) string {
			return fmt.Sprintf("databaseName: %s\ndataSources:\n  ds_0:\n    url: %s\nrules:\n- !SHARDING\n  tables:\n    t_order:\n      actualDataNodes: ds_0.t_order_${0..1}\n", name, unit(name))
		}
		if err := os.WriteFile(filepath.Join(conf, "database-boot.yaml"), []byte(database("boot_db")), 0o644); err != nil {
			t.Fatal(err)
		}
		imported := filepath.Join(t.TempDir(), "imported.yaml")
		if err := os.WriteFile(imported, []byte(database("imported_db")), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx := testenv.Context(t)
		mode, err := config.LoadMode(ctx, conf)
		if err != nil {
			t.Fatal(err)
		}
		repo, err := connect.Open(ctx, mode.Repository, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = repo.Close() })
		n := startMySQLNode(t, conf, "e2e-stopped-1", "127.0.0.1")
		dump := func() map[string]string {
			t.Helper()
			kvs, err := repo.List(testenv.Context(t), "/")
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]string{}
			for _, kv := range kvs {
				// Liveness keys and the fences move by themselves.
				if !registry.IsUnder(kv.Key, "/nodes") && !registry.IsUnder(kv.Key, "/reservation") {
					out[kv.Key] = string(kv.Value)
				}
			}
			return out
		}
		// The registry is ready for every statement: they fail because it
		// is stopped, not for another reason.
		before := dump()

		statements := []string{
			"SET DIST VARIABLE sql_show = true",
			"IMPORT DATABASE CONFIGURATION FROM FILE '" + imported + "'",
			"LOCK CLUSTER WITH LOCK_STRATEGY(TYPE='WRITE')",
			fmt.Sprintf("USE boot_db; REGISTER STORAGE UNIT ds_1 (URL='%s', USER='', PASSWORD='')", unit("boot_ds_1")),
		}
		const bound = 25 * time.Second
		own.signal(t, typ, syscall.SIGSTOP)
		stopped := true
		defer func() {
			if stopped {
				own.signal(t, typ, syscall.SIGCONT)
			}
		}()
		for _, st := range statements {
			sctx, cancel := context.WithTimeout(context.Background(), bound+30*time.Second)
			start := time.Now()
			rows, stderr, err := mariadb(t, func(name string, args ...string) *exec.Cmd {
				return exec.CommandContext(sctx, name, args...)
			}, "127.0.0.1", n.port, "root", "", st)
			took := time.Since(start)
			cancel()
			t.Logf("%s, registry stopped: %v after %v: %s", typ, err, took.Round(time.Millisecond), strings.TrimSpace(stderr))
			if err == nil {
				t.Errorf("%s with the registry stopped reported success (rows %v)", st, rows)
				continue
			}
			if took > bound {
				t.Errorf("%s with the registry stopped answered after %v, over %v", st, took, bound)
			}
			if !strings.Contains(strings.ToLower(stderr), "registry") {
				t.Errorf("%s with the registry stopped: error %q does not name the registry", st, stderr)
			}
		}
		own.signal(t, typ, syscall.SIGCONT)
		stopped = false
		// Nothing half-written, and nothing written late: the node's
		// retries, if any, have had their time once it answers again.
		testenv.Eventually(t, "the node to answer after SIGCONT", func() bool {
			_, _, err := mariadb(t, localCmd, "127.0.0.1", n.port, "root", "", "SHOW DIST VARIABLE WHERE NAME = sql_show")
			return err == nil
		})
		time.Sleep(2 * time.Second)
		if after := dump(); !reflect.DeepEqual(before, after) {
			var diff []string
			for k, v := range after {
				if w, ok := before[k]; !ok || w != v {
					diff = append(diff, fmt.Sprintf("+ %s = %q", k, v))
				}
			}
			for k := range before {
				if _, ok := after[k]; !ok {
					diff = append(diff, "- "+k)
				}
			}
			t.Errorf("the registry changed while it was stopped:\n%s", strings.Join(diff, "\n"))
		}
	})
}
