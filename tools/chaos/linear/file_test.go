package linear

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestRecorderRoundTrip: completed operations are read back as completed,
// an invocation without completion (a client killed mid-request) as
// Unknown, and CheckRun finds the violation and writes the visualisation.
func TestRecorderRoundTrip(t *testing.T) {
	run := t.TempDir()
	hist := filepath.Join(run, HistoryDir)
	if err := os.Mkdir(hist, 0o755); err != nil {
		t.Fatal(err)
	}
	const k = "broadcast/t_dict"
	a := NewRecorder(filepath.Join(hist, "g1.1.jsonl"))
	b := NewRecorder(filepath.Join(hist, "g2.1.jsonl"))
	created := op(k, 0, Create, "v", OK, 10, 20)
	id, err := a.Invoke(created)
	if err != nil {
		t.Fatal(err)
	}
	pending := op(k, 0, Drop, "", OK, 30, 0)
	pid, err := a.Invoke(pending)
	if err != nil || pid == id {
		t.Fatalf("second Invoke = %d, %v", pid, err)
	}
	if err := a.Complete(id, created); err != nil {
		t.Fatal(err)
	}
	lost := readAbsent(k, 1, 25, 28) // sees nothing after the acknowledged CREATE
	lid, _ := b.Invoke(lost)
	if err := b.Complete(lid, lost); err != nil {
		t.Fatal(err)
	}

	ops, err := Load(hist)
	if err != nil {
		t.Fatal(err)
	}
	pending.Outcome, pending.Return = Unknown, 0
	if want := []Op{created, pending, lost}; !reflect.DeepEqual(ops, want) {
		t.Fatalf("Load = %v, want %v", ops, want)
	}
	res, found, err := CheckRun(run, 0)
	if err != nil || !found {
		t.Fatalf("CheckRun: found %v, %v", found, err)
	}
	if res.Linearizable || res.Key != k || res.Ops != 3 || res.Unknown != 1 {
		t.Fatalf("CheckRun = %s on %q, want 3 operations (1 unknown), NOT linearizable on %s", res, res.Key, k)
	}
	if _, err := os.Stat(filepath.Join(run, HTMLName)); err != nil {
		t.Fatalf("visualisation: %v", err)
	}
}

func TestCheckRunWithoutHistory(t *testing.T) {
	if _, found, err := CheckRun(t.TempDir(), 0); found || err != nil {
		t.Fatalf("CheckRun of a key run = found %v, %v; want not found", found, err)
	}
}

func TestLoadReportsCorruptLines(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "c.jsonl"), []byte(`{"id":0,"key":"k","kind":"set","value":"1","outcome":"ok","call":1,"return":2}
{"id":1,"key":"k","kind":"upsert","outcome":"ok","call":3,"return":4}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	ops, err := Load(dir)
	if err == nil || len(ops) != 1 || ops[0].Kind != Set {
		t.Fatalf("Load = %v, %v; want the first operation and an error naming the second line", ops, err)
	}
	if !strings.Contains(err.Error(), "c.jsonl:2") {
		t.Fatalf("Load error %q does not name c.jsonl:2", err)
	}
}
