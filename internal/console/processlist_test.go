package console

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

func TestProcesslistAndKillAcrossNodes(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		repo := open(t)
		a := startNode(t, repo, "node-a", nil)
		b := startNode(t, repo, "node-b", nil)
		long := "SHOW COMPUTE NODES /* " + strings.Repeat("x", 200) + " */"
		killed := make(chan struct{})
		b.procs.Add(process.Process{ID: "b0000000000000000000000000000001", Username: "root", Hostname: "10.0.0.9",
			DatabaseName: "sharding_db", SQL: long, StartMillis: time.Now().Add(-3 * time.Second).UnixMilli(), TotalUnitCount: 1}, func() { close(killed) }, nil)
		a.procs.Add(process.Process{ID: "a0000000000000000000000000000001", Username: "admin", Hostname: "127.0.0.1", Idle: true,
			StartMillis: time.Now().UnixMilli()}, nil, nil)
		testenv.Eventually(t, "node-a to see node-b", func() bool { return len(a.node.Instances()) == 2 })
		s := newSession()

		res := exec(t, a, s, "SHOW PROCESSLIST")
		if got := columnNames(res); strings.Join(got, ",") != "Id,User,Host,db,Command,Time,State,Info" {
			t.Fatalf("columns %v", got)
		}
		rows := rowStrings(res)
		if len(rows) != 2 || len(res.Warnings) != 0 {
			t.Fatalf("rows %v warnings %v", rows, res.Warnings)
		}
		byID := map[string][]string{}
		for _, r := range rows {
			byID[r[0]] = r
		}
		rb := byID["b0000000000000000000000000000001"]
		if rb == nil || rb[1] != "root" || rb[2] != "10.0.0.9" || rb[3] != "sharding_db" || rb[4] != "Execute" || rb[6] != "Executing 0/1" || rb[7] != long[:100] {
			t.Errorf("node-b's session: %v", rb)
		}
		if rb != nil && rb[5] < "3" {
			t.Errorf("Time %s, want at least 3 s", rb[5])
		}
		ra := byID["a0000000000000000000000000000001"]
		if ra == nil || ra[4] != "Sleep" || ra[6] != "" || ra[7] != "" {
			t.Errorf("node-a's session: %v", ra)
		}
		full := rowStrings(exec(t, a, s, "SHOW FULL PROCESSLIST"))
		for _, r := range full {
			if r[0] == "b0000000000000000000000000000001" && r[7] != long {
				t.Errorf("FULL Info %q", r[7])
			}
		}

		exec(t, a, s, "KILL 'b0000000000000000000000000000001'")
		select {
		case <-killed:
		case <-time.After(5 * time.Second):
			t.Fatal("KILL from node-a did not end node-b's session")
		}

		// A node that never answers is named, not silently missing.
		mute, err := cluster.Open(testenv.Context(t), repo, cluster.Config{InstanceID: "node-mute", Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mute.Close(context.Background()) })
		a.engine.d.ProcessTimeout = 3 * time.Second // as long as the answering nodes may need on a loaded machine
		res = exec(t, a, s, "SHOW PROCESSLIST")
		if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "node-mute") {
			t.Errorf("warnings %v, want node-mute named", res.Warnings)
		}
		if len(res.Rows) != 2 {
			t.Errorf("rows %v, want the answering nodes' sessions still listed", rowStrings(res))
		}
		res = exec(t, a, s, "KILL nothing")
		if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "node-mute") {
			t.Errorf("KILL warnings %v", res.Warnings)
		}
		if e := execError(t, a, s, "KILL 'a:b'"); e.Code != 1094 {
			t.Errorf("KILL 'a:b': %+v", e)
		}
	})
}
