package console_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	gmclient "github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-sql-driver/mysql"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/mysqlfront"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/pgfront"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
)

// TestKillQueryByConnectionID is the mariadb client's Ctrl-C: a SET DIST
// VARIABLE waits for a paused node (one whose acknowledgement never
// moves); KILL QUERY with the session's CONNECTION_ID() from a second
// connection cancels it with 1317 and the session goes on; KILL with the
// number closes the session. The id the handshake announces (the one the
// mariadb client sends) is CONNECTION_ID().
func TestKillQueryByConnectionID(t *testing.T) {
	s := etcdtest.New(t)
	repo := s.Open(t, s.Namespace(t, "kill"))
	ctx := testenv.Context(t)
	procs := process.NewTable()
	mc := startMySQLConsole(t, repo, "kill-a", console.Deps{Processes: procs, SetVariableTimeout: 10 * time.Minute, ProcessTimeout: 3 * time.Second})
	responder, err := process.Open(ctx, repo, process.Config{InstanceID: "kill-a", Table: procs, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(responder.Close)
	withPausedNode(t, repo, "kill-a", mc)
	addr := mc.addr

	// The handshake's connection id is CONNECTION_ID().
	gc, err := gmclient.Connect(addr, "root", "", "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := gc.Execute("SELECT CONNECTION_ID()")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := r.GetUint(0, 0); uint32(got) != gc.GetConnectionID() {
		t.Errorf("CONNECTION_ID() = %d, the handshake announced %d", got, gc.GetConnectionID())
	}
	_ = gc.Close()

	db, err := sql.Open("mysql", "root@tcp("+addr+")/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	a, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var id uint32
	if err := a.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}

	errc := make(chan error, 1)
	go func() {
		_, err := a.ExecContext(ctx, "SET DIST VARIABLE sql_show = true")
		errc <- err
	}()
	testenv.Eventually(t, "SET DIST VARIABLE to wait for the paused node", func() bool {
		for _, p := range procs.List() {
			if process.Number(p.ID) == id && !p.Idle && strings.HasPrefix(p.SQL, "SET DIST VARIABLE") {
				return true
			}
		}
		return false
	})
	if _, err := b.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", id)); err != nil {
		t.Fatalf("KILL QUERY %d: %v", id, err)
	}
	var me *gomysql.MySQLError
	select {
	case err := <-errc:
		if !errors.As(err, &me) || me.Number != 1317 {
			t.Fatalf("the killed SET DIST VARIABLE returned %v, want error 1317", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("KILL QUERY did not end the waiting SET DIST VARIABLE")
	}
	var again uint32
	if err := a.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&again); err != nil || again != id {
		t.Fatalf("the session after KILL QUERY: %d, %v; want it open as %d", again, err, id)
	}

	if _, err := b.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", id^1)); !errors.As(err, &me) || me.Number != 1094 {
		t.Errorf("KILL QUERY of a number no session has: %v, want 1094", err)
	}

	if _, err := b.ExecContext(ctx, fmt.Sprintf("KILL %d", id)); err != nil {
		t.Fatalf("KILL %d: %v", id, err)
	}
	testenv.Eventually(t, "the killed session to leave the process table", func() bool {
		for _, p := range procs.List() {
			if process.Number(p.ID) == id {
				return false
			}
		}
		return true
	})
	if err := a.PingContext(ctx); err == nil {
		t.Error("the connection of a killed session still answers")
	}
}

// withPausedNode adds to the cluster of mc (node id on repo, acknowledging
// SET DIST VARIABLE) a node that is online but never acknowledges one,
// so that SET DIST VARIABLE waits until its statement's context ends.
func withPausedNode(t *testing.T, repo registry.Repository, id string, mc *mysqlConsole) {
	t.Helper()
	ctx := testenv.Context(t)
	acker, err := distvar.StartAcker(ctx, repo, distvar.AckerConfig{InstanceID: id, Node: mc.node, Store: mc.store, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(acker.Close)
	// The paused node: online, its acknowledgement stuck at version 0.
	sess, err := repo.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close(context.Background()) })
	online, _ := paths.Online(paths.Proxy, id+"-paused")
	applied, _ := paths.PropsApplied(id + "-paused")
	for k, v := range map[string]string{online: "attribute: 10.0.0.9@3307\ndatabaseName: \"\"\nversion: " + cluster.Version + "\n", applied: "0"} {
		if err := sess.PutEphemeral(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the node to see the paused one", func() bool { return len(mc.node.Instances()) == 2 })
}

// finishing is an executor that reports each statement's end, with its
// error, once the statement's work (not only its answer) is over.
type finishing struct {
	console.Executor
	ended chan error
}

func (f finishing) Execute(ctx context.Context, s *console.Session, q string) (*console.Result, error) {
	res, err := f.Executor.Execute(ctx, s, q)
	f.ended <- err
	return res, err
}

// TestClientGoneCancelsStatement: a client that goes away while its
// statement runs (the real mariadb and psql, killed while SET DIST
// VARIABLE waits for a paused node) cancels the statement: its work ends
// with context.Canceled and the session leaves the process table at once,
// instead of the statement running to its own timeout (10 minutes here).
func TestClientGoneCancelsStatement(t *testing.T) {
	for _, bin := range []string{"mariadb", "psql"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s client missing: bash -c 'source scripts/servers.sh && install_servers'", bin)
		}
	}
	s := etcdtest.New(t)
	repo := s.Open(t, s.Namespace(t, "gone"))
	procs := process.NewTable()
	mc := startMySQLConsole(t, repo, "gone-a", console.Deps{Processes: procs, SetVariableTimeout: 10 * time.Minute})
	withPausedNode(t, repo, "gone-a", mc)
	exe := finishing{Executor: mc.engine, ended: make(chan error, 1)}
	my, err := mysqlfront.New(mysqlfront.Config{Executor: exe, Processes: procs, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	pg, err := pgfront.New(pgfront.Config{Executor: exe, Processes: procs, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	listen := func(serve func(net.Listener) error) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = serve(ln) }()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		return port
	}
	myPort, pgPort := listen(my.Serve), listen(pg.Serve)
	t.Cleanup(func() { _ = my.Close(context.Background()); _ = pg.Close(context.Background()) })

	for _, client := range []*exec.Cmd{
		exec.Command("mariadb", "--protocol=TCP", "-h", "127.0.0.1", "-P", myPort, "-u", "root", "--skip-ssl", "-e", "SET DIST VARIABLE sql_show = true"),
		exec.Command("psql", "-X", "-h", "127.0.0.1", "-p", pgPort, "-U", "root", "-d", "postgres", "-c", "SET DIST VARIABLE sql_show = false"),
	} {
		client.Env = append(client.Environ(), "PGSSLMODE=disable", "PGCONNECT_TIMEOUT=10")
		if err := client.Start(); err != nil {
			t.Fatal(err)
		}
		waiting := func() bool {
			for _, p := range procs.List() {
				if !p.Idle && strings.HasPrefix(p.SQL, "SET DIST VARIABLE") {
					return true
				}
			}
			return false
		}
		testenv.Eventually(t, client.Path+"'s SET DIST VARIABLE to wait for the paused node", waiting)
		if err := client.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = client.Wait()
		select {
		case err := <-exe.ended:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s gone: the statement ended with %v, want context.Canceled", client.Path, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s gone: its SET DIST VARIABLE still runs 30 s later", client.Path)
		}
		testenv.Eventually(t, client.Path+"'s session to leave the process table", func() bool { return len(procs.List()) == 0 })
	}
}
