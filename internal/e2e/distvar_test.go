package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestSetDistVariableNamesAPausedNode runs three serve processes on real
// etcd and on real ZooKeeper and sets a dist variable as SET DIST VARIABLE
// does: with every node running it returns once all three applied the new
// /props version, well before its timeout; with one paused by SIGSTOP
// (still online: its session has not expired) it returns at its timeout
// naming that node, and the node applies the value once resumed.
func TestSetDistVariableNamesAPausedNode(t *testing.T) {
	eachRegistry(t, func(t *testing.T, typ string) {
		ctx := testenv.Context(t)
		cl := startCluster(t, typ, 3, clusterOptions{prefix: "e2e-dv", port: 3500, ttl: 30})
		procs, r := cl.procs, cl.repo
		all := []string{"e2e-dv-1", "e2e-dv-2", "e2e-dv-3"}
		start := time.Now()
		out, err := distvar.Set(ctx, r, "sql_show", "true", distvar.Options{Timeout: 20 * time.Second})
		if err != nil || !slices.Equal(out.Applied, all) || len(out.Pending)+len(out.Unacknowledging) != 0 {
			t.Fatalf("SET with every node running = %+v, %v; want all three applied", out, err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("SET with every node running took %v", took)
		}

		paused := procs[1]
		paused.pause(t)
		const timeout = 3 * time.Second
		start = time.Now()
		out, err = distvar.Set(ctx, r, "sql_show", "false", distvar.Options{Timeout: timeout})
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out.Pending, []string{"e2e-dv-2"}) || !slices.Equal(out.Applied, []string{"e2e-dv-1", "e2e-dv-3"}) {
			t.Fatalf("SET with e2e-dv-2 paused = %+v; want e2e-dv-2 pending, the others applied", out)
		}
		if took < timeout || took > timeout+5*time.Second {
			t.Errorf("SET took %v with a timeout of %v", took, timeout)
		}
		t.Logf("%s: the paused node named after %v (timeout %v)", typ, took.Round(time.Millisecond), timeout)

		paused.resume(t)
		if err := distvar.Wait(ctx, r, out.Version, &out); err != nil || !slices.Equal(out.Applied, all) {
			t.Fatalf("after SIGCONT: %+v, %v; want all three applied", out, err)
		}
	})
}

// TestSetDistVariableOverMySQL types SET DIST VARIABLE into the mariadb
// client connected to one of three serve processes on real etcd and real
// ZooKeeper: with every node running it answers without warnings, and
// another node shows the value at once; with one node paused by SIGSTOP
// it answers after its timeout (3 s) with a warning naming that node.
func TestSetDistVariableOverMySQL(t *testing.T) {
	requireMariaDB(t)
	eachRegistry(t, func(t *testing.T, typ string) {
		nodes := startCluster(t, typ, 3, clusterOptions{prefix: "e2e-sv", mysql: true, ttl: 30}).mysql
		set := func(value string) (string, time.Duration) {
			t.Helper()
			start := time.Now()
			rows, stderr, err := mariadb(t, localCmd, "127.0.0.1", nodes[0].port, "root", "", "SET DIST VARIABLE sql_show = "+value, "--show-warnings")
			if err != nil {
				t.Fatalf("SET DIST VARIABLE sql_show = %s: %v\n%s", value, err, stderr)
			}
			var out []string
			for _, r := range rows {
				out = append(out, strings.Join(r, "\t"))
			}
			return strings.Join(out, "\n") + stderr, time.Since(start)
		}
		if out, _ := set("true"); strings.Contains(out, "Warning") {
			t.Fatalf("SET with every node running warned:\n%s", out)
		}
		rows, stderr, err := mariadb(t, localCmd, "127.0.0.1", nodes[2].port, "root", "", "SHOW DIST VARIABLE WHERE NAME = sql_show")
		if err != nil || len(rows) != 2 || column(t, rows, "variable_value")[0] != "true" {
			t.Fatalf("SHOW DIST VARIABLE on another node: %v, %v\n%s", rows, err, stderr)
		}

		paused := nodes[1]
		paused.pause(t)
		out, took := set("false")
		if !strings.Contains(out, "Warning") || !strings.Contains(out, paused.id) || strings.Contains(out, nodes[2].id) {
			t.Fatalf("SET with %s paused: want a warning naming it (and only it):\n%s", paused.id, out)
		}
		if took < distvar.DefaultTimeout || took > distvar.DefaultTimeout+10*time.Second {
			t.Errorf("SET with a paused node took %v, want its timeout %v", took, distvar.DefaultTimeout)
		}
		t.Logf("%s: %v\n%s", typ, took.Round(time.Millisecond), out)
	})
}
