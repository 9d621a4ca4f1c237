package process_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// snakeYAML compiles testdata/snakeyaml/ProcessListLoad.java and returns a
// function running it with args (see testenv.SnakeYAML).
func snakeYAML(t *testing.T) func(args ...string) string {
	t.Helper()
	load := testenv.SnakeYAML(t, "testdata/snakeyaml/ProcessListLoad.java", "ProcessListLoad")
	return func(args ...string) string {
		t.Helper()
		out, err := load(args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ProcessListLoad %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
}

// TestProcessListWithSnakeYAML checks the execution node's format against
// SnakeYAML with mirrors of ShardingSphere's YamlProcessList and
// YamlProcess: what a node writes loads there property for property, and
// a list SnakeYAML writes is byte for byte what the node writes and
// parses back.
func TestProcessListWithSnakeYAML(t *testing.T) {
	run := snakeYAML(t)
	l := process.List{Processes: []process.Process{
		{ID: "p1", StartMillis: 1700000000000, SQL: `SELECT 'a: b', "c" FROM t # x`, DatabaseName: "sharding_db",
			Username: "root", Hostname: "127.0.0.1", TotalUnitCount: 2, CompletedUnitCount: 1, Idle: true},
		{ID: "p2", SQL: "SELECT 1\nFROM t", Interrupted: true},
	}}
	file := filepath.Join(t.TempDir(), "list.yaml")
	if err := os.WriteFile(file, l.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(run("load", file)), "\n")
	want := []string{
		`p1|1700000000000|SELECT 'a: b', "c" FROM t # x|sharding_db|root|127.0.0.1|2|1|true|false`,
		"p2|null|SELECT 1\nFROM t|null|null|null|0|0|false|true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("SnakeYAML loaded\n%s\nwant\n%s\nfrom\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), l.Marshal())
	}

	dumped := run("dump")
	p := process.Process{ID: "p1", StartMillis: 1700000000000, SQL: "SELECT 1", DatabaseName: "sharding_db",
		Username: "root", Hostname: "127.0.0.1", TotalUnitCount: 2, CompletedUnitCount: 1, Idle: true}
	if mine := string(process.List{Processes: []process.Process{p}}.Marshal()); mine != dumped {
		t.Errorf("the node writes\n%s\nSnakeYAML writes\n%s", mine, dumped)
	}
	parsed, err := process.ParseList([]byte(dumped))
	if err != nil || len(parsed.Processes) != 1 || parsed.Processes[0] != p {
		t.Errorf("ParseList(SnakeYAML's list) = %+v, %v; want %+v", parsed, err, p)
	}
}
