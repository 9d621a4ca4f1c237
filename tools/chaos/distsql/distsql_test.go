package distsql

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/rules"
	"github.com/shardkeeper/shardkeeper/tools/chaos/linear"
)

// TestPendingNamesEveryNodeNotWaitedFor: the nodes a change's warnings name
// as not confirming it in time and those named as publishing no
// acknowledgement (a node still starting, which the change did not wait
// for) are both pending in the history, read from the warnings the rule
// statements and SET DIST VARIABLE really write.
func TestPendingNamesEveryNodeNotWaitedFor(t *testing.T) {
	c := &client{views: map[string]string{"node-a": "n1", "node-b": "n2", "node-c": "n3"}}
	ruleWarnings := rules.Outcome{RuleType: "broadcast", Pending: []string{"node-a"}, Unacknowledging: []string{"node-c"}}.Warnings("chaos_db")
	if got := c.pendingIn(ruleWarnings); !slices.Equal(got, []string{"n1", "n3"}) {
		t.Errorf("rule warnings %q: pending %v, want [n1 n3]", ruleWarnings, got)
	}
	setWarnings := distvar.Outcome{Key: Variable, Value: "true", Unacknowledging: []string{"node-b"}}.Warnings()
	if got := c.pendingIn(setWarnings); !slices.Equal(got, []string{"n2"}) {
		t.Errorf("SET warnings %q: pending %v, want [n2]", setWarnings, got)
	}
	if got := c.pendingIn([]string{"something else: node-a"}); len(got) != 0 {
		t.Errorf("an unrelated warning: pending %v, want none", got)
	}
}

// TestReadTablesHTTP: a read through the HTTP API records one read of
// every rule item's register (broadcast and sharding tables, the
// readwrite-splitting group), present with the value the node's answer
// holds, with the request's bounds; a failed request records reads of
// unknown outcome.
func TestReadTablesHTTP(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/databases/chaos_db" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "wrong request", http.StatusBadRequest)
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"name":"chaos_db","rules":[{"type":"single","content":{"tables":["t_b0"]}},` +
			`{"type":"broadcast","content":{"tables":["t_b2","t_b0"]}},` +
			`{"type":"sharding","content":{"tables":{"t_s1":{"actualDataNodes":"ds_0.t_s1_${0..2}"}}}},` +
			`{"type":"readwrite_splitting","content":{"dataSourceGroups":{"rw0":{"writeDataSourceName":"ds_0","readDataSourceNames":["ds_0","ds_1"]}}}}]}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	c := &client{id: 7, node: "n2", rec: linear.NewRecorder(filepath.Join(dir, "c7.jsonl")), http: srv.URL, token: "tok",
		database: "chaos_db", hc: srv.Client(), timeout: 5e9}
	ops := c.readTablesHTTP(context.Background())
	want := map[string]string{BroadcastKey("t_b0"): "1", BroadcastKey("t_b2"): "1", ShardingKey("t_s1"): ShardingNodes("t_s1", 2), ReadwriteKey("rw0"): "ds_0,ds_1"}
	items := len(Tables) + len(ShardingTables) + len(Groups)
	if len(ops) != items {
		t.Fatalf("%d reads, want %d", len(ops), items)
	}
	for _, o := range ops {
		w, present := want[o.Key]
		if o.Kind != linear.Read || o.Outcome != linear.OK || o.Node != "n2" || o.Present != present || o.Value != w || o.Return < o.Call {
			t.Errorf("read %+v, want present %v (%q) on n2", o, present, w)
		}
	}
	status = http.StatusServiceUnavailable
	if ops := c.readTablesHTTP(context.Background()); ops != nil {
		t.Errorf("a failed request returned reads %+v", ops)
	}
	recorded, err := linear.Load(dir)
	if err != nil || len(recorded) != 2*items {
		t.Fatalf("recorded %d operations (%v), want %d", len(recorded), err, 2*items)
	}
	for _, o := range recorded[items:] {
		if o.Outcome != linear.Unknown {
			t.Errorf("read of a failed request recorded as %+v, want unknown", o)
		}
	}
}

// TestRaceStartsWithoutABusyRacer: the racers that are there start the
// same round together, and a racer still busy (its node cut off) does not
// hold them back longer than RaceWait; when all are there the round starts
// at once, and every round creates a table of its own.
func TestRaceStartsWithoutABusyRacer(t *testing.T) {
	r := &race{n: 3}
	ctx := context.Background()
	type met struct {
		rd round
		at time.Time
	}
	meetAll := func(n int) []met {
		out := make(chan met, n)
		for range n {
			go func() {
				rd, ok := r.meet(ctx)
				if !ok {
					t.Error("meet ended")
				}
				out <- met{rd, time.Now()}
			}()
		}
		var got []met
		for range n {
			got = append(got, <-out)
		}
		return got
	}
	start := time.Now()
	two := meetAll(2)
	if two[0].rd != two[1].rd || two[0].rd != (round{table: RaceTable(0)}) {
		t.Errorf("two racers ran %+v and %+v, want the same CREATE of %s", two[0].rd, two[1].rd, RaceTable(0))
	}
	if d := time.Since(start); d < RaceWait || d > RaceWait+2*time.Second {
		t.Errorf("two racers of three started after %v, want about %v", d, RaceWait)
	}
	start = time.Now()
	three := meetAll(3)
	for _, m := range three {
		if m.rd != (round{table: RaceTable(1)}) {
			t.Errorf("round 2 ran %+v, want the CREATE of %s", m.rd, RaceTable(1))
		}
	}
	if d := time.Since(start); d >= RaceWait {
		t.Errorf("three racers of three started after %v, want at once", d)
	}
	if rd := meetAll(2); rd[0].rd != (round{table: RaceTable(2)}) || RaceTable(2) == RaceTable(1) || slices.Contains(Tables, RaceTable(2)) {
		t.Errorf("round 3 ran %+v, want the CREATE of a table of its own", rd[0].rd)
	}
}
