package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/tools/chaos/harness"
	"github.com/shardkeeper/shardkeeper/tools/chaos/linear"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
)

// TestCheckHistoryReportLine: the report line scripts read, for a run with
// a linearizable DistSQL history, one without, and one with none.
func TestCheckHistoryReportLine(t *testing.T) {
	const k = "sharding/tables/t_order"
	create := linear.Op{Key: k, Kind: linear.Create, Value: "v", Outcome: linear.OK, Call: 10, Return: 20}
	cases := []struct {
		name string
		read linear.Op
		ok   bool
		want string
	}{
		{"linearizable", linear.Op{Key: k, Client: 1, Kind: linear.Read, Present: true, Value: "v", Outcome: linear.OK, Call: 30, Return: 40},
			true, "DistSQL history: 2 operations (0 unknown), linearizable\n"},
		{"lost create", linear.Op{Key: k, Client: 1, Kind: linear.Read, Outcome: linear.OK, Call: 30, Return: 40},
			false, "DistSQL history: 2 operations (0 unknown), NOT linearizable: key " + k + "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, linear.HistoryDir), 0o755); err != nil {
				t.Fatal(err)
			}
			rec := linear.NewRecorder(filepath.Join(dir, linear.HistoryDir, "c.jsonl"))
			for _, o := range []linear.Op{create, tc.read} {
				id, err := rec.Invoke(o)
				if err == nil {
					err = rec.Complete(id, o)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			var out strings.Builder
			ok, err := checkHistory(dir, &out)
			if err != nil || ok != tc.ok || !strings.HasPrefix(out.String(), tc.want) {
				t.Fatalf("checkHistory = %v, %v, report:\n%s\nwant %v and a report starting %q", ok, err, out.String(), tc.ok, tc.want)
			}
		})
	}
	var out strings.Builder
	if ok, err := checkHistory(t.TempDir(), &out); !ok || err != nil || out.Len() != 0 {
		t.Fatalf("checkHistory of a key run = %v, %v, %q; want true and no line", ok, err, out.String())
	}
}

// TestCheckDistSQLRunVerdicts checks the verdicts of a DistSQL run: a
// fenced run passes only with a linearizable history and converged views,
// a negative control only when its history is NOT linearizable, and its
// report names the violation found.
func TestCheckDistSQLRunVerdicts(t *testing.T) {
	const k = "broadcast/t_b0"
	create := linear.Op{Key: k, Kind: linear.Create, Value: "1", Outcome: linear.OK, Call: 10, Return: 20}
	seen := linear.Op{Key: k, Client: 1, Node: "n2", Kind: linear.Read, Present: true, Value: "1", Outcome: linear.OK, Call: 30, Return: 40}
	lost := linear.Op{Key: k, Client: 1, Node: "n2", Kind: linear.Read, Outcome: linear.OK, Call: 30, Return: 40}
	cases := []struct {
		name    string
		variant record.Variant
		read    linear.Op
		stats   harness.DistSQLStats
		ok      bool
		want    string
	}{
		{"fenced, linearizable", record.VariantFenced, seen, harness.DistSQLStats{Ops: 2}, true, "Chaos run (DistSQL): PASS"},
		{"fenced, lost change", record.VariantFenced, lost, harness.DistSQLStats{Ops: 2}, false, "the history is NOT linearizable"},
		{"fenced, views apart", record.VariantFenced, seen, harness.DistSQLStats{Ops: 2, Error: "views did not agree"}, false, "views did not agree"},
		{"control finds it", record.VariantAckBeforeCommit, lost, harness.DistSQLStats{Ops: 2}, true,
			"violation found: 2 operations (0 unknown), NOT linearizable: key broadcast/t_b0 as node n2 sees it"},
		{"control finds nothing", record.VariantUnconditional, seen, harness.DistSQLStats{Ops: 2}, false, "the control found no violation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "nodes"), 0o755); err != nil {
				t.Fatal(err)
			}
			info := record.RunInfo{Seed: 1, Registry: "etcd", Nodes: 3, Variant: tc.variant, Workload: record.WorkloadDistSQL, Start: 1, End: 2}
			if err := record.WriteRunInfo(dir, info); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(tc.stats)
			if err := os.WriteFile(filepath.Join(dir, harness.DistSQLStatsName), b, 0o644); err != nil {
				t.Fatal(err)
			}
			rec := linear.NewRecorder(filepath.Join(dir, linear.HistoryDir, "c.jsonl"))
			if err := os.Mkdir(filepath.Join(dir, linear.HistoryDir), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, o := range []linear.Op{create, tc.read} {
				id, err := rec.Invoke(o)
				if err == nil {
					err = rec.Complete(id, o)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			var out strings.Builder
			ok, err := checkRun(dir, &out)
			if err != nil || ok != tc.ok || !strings.Contains(out.String(), tc.want) {
				t.Fatalf("checkRun = %v, %v, report:\n%s\nwant %v and a report with %q", ok, err, out.String(), tc.ok, tc.want)
			}
		})
	}
}
