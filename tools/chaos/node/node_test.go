package node

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/snowflake"
	"github.com/shardkeeper/shardkeeper/tools/chaos/checker"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
)

func TestNodeEtcd(t *testing.T) { testNode(t, "etcd", testenv.EtcdEndpoints(t)) }
func TestNodeZooKeeper(t *testing.T) {
	testNode(t, "zookeeper", testenv.ZooKeeperServers(t))
}

// testNode runs the node program on a real registry with its clock started
// ten seconds behind: it waits for keys (stamped on that clock), steps the
// clock back a second (the node must stall, not issue), stops it and checks
// the records with the checker.
func testNode(t *testing.T, registryKind string, endpoints []string) {
	dir := t.TempDir()
	info := record.RunInfo{Registry: registryKind, Nodes: 1, Pool: 1024, Variant: record.VariantFenced, EpochMillis: snowflake.DefaultEpochMillis,
		Start: time.Now().UnixNano()}
	if err := record.WriteRunInfo(dir, info); err != nil {
		t.Fatal(err)
	}
	control, commands := io.Pipe()
	cfg := Config{Dir: dir, Node: "g1", Incarnation: "g1.1", Registry: registryKind, Endpoints: endpoints,
		Namespace: testenv.Namespace("chaos_test_"), SessionTTL: 2 * time.Second, Reservation: 600 * time.Millisecond,
		Rate: 5000, ClockOffset: -10 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, control) }()

	keysFile := filepath.Join(dir, "nodes", "g1", record.KeyFileName("g1.1"))
	waitKeys := func(n int64) {
		t.Helper()
		for ctx.Err() == nil {
			if fi, err := os.Stat(keysFile); err == nil && fi.Size()/8 >= n {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("fewer than %d keys recorded", n)
	}
	waitKeys(2000)
	if _, err := io.WriteString(commands, "step -1s\n"); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(keysFile)
	waitKeys(before.Size()/8 + 2000)
	if _, err := io.WriteString(commands, "stop\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	info.End = time.Now().UnixNano()
	if err := record.WriteRunInfo(dir, info); err != nil {
		t.Fatal(err)
	}

	events, err := record.ReadJSONLines[record.Event](filepath.Join(dir, "nodes", "g1", record.EventFileName("g1.1")))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var stalls []string
	for _, e := range events {
		if e.Kind != record.EventProgress && e.Kind != record.EventReserved {
			kinds = append(kinds, e.Kind)
		}
		if e.Kind == record.EventStall {
			stalls = append(stalls, e.Reason)
		}
	}
	want := []string{record.EventStart, record.EventStall, record.EventAcquired, record.EventResume, record.EventClock, record.EventStall, record.EventResume, record.EventReleased, record.EventExit}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events = %v, want %v", kinds, want)
	}
	if !slices.Equal(stalls, []string{"no worker id", "clock backwards"}) {
		t.Fatalf("stall reasons = %v", stalls)
	}
	r, err := checker.Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if f := r.Failures(); len(f) > 0 || r.Keys.Attempted < 4000 {
		t.Fatalf("check: %v (%d keys)", f, r.Keys.Attempted)
	}
	// One acquisition, before the first key: every key is marked with its epoch.
	if r.KeysOfUnknownEpoch != 0 || r.FenceWindows != 1 {
		t.Fatalf("%d keys of an unknown epoch, %d fence windows; want 0 and 1", r.KeysOfUnknownEpoch, r.FenceWindows)
	}
	// The first key is stamped on the clock ten seconds behind.
	first := snowflake.Decompose(r.Keys.Min).Millis + snowflake.DefaultEpochMillis
	if lag := time.Duration(info.Start/1e6-first) * time.Millisecond; lag < 5*time.Second || lag > 10*time.Second {
		t.Fatalf("first key stamped %v before the start, want about 10s (the clock offset)", lag)
	}
	if events[0].Offset != int64(-10*time.Second) {
		t.Fatalf("start event offset %v, want -10s", time.Duration(events[0].Offset))
	}
	t.Logf("%s: %d keys checked", registryKind, r.Keys.Attempted)
}
