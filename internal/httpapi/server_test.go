package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/computenode"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/registry/metered"
)

const testToken = "s3cret-token"

// testNode is one node (cluster.Node, metadata store, HTTP server) on a
// shared registry.
type testNode struct {
	node *cluster.Node
	srv  *Server
	http *httptest.Server
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startNode opens a node with its server on repo; cleanup closes both.
func startNode(t *testing.T, repo registry.Repository, id string, mutate func(*Config)) *testNode {
	t.Helper()
	ctx := testenv.Context(t)
	nc := cluster.Config{InstanceID: id, Port: 3307, Reservation: 600 * time.Millisecond, Logger: quietLogger()}
	node, err := cluster.Open(ctx, repo, nc)
	if err != nil {
		t.Fatal(err)
	}
	store, err := metadata.Bootstrap(ctx, repo, nil, nil, metadata.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = store.Run(runCtx) }()
	cfg := Config{Node: node, Store: store, Repo: repo, ModeType: "Cluster", Token: testToken, OpenReads: true, Logger: quietLogger()}
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
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
	return &testNode{node: node, srv: srv, http: hs}
}

type response struct {
	status int
	body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
}

// apiError decodes an error body and checks its shape.
func (r response) apiError(t *testing.T, status, code int, contains string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	var e struct {
		Error *string `json:"error"`
		Code  *int    `json:"code"`
	}
	r.json(t, &e)
	if e.Error == nil || e.Code == nil {
		t.Fatalf("error body %s lacks error or code", r.body)
	}
	if *e.Code != code || !strings.Contains(*e.Error, contains) {
		t.Fatalf("error = %q code %d, want code %d containing %q", *e.Error, *e.Code, code, contains)
	}
}

func do(t *testing.T, n *testNode, method, path, token, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, n.http.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, body: b}
}

func get(t *testing.T, n *testNode, path string) response { return do(t, n, "GET", path, "", "") }

func put(t *testing.T, n *testNode, path, body string) response {
	return do(t, n, "PUT", path, testToken, body)
}

func TestKeys(t *testing.T) {
	n := startNode(t, memory.New(), "keys-node", nil)
	r := get(t, n, "/api/v1/keys")
	if r.status != 200 {
		t.Fatalf("GET keys: %d %s", r.status, r.body)
	}
	var one Keys
	r.json(t, &one)
	if len(one.Keys) != 1 || one.WorkerID != n.node.WorkerID() {
		t.Fatalf("GET keys = %s (worker id %d)", r.body, n.node.WorkerID())
	}
	r = get(t, n, "/api/v1/keys?count=10000")
	var many Keys
	r.json(t, &many)
	if len(many.Keys) != 10000 {
		t.Fatalf("count=10000 gave %d keys", len(many.Keys))
	}
	prev := int64(-1)
	for _, s := range append(one.Keys, many.Keys...) {
		k, err := strconv.ParseInt(s, 10, 64)
		if err != nil || k <= prev {
			t.Fatalf("key %q not increasing after %d (%v)", s, prev, err)
		}
		prev = k
	}
	for _, q := range []string{"count=0", "count=10001", "count=abc", "count=-1", "count=1e3", "count="} {
		get(t, n, "/api/v1/keys?"+q).apiError(t, 400, 0, "count")
	}

	// Decode: the node's own key names it.
	r = get(t, n, "/api/v1/keys/"+one.Keys[0])
	var info KeyInfo
	r.json(t, &info)
	if info.Key != one.Keys[0] || info.WorkerID != int64(one.WorkerID) || info.InstanceID != "keys-node" ||
		time.Since(time.UnixMilli(info.UnixMillis)) > time.Minute || !strings.HasSuffix(info.Time, "Z") {
		t.Fatalf("decode = %s", r.body)
	}
	for _, bad := range []string{"abc", "-5", "99999999999999999999", "+1", "01"} {
		get(t, n, "/api/v1/keys/"+bad).apiError(t, 400, 0, "not a key")
	}
}

func TestAuth(t *testing.T) {
	repo := memory.New()
	noToken := startNode(t, repo, "no-token", func(c *Config) { c.Token = "" })
	r := put(t, noToken, "/api/v1/props/sql_show", `{"value":"true"}`)
	r.apiError(t, 401, 0, "--token-file")

	n := startNode(t, repo, "with-token", nil)
	do(t, n, "PUT", "/api/v1/props/sql_show", "", `{"value":"true"}`).apiError(t, 401, 0, "Bearer")
	do(t, n, "PUT", "/api/v1/props/sql_show", "wrong", `{"value":"true"}`).apiError(t, 401, 0, "invalid API token")
	if r := put(t, n, "/api/v1/props/sql_show", `{"value":"true"}`); r.status != 200 {
		t.Fatalf("with the token: %d %s", r.status, r.body)
	}

	closed := startNode(t, repo, "closed-reads", func(c *Config) { c.OpenReads = false })
	get(t, closed, "/api/v1/nodes").apiError(t, 403, 0, "reads are closed")
	do(t, closed, "GET", "/api/v1/nodes", "wrong", "").apiError(t, 401, 0, "invalid API token")
	if r := do(t, closed, "GET", "/api/v1/nodes", testToken, ""); r.status != 200 {
		t.Fatalf("closed reads with the token: %d %s", r.status, r.body)
	}
	for _, open := range []string{"/livez", "/readyz", "/", "/api/v1/openapi.yaml"} {
		if r := get(t, closed, open); r.status != 200 {
			t.Fatalf("%s with closed reads: %d %s", open, r.status, r.body)
		}
	}
}

func TestRoutes(t *testing.T) {
	n := startNode(t, memory.New(), "routes", nil)
	get(t, n, "/api/v1/nope").apiError(t, 404, 0, "no such route")
	get(t, n, "/nope").apiError(t, 404, 0, "no such route")
	do(t, n, "DELETE", "/api/v1/keys", testToken, "").apiError(t, 405, 0, "not allowed")
	get(t, n, "/api/v1/nodes/nobody").apiError(t, 404, 0, "not online")
	get(t, n, "/api/v1/databases/nodb").apiError(t, 404, 0, "Unknown database 'nodb'.")
	r := get(t, n, "/api/v1/openapi.yaml")
	if r.status != 200 || !strings.Contains(string(r.body), "openapi: 3") {
		t.Fatalf("openapi: %d", r.status)
	}
	r = get(t, n, "/")
	if r.status != 200 || !strings.Contains(string(r.body), "<title>shardkeeper</title>") {
		t.Fatalf("page: %d", r.status)
	}
	if r := get(t, n, "/livez"); r.status != 200 {
		t.Fatalf("livez %d", r.status)
	}
	if r := get(t, n, "/readyz"); r.status != 200 {
		t.Fatalf("readyz %d %s", r.status, r.body)
	}
}

func TestProps(t *testing.T) {
	n := startNode(t, memory.New(), "props", nil)
	var list struct {
		Props []variable `json:"props"`
	}
	get(t, n, "/api/v1/props").json(t, &list)
	if len(list.Props) != len(config.KnownProps)+1 {
		t.Fatalf("%d props", len(list.Props))
	}
	for i := 1; i < len(list.Props); i++ {
		if list.Props[i-1].Name >= list.Props[i].Name {
			t.Fatalf("not sorted at %s", list.Props[i].Name)
		}
	}
	var v variable
	get(t, n, "/api/v1/props/SQL_SHOW").json(t, &v)
	if v != (variable{"sql_show", "false"}) {
		t.Fatalf("sql_show = %+v", v)
	}
	get(t, n, "/api/v1/props/worker_id").apiError(t, 404, 12010, "Can not support variable 'WORKER_ID'.")
	put(t, n, "/api/v1/props/worker_id", `{"value":"1"}`).apiError(t, 404, 12010, "Can not support variable 'worker_id'.")
	put(t, n, "/api/v1/props/sql_show", `{"value":"maybe"}`).apiError(t, 400, 12011, "Invalid variable value 'maybe'.")
	put(t, n, "/api/v1/props/kernel_executor_size", `{"value":"x"}`).apiError(t, 400, 12011, "Invalid variable value 'x'.")
	put(t, n, "/api/v1/props/sql_show", `{"val":"true"}`).apiError(t, 400, 0, "missing field value")
	put(t, n, "/api/v1/props/sql_show", `not json`).apiError(t, 400, 0, "not")
	r := put(t, n, "/api/v1/props/sql_show", `{"value":"TRUE"}`)
	r.json(t, &v)
	if v != (variable{"sql_show", "true"}) {
		t.Fatalf("SET sql_show = %s", r.body)
	}
	get(t, n, "/api/v1/props/sql_show").json(t, &v)
	if v.Value != "true" {
		t.Fatalf("after SET: %+v", v)
	}
	put(t, n, "/api/v1/props/max_connections_size_per_query", `{"value":16}`).json(t, &v)
	if v != (variable{"max_connections_size_per_query", "16"}) {
		t.Fatalf("SET with a number: %+v", v)
	}
}

func TestNodesStateAndLock(t *testing.T) {
	repo := memory.New()
	a := startNode(t, repo, "node-a", nil)
	b := startNode(t, repo, "node-b", nil)
	var nodes struct {
		Nodes []computenode.Row `json:"nodes"`
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		get(t, a, "/api/v1/nodes").json(t, &nodes)
		if len(nodes.Nodes) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(nodes.Nodes) != 2 || nodes.Nodes[0].WorkerID == nodes.Nodes[1].WorkerID || nodes.Nodes[0].InstanceType != "PROXY" ||
		nodes.Nodes[0].Status != "OK" || nodes.Nodes[0].ModeType != "Cluster" || nodes.Nodes[0].Port != 3307 {
		t.Fatalf("nodes = %+v", nodes.Nodes)
	}
	var self computenode.Row
	get(t, b, "/api/v1/nodes/self").json(t, &self)
	if self.InstanceID != "node-b" || self.WorkerID != b.node.WorkerID() {
		t.Fatalf("self = %+v", self)
	}

	put(t, a, "/api/v1/nodes/node-a/state", `{"state":"DISABLE"}`).apiError(t, 400, 30001, "Unsupported SQL operation: `node-a` is the currently in use instance and cannot be disabled.")
	put(t, a, "/api/v1/nodes/ghost/state", `{"state":"DISABLE"}`).apiError(t, 404, 30001, "Unsupported SQL operation: `ghost` does not exist.")
	put(t, a, "/api/v1/nodes/node-b/state", `{"state":"OFF"}`).apiError(t, 400, 0, "ENABLE or DISABLE")
	var row computenode.Row
	r := put(t, a, "/api/v1/nodes/node-b/state", `{"state":"disable"}`)
	r.json(t, &row)
	if r.status != 200 || row.InstanceID != "node-b" || row.Status != "CIRCUIT_BREAK" {
		t.Fatalf("DISABLE node-b: %d %s", r.status, r.body)
	}
	put(t, a, "/api/v1/nodes/node-b/state", `{"state":"DISABLE"}`).apiError(t, 409, 30001, "`node-b` compute node has been disabled")
	testenv.Eventually(t, "node-b not ready", func() bool { return get(t, b, "/readyz").status == 503 })
	get(t, b, "/api/v1/keys").apiError(t, 503, 0, "CIRCUIT_BREAK")
	r = put(t, a, "/api/v1/nodes/node-b/state", `{"state":"ENABLE"}`)
	r.json(t, &row)
	if row.Status != "OK" {
		t.Fatalf("ENABLE: %s", r.body)
	}
	testenv.Eventually(t, "node-b ready", func() bool { return get(t, b, "/readyz").status == 200 })

	// LOCK / UNLOCK CLUSTER.
	var st struct {
		State string `json:"state"`
	}
	put(t, a, "/api/v1/cluster/unlock", "").apiError(t, 409, 15031, "Cluster is not locked.")
	put(t, a, "/api/v1/cluster/lock", `{"strategy":"READ"}`).apiError(t, 400, 0, "WRITE or READ_WRITE")
	put(t, a, "/api/v1/cluster/lock", `{"strategy":"WRITE"}`).json(t, &st)
	if st.State != "READ_ONLY" {
		t.Fatalf("lock WRITE: %+v", st)
	}
	put(t, b, "/api/v1/cluster/lock", `{"strategy":"READ_WRITE"}`).apiError(t, 409, 15030, "Cluster is already locked.")
	testenv.Eventually(t, "b sees READ_ONLY", func() bool {
		get(t, b, "/api/v1/cluster/state").json(t, &st)
		return st.State == "READ_ONLY"
	})
	put(t, b, "/api/v1/cluster/unlock", `{}`).json(t, &st)
	if st.State != "OK" {
		t.Fatalf("unlock: %+v", st)
	}
	put(t, a, "/api/v1/cluster/lock", `{"strategy":"READ_WRITE","timeoutMillis":1000}`).json(t, &st)
	if st.State != "UNAVAILABLE" {
		t.Fatalf("lock READ_WRITE: %+v", st)
	}
	testenv.Eventually(t, "b refuses keys while UNAVAILABLE", func() bool { return get(t, b, "/api/v1/keys").status == 503 })
	put(t, a, "/api/v1/cluster/unlock", "").json(t, &st)
	testenv.Eventually(t, "b issues again", func() bool { return get(t, b, "/api/v1/keys").status == 200 })
}

func TestDatabases(t *testing.T) {
	repo := memory.New()
	n := startNode(t, repo, "dbs", nil)
	ctx := context.Background()
	ds := config.NewDataSource("jdbc:postgresql://127.0.0.1:5432/demo_ds_0?password=hidden", "root", "secret")
	err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "sharding_db", DataSources: map[string]config.DataSource{"ds_0": ds},
		Rules: []config.Rule{{Type: "broadcast", Content: map[string]any{"tables": []any{"t_address"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	// CreateDatabase writes units and rules as separate keys: wait until
	// the node has seen both.
	testenv.Eventually(t, "database and its rule seen", func() bool {
		body := string(get(t, n, "/api/v1/databases/sharding_db").body)
		return strings.Contains(body, "broadcast") && strings.Contains(body, `"ds_0"`)
	})
	var list struct {
		Databases []dbSummary `json:"databases"`
	}
	get(t, n, "/api/v1/databases").json(t, &list)
	if len(list.Databases) != 1 || list.Databases[0].Units != 1 || list.Databases[0].Version == 0 {
		t.Fatalf("databases = %+v", list.Databases)
	}
	r := get(t, n, "/api/v1/databases/sharding_db")
	if strings.Contains(string(r.body), "secret") || strings.Contains(string(r.body), "hidden") {
		t.Fatalf("password leaked: %s", r.body)
	}
	var db struct {
		Units map[string]map[string]any `json:"units"`
		Rules []ruleJSON                `json:"rules"`
	}
	r.json(t, &db)
	if db.Units["ds_0"]["password"] != redact.Mask || db.Units["ds_0"]["username"] != "root" || len(db.Rules) != 1 || db.Rules[0].Type != "broadcast" {
		t.Fatalf("database = %s", r.body)
	}
}

func TestMetricsAndStatus(t *testing.T) {
	m := metered.New()
	repo := m.Instrument(memory.New())
	n := startNode(t, repo, "metrics", func(c *Config) { c.RegistryMetrics = m })
	get(t, n, "/api/v1/keys?count=7")
	r := get(t, n, "/metrics")
	body := string(r.body)
	for _, want := range []string{
		"shardkeeper_keys_issued_total 7", "shardkeeper_worker_id " + strconv.Itoa(n.node.WorkerID()),
		"shardkeeper_fence_renewals_total", "shardkeeper_fence_stalls_total", `shardkeeper_session_state{state="holding"} 1`,
		`shardkeeper_registry_request_duration_seconds_bucket{op="commit",le="+Inf"}`, `shardkeeper_registry_watch_events_total{prefix="/nodes/compute_nodes"}`,
		`shardkeeper_http_requests_total{route="GET /api/v1/keys"} 1`, "shardkeeper_ready 1",
		"shardkeeper_worker_ids_in_use 1", "shardkeeper_compute_nodes 1", "shardkeeper_clock_steps_back_total 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}

	var st status
	get(t, n, "/api/v1/status").json(t, &st)
	held := false
	for _, c := range st.Workers {
		held = held || (c.WorkerID == n.node.WorkerID() && c.State == CellHeld && c.Holder == "metrics" && c.ReservedUntil > 0)
	}
	if !held || st.WorkerIDs != 1024 || !st.Ready || len(st.Nodes) != 1 {
		t.Fatalf("status = %+v", st)
	}

	// The event stream sends the status at once.
	resp, err := http.Get(n.http.URL + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev status
			if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.InstanceID != "metrics" {
				t.Fatalf("event %q: %v", data, err)
			}
			break
		}
	}
}

func TestHolderHistory(t *testing.T) {
	h := newHolders()
	h.observe([]cluster.Instance{{ID: "a", WorkerID: 1}}, 1000)
	h.observe([]cluster.Instance{}, 50_000)
	h.observe([]cluster.Instance{{ID: "b", WorkerID: 1}}, 60_000)
	for _, c := range []struct {
		t    int64
		want string
	}{{10, "a"}, {40_000, "a"}, {51_000, "a"}, {55_000, ""}, {59_000, "b"}, {90_000, "b"}} {
		if got := h.holderAt(1, c.t); got != c.want {
			t.Errorf("holderAt(1, %d) = %q, want %q", c.t, got, c.want)
		}
	}
	if got := h.holderAt(2, 10); got != "" {
		t.Errorf("unknown worker id gave %q", got)
	}
}

func TestWorkerMap(t *testing.T) {
	kvs := []registry.KV{
		{Key: "/reservation/worker_id/3", Value: []byte("n1")},
		{Key: "/reservation/worker_id_fence/3", Value: []byte(`{"epoch":2,"holder":"n1","reservedUntil":5000}`)},
		{Key: "/reservation/worker_id_fence/4", Value: []byte(`{"epoch":1,"holder":"n0","reservedUntil":9000}`)},
		{Key: "/reservation/worker_id_fence/5", Value: []byte(`{"epoch":1,"holder":"n0","reservedUntil":100}`)},
		{Key: "/reservation/worker_id_fence/6", Value: []byte(`garbage`)},
		{Key: "/reservation/worker_id/x", Value: []byte(`n9`)},
	}
	cells := buildWorkerMap(kvs, 1000)
	want := map[int]string{3: CellHeld, 4: CellQuarantined, 5: CellFree, 6: CellCorrupt}
	if len(cells) != len(want) {
		t.Fatalf("cells = %+v", cells)
	}
	for _, c := range cells {
		if want[c.WorkerID] != c.State {
			t.Errorf("worker id %d: %s, want %s", c.WorkerID, c.State, want[c.WorkerID])
		}
	}
}

// BenchmarkKeysHandler measures GET /api/v1/keys?count=N through the
// handler alone (no network): the allocations are the recorder's and the
// request context's, not per key.
func BenchmarkKeysHandler(b *testing.B) {
	for _, count := range []int{1, 100} {
		b.Run("count="+strconv.Itoa(count), func(b *testing.B) {
			repo := memory.New()
			ctx := context.Background()
			node, err := cluster.Open(ctx, repo, cluster.Config{InstanceID: "bench", Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer node.Close(ctx)
			store, err := metadata.Bootstrap(ctx, repo, nil, nil, metadata.Options{Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			srv, err := New(Config{Node: node, Store: store, Repo: repo, OpenReads: true, Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			h := srv.Handler()
			req := httptest.NewRequest("GET", "/api/v1/keys?count="+strconv.Itoa(count), nil)
			req.Host = "127.0.0.1"
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				w.status = 0
				h.ServeHTTP(w, req)
				if w.status != 0 && w.status != 200 {
					b.Fatalf("status %d", w.status)
				}
			}
		})
	}
}

type discardWriter struct {
	h      http.Header
	status int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(s int)           { d.status = s }

// TestClusterLockFollowsLayout holds the cluster lock where a
// ShardingSphere node of each target release takes it (5.5.2: the global
// lock /lock/global/locks/cluster_lock; 5.5.3: the exclusive operation
// /exclusive_operation/lock_cluster) and checks that LOCK CLUSTER waits for
// that holder only.
func TestClusterLockFollowsLayout(t *testing.T) {
	for _, c := range []struct {
		layout      paths.Layout
		held, other string
	}{
		{paths.Layout552, "/lock/global/locks/cluster_lock", "/exclusive_operation/lock_cluster"},
		{paths.Layout553, "/exclusive_operation/lock_cluster", "/lock/global/locks/cluster_lock"},
	} {
		t.Run(c.layout.String(), func(t *testing.T) {
			ctx := testenv.Context(t)
			repo := memory.New()
			n := startNode(t, repo, "node-a", func(cfg *Config) { cfg.Layout = c.layout })
			upstream, err := repo.NewSession(ctx, registry.SessionOptions{TTL: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer upstream.Close(ctx)
			// The other release's lock does not stop LOCK CLUSTER.
			other, err := upstream.Lock(ctx, c.other)
			if err != nil {
				t.Fatal(err)
			}
			var st struct {
				State string `json:"state"`
			}
			put(t, n, "/api/v1/cluster/lock", `{"strategy":"WRITE","timeoutMillis":200}`).json(t, &st)
			if st.State != "READ_ONLY" {
				t.Fatalf("lock with %s held: %+v", c.other, st)
			}
			_ = other.Unlock(ctx)
			// Its own release's lock does.
			held, err := upstream.Lock(ctx, c.held)
			if err != nil {
				t.Fatal(err)
			}
			put(t, n, "/api/v1/cluster/unlock", `{"timeoutMillis":200}`).apiError(t, 409, 0, c.held)
			if err := held.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			put(t, n, "/api/v1/cluster/unlock", `{"timeoutMillis":1000}`).json(t, &st)
			if st.State != "OK" {
				t.Fatalf("unlock: %+v", st)
			}
		})
	}
}
