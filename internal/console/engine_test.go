package console

import (
	"context"
	"errors"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// backends runs fn on a fresh namespace of real etcd and of real
// ZooKeeper.
func backends(t *testing.T, fn func(t *testing.T, open func(t *testing.T) registry.Repository)) {
	t.Run("etcd", func(t *testing.T) {
		s := etcdtest.New(t)
		ns := s.Namespace(t, "console")
		fn(t, func(t *testing.T) registry.Repository { return s.Open(t, ns) })
	})
	t.Run("zookeeper", func(t *testing.T) {
		s := zktest.New(t)
		ns := s.Namespace(t, "console")
		fn(t, func(t *testing.T) registry.Repository { return s.Open(t, ns) })
	})
}

// testNode is one node with its engine on a shared registry.
type testNode struct {
	repo   registry.Repository
	node   *cluster.Node
	store  *metadata.Store
	procs  *process.Table
	engine *Engine
}

// startNode opens a node, its metadata store, process responder and engine
// on repo; cleanup closes them. cfg may be nil.
// startNode starts a node with its engine; with SQLite units allowed (the
// tests' units) and opts applied to the engine's Deps.
func startNode(t *testing.T, repo registry.Repository, id string, cfg *config.Config, opts ...func(*Deps)) *testNode {
	t.Helper()
	ctx := testenv.Context(t)
	nc := cluster.Config{InstanceID: id, Port: 3307, Reservation: 600 * time.Millisecond, Labels: nil, Logger: quietLogger()}
	node, err := cluster.Open(ctx, repo, nc)
	if err != nil {
		t.Fatal(err)
	}
	store, err := metadata.Bootstrap(ctx, repo, nil, cfg, metadata.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = store.Run(runCtx) }()
	procs := process.NewTable()
	responder, err := process.Open(ctx, repo, process.Config{InstanceID: id, Table: procs, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	mode := config.Mode{Type: config.ModeCluster, Repository: config.Repository{Type: config.RepositoryEtcd, Namespace: "governance_ds",
		ServerLists: []string{"http://127.0.0.1:2379"}, Password: "hidden-secret", TimeToLive: 30 * time.Second}}
	deps := Deps{Repo: repo, Node: node, Metadata: store, Processes: procs, Mode: mode,
		ProcessTimeout: 3 * time.Second, Logger: quietLogger(), AllowSQLite: true}
	for _, o := range opts {
		o(&deps)
	}
	e := New(deps)
	t.Cleanup(func() {
		_ = e.Close(context.Background())
		responder.Close()
		stop()
		<-runDone
		_ = node.Close(context.Background())
	})
	testenv.Eventually(t, "node "+id+" to see itself", func() bool {
		for _, inst := range node.Instances() {
			if inst.ID == id {
				return true
			}
		}
		return false
	})
	return &testNode{repo: repo, node: node, store: store, procs: procs, engine: e}
}

func newSession() *Session {
	return &Session{ID: NewSessionID(), User: "root", Host: "127.0.0.1", Protocol: "MySQL"}
}

// exec runs query and fails the test on an error.
func exec(t *testing.T, n *testNode, s *Session, query string) *Result {
	t.Helper()
	res, err := n.engine.Execute(testenv.Context(t), s, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return res
}

// execError runs query and returns its *sqlerr.Error, failing the test when it
// succeeds or fails otherwise.
func execError(t *testing.T, n *testNode, s *Session, query string) *sqlerr.Error {
	t.Helper()
	_, err := n.engine.Execute(testenv.Context(t), s, query)
	var e *sqlerr.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: err = %v, want *sqlerr.Error", query, err)
	}
	return e
}

func columnNames(res *Result) []string {
	out := make([]string, len(res.Columns))
	for i, c := range res.Columns {
		out[i] = c.Name
	}
	return out
}

func rowStrings(res *Result) [][]string {
	out := make([][]string, len(res.Rows))
	for i, r := range res.Rows {
		for _, v := range r {
			if v == nil {
				out[i] = append(out[i], "NULL")
			} else {
				out[i] = append(out[i], *v)
			}
		}
	}
	return out
}

func TestSyntaxErrorCode(t *testing.T) {
	e := New(Deps{})
	_, err := e.Execute(context.Background(), newSession(), "SHOW COMPUTE NODEZ")
	var ce *sqlerr.Error
	if !errors.As(err, &ce) || ce.Code != 12000 || ce.SQLState != "42000" {
		t.Fatalf("err = %#v, want code 12000 state 42000", err)
	}
	want := "You have an error in your SQL syntax: near 'NODEZ' at line 1 column 14: NODES or NODE expected"
	if ce.Message != want {
		t.Errorf("message %q, want %q", ce.Message, want)
	}
	_, err = e.Execute(context.Background(), newSession(), " ; ")
	if !errors.As(err, &ce) || ce.Code != 12002 {
		t.Errorf("empty statement: %v", err)
	}
}

// twoNodes starts node-a and node-b on one repository of open and returns
// it and node-a once node-a sees node-b.
func twoNodes(t *testing.T, open func(t *testing.T) registry.Repository) (registry.Repository, *testNode) {
	t.Helper()
	repo := open(t)
	a := startNode(t, repo, "node-a", nil)
	startNode(t, repo, "node-b", nil)
	testenv.Eventually(t, "node-a to see node-b", func() bool { return len(a.node.Instances()) == 2 })
	return repo, a
}

// computeNode is column col of compute node id in SHOW COMPUTE NODES on
// n; "absent" when it is not listed.
func computeNode(t *testing.T, n *testNode, s *Session, id string, col int) string {
	t.Helper()
	for _, r := range rowStrings(exec(t, n, s, "SHOW COMPUTE NODES")) {
		if r[0] == id {
			return r[col]
		}
	}
	return "absent"
}

func TestComputeNodes(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		_, a := twoNodes(t, open)
		s := newSession()

		res := exec(t, a, s, "SHOW COMPUTE NODES")
		want := []string{"instance_id", "instance_type", "host", "port", "status", "mode_type", "worker_id", "labels", "version", "database_name"}
		if got := columnNames(res); !reflect.DeepEqual(got, want) {
			t.Fatalf("columns %v, want upstream's %v", got, want)
		}
		rows := rowStrings(res)
		if len(rows) != 2 || rows[0][0] != "node-a" || rows[1][0] != "node-b" {
			t.Fatalf("rows %v", rows)
		}
		for _, r := range rows {
			if r[1] != "PROXY" || r[2] != "127.0.0.1" || r[3] != "3307" || r[4] != "OK" || r[5] != "Cluster" || r[8] != cluster.Version {
				t.Errorf("row %v", r)
			}
			if w, err := strconv.Atoi(r[6]); err != nil || w < 0 {
				t.Errorf("worker_id %q, want the node's real worker id", r[6])
			}
		}
		if rows[0][6] != strconv.Itoa(a.node.WorkerID()) {
			t.Errorf("worker_id %s, node holds %d", rows[0][6], a.node.WorkerID())
		}

		res = exec(t, a, s, "show compute node info")
		want = []string{"instance_id", "host", "port", "status", "mode_type", "worker_id", "labels", "version"}
		if got := columnNames(res); !reflect.DeepEqual(got, want) {
			t.Fatalf("INFO columns %v, want %v", got, want)
		}
		if got := rowStrings(res); len(got) != 1 || got[0][0] != "node-a" || got[0][5] != strconv.Itoa(a.node.WorkerID()) {
			t.Errorf("INFO rows %v", got)
		}

		res = exec(t, a, s, "SHOW COMPUTE NODE MODE")
		if got := columnNames(res); !reflect.DeepEqual(got, []string{"type", "repository", "props"}) {
			t.Fatalf("MODE columns %v", got)
		}
		row := rowStrings(res)[0]
		if row[0] != "Cluster" || row[1] != "etcd" || !strings.Contains(row[2], `"namespace":"governance_ds"`) || !strings.Contains(row[2], `"timeToLiveSeconds":30`) {
			t.Errorf("MODE row %v", row)
		}
		if strings.Contains(row[2], "hidden-secret") {
			t.Errorf("MODE shows the repository password: %s", row[2])
		}
	})
}

func TestShowNextKeys(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		n := startNode(t, open(t), "keys", nil)
		s := newSession()
		res := exec(t, n, s, "SHOW NEXT KEYS")
		if len(res.Rows) != 1 || res.Columns[0].Name != "key" || res.Columns[0].Type != Int64 {
			t.Fatalf("SHOW NEXT KEYS: %v %v", columnNames(res), rowStrings(res))
		}
		res = exec(t, n, s, "SHOW NEXT KEYS COUNT 1000")
		rows := rowStrings(res)
		if len(rows) != 1000 {
			t.Fatalf("%d keys", len(rows))
		}
		prev := int64(0)
		for _, r := range rows {
			k, err := strconv.ParseInt(r[0], 10, 64)
			if err != nil || k <= prev {
				t.Fatalf("key %q after %d: not increasing", r[0], prev)
			}
			if w := int(k>>12) & 1023; w != n.node.WorkerID() {
				t.Fatalf("key %d has worker id %d, node holds %d", k, w, n.node.WorkerID())
			}
			prev = k
		}
		for _, q := range []string{"SHOW NEXT KEYS COUNT 0", "SHOW NEXT KEYS COUNT 100001"} {
			if e := execError(t, n, s, q); e.Code != 1210 {
				t.Errorf("%s: %v", q, e)
			}
		}
	})
}

func TestEnableDisableComputeNode(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		_, a := twoNodes(t, open)
		s := newSession()
		status := func(id string) string { return computeNode(t, a, s, id, 4) }
		exec(t, a, s, "DISABLE COMPUTE NODE 'node-b'")
		testenv.Eventually(t, "node-b to show CIRCUIT_BREAK", func() bool { return status("node-b") == "CIRCUIT_BREAK" })
		for q, msg := range map[string]string{
			"DISABLE COMPUTE NODE 'node-b'":  "Unsupported SQL operation: `node-b` compute node has been disabled.",
			"DISABLE COMPUTE NODE `node-a`":  "Unsupported SQL operation: `node-a` is the currently in use instance and cannot be disabled.",
			"ENABLE COMPUTE NODE 'no-such'":  "Unsupported SQL operation: `no-such` does not exist.",
			"LABEL COMPUTE NODE 'x' WITH l1": "Unsupported SQL operation: `x` does not exist.",
		} {
			e := execError(t, a, s, q)
			if e.Code != 30001 || e.SQLState != "0A000" || e.Message != msg {
				t.Errorf("%s: %d %s %q, want 30001 0A000 %q", q, e.Code, e.SQLState, e.Message, msg)
			}
		}
		exec(t, a, s, "ENABLE COMPUTE NODE 'node-b'")
		testenv.Eventually(t, "node-b to show OK", func() bool { return status("node-b") == "OK" })
	})
}

func TestLabelComputeNode(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		repo, a := twoNodes(t, open)
		s := newSession()
		labels := func(id string) string { return computeNode(t, a, s, id, 7) }
		exec(t, a, s, "LABEL COMPUTE NODE 'node-b' WITH sh1, sh2")
		testenv.Eventually(t, "labels sh1,sh2", func() bool { return labels("node-b") == "sh1,sh2" })
		kv, err := repo.Get(testenv.Context(t), "/nodes/compute_nodes/labels/node-b")
		if err != nil || string(kv.Value) != "- sh1\n- sh2\n" {
			t.Fatalf("labels node %q %v, want ShardingSphere's YAML list", kv.Value, err)
		}
		exec(t, a, s, "LABEL COMPUTE NODE 'node-b' WITH sh3, sh1")
		testenv.Eventually(t, "labels merged", func() bool { return labels("node-b") == "sh3,sh1,sh2" })
		exec(t, a, s, "UNLABEL COMPUTE NODE 'node-b' WITH sh1")
		testenv.Eventually(t, "sh1 removed", func() bool { return labels("node-b") == "sh3,sh2" })
		exec(t, a, s, "RELABEL COMPUTE NODE 'node-b' WITH only")
		testenv.Eventually(t, "relabelled", func() bool { return labels("node-b") == "only" })
		exec(t, a, s, "UNLABEL COMPUTE NODE 'node-b'")
		testenv.Eventually(t, "no labels", func() bool { return labels("node-b") == "" })
		exec(t, a, s, "LABEL COMPUTE NODE 'node-a' WITH self")
		testenv.Eventually(t, "self labelled", func() bool { return labels("node-a") == "self" })
		if got := rowStrings(exec(t, a, s, "SHOW COMPUTE NODE INFO"))[0][6]; got != "self" {
			t.Errorf("INFO labels %q", got)
		}
	})
}

func TestDistVariables(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		repo := open(t)
		n := startNode(t, repo, "vars", nil)
		s := newSession()
		res := exec(t, n, s, "SHOW DIST VARIABLES")
		if got := columnNames(res); !reflect.DeepEqual(got, []string{"variable_name", "variable_value"}) {
			t.Fatalf("columns %v", got)
		}
		rows := rowStrings(res)
		names := map[string]string{}
		for i, r := range rows {
			names[r[0]] = r[1]
			if i > 0 && rows[i-1][0] >= r[0] {
				t.Errorf("not sorted: %s before %s", rows[i-1][0], r[0])
			}
		}
		if names["sql_show"] != "false" || names["cached_connections"] != "0" || names["proxy_default_port"] != "3307" {
			t.Errorf("rows %v", rows)
		}
		if _, ok := names["proxy_meta_data_collector_cron"]; ok {
			t.Errorf("a temporary property is listed without TEMP")
		}
		if len(rows) != len(config.KnownProps)-len(temporaryProps)+1 {
			t.Errorf("%d rows, want every configuration property and cached_connections", len(rows))
		}
		temp := rowStrings(exec(t, n, s, "SHOW TEMP DIST VARIABLES"))
		if len(temp) != len(temporaryProps) || temp[0][0] != "instance_connection_enabled" {
			t.Errorf("TEMP rows %v", temp)
		}
		if got := rowStrings(exec(t, n, s, "SHOW DIST VARIABLES LIKE 'sql_s%'")); !reflect.DeepEqual(got, [][]string{{"sql_show", "false"}, {"sql_simple", "false"}}) {
			t.Errorf("LIKE: %v", got)
		}
		if err := metadata.SetProps(testenv.Context(t), repo, map[string]string{"sql-show": "true"}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "sql_show true", func() bool {
			return reflect.DeepEqual(rowStrings(exec(t, n, s, "SHOW DIST VARIABLE WHERE NAME = SQL_SHOW")), [][]string{{"sql_show", "true"}})
		})
		if got := rowStrings(exec(t, n, s, "SHOW DIST VARIABLE WHERE NAME = cached_connections")); got[0][1] != "0" {
			t.Errorf("cached_connections %v", got)
		}
		e := execError(t, n, s, "SHOW DIST VARIABLE WHERE NAME = worker_id")
		if e.Code != 12010 || e.SQLState != "44000" || e.Message != "Can not support variable 'WORKER_ID'." {
			t.Errorf("worker_id: %+v", e)
		}
	})
}

// TestComputeNodesLayout554 checks a node writing the 5.5.4 layout: SHOW
// COMPUTE NODES and SHOW COMPUTE NODE INFO without the labels column, and
// LABEL, RELABEL and UNLABEL COMPUTE NODE refused, the registry unchanged.
func TestComputeNodesLayout554(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		repo, a := twoNodes(t, open)
		a.engine.d.Mode.Repository.Layout = paths.Layout554
		s := newSession()
		res := exec(t, a, s, "SHOW COMPUTE NODES")
		want := []string{"instance_id", "instance_type", "host", "port", "status", "mode_type", "worker_id", "version", "database_name"}
		if got := columnNames(res); !reflect.DeepEqual(got, want) {
			t.Fatalf("columns %v, want 5.5.4's %v", got, want)
		}
		for _, r := range rowStrings(res) {
			if len(r) != len(want) || r[7] != cluster.Version {
				t.Errorf("row %v", r)
			}
		}
		info := exec(t, a, s, "SHOW COMPUTE NODE INFO")
		if got := columnNames(info); !reflect.DeepEqual(got, []string{"instance_id", "host", "port", "status", "mode_type", "worker_id", "version"}) {
			t.Fatalf("INFO columns %v", got)
		}
		if r := rowStrings(info)[0]; len(r) != 7 || r[6] != cluster.Version {
			t.Fatalf("INFO row %v", r)
		}
		for _, q := range []string{"LABEL COMPUTE NODE 'node-b' WITH sh1", "RELABEL COMPUTE NODE 'node-b' WITH sh1", "UNLABEL COMPUTE NODE 'node-b'"} {
			e := execError(t, a, s, q)
			if e.SQLState != "0A000" || !strings.Contains(e.Message, "5.5.4") || !strings.Contains(e.Message, strings.Fields(q)[0]) {
				t.Errorf("%s: %+v", q, e)
			}
		}
		if _, err := repo.Get(testenv.Context(t), "/nodes/compute_nodes/labels/node-b"); !errors.Is(err, registry.ErrNotFound) {
			t.Fatalf("labels node: %v, want none", err)
		}
	})
}

// TestHostileLabelCountFirst: a LABEL, RELABEL or UNLABEL with more labels than
// a node may have is refused from the count, before the registry is read
// or the labels compared (100,000 labels cost 18 s of CPU when the
// duplicate check ran first).
func TestHostileLabelCountFirst(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		var labelReads atomic.Int64
		repo := fault.Observe(open(t), fault.HookFunc(func(_ context.Context, op, key string) (func(error) error, error) {
			if strings.HasPrefix(key, "/nodes/compute_nodes/labels/") {
				labelReads.Add(1)
			}
			return nil, nil
		}))
		n := startNode(t, repo, "node-a", nil)
		s := newSession()
		var b strings.Builder
		for i := range 100000 {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "l%d", i%50000) // duplicates too
		}
		for _, verb := range []string{"LABEL", "RELABEL", "UNLABEL"} {
			q := verb + " COMPUTE NODE 'node-a' WITH " + b.String()
			_, err := n.engine.Execute(testenv.Context(t), s, q)
			var e *sqlerr.Error
			if !errors.As(err, &e) || e.Code != 30001 || !strings.Contains(e.Message, "at most 64 labels") {
				t.Errorf("%s with 100,000 labels: %.200v, want 30001 at most 64 labels", verb, err)
			}
		}
		if got := labelReads.Load(); got != 0 {
			t.Errorf("%d registry calls on the labels node, want 0: the count is checked first", got)
		}
		exec(t, n, s, "LABEL COMPUTE NODE 'node-a' WITH a, b, a")
		testenv.Eventually(t, "labels a,b", func() bool { return computeNode(t, n, s, "node-a", 7) == "a,b" })
	})
}
