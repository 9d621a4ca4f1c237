package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/tools/chaos/linear"
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
