package main

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/snowflake"
)

// TestAdminAgainstServe drives the admin verbs through --server against a
// real `shardkeeper serve` (embedded registry, HTTP API on a free port).
func TestAdminAgainstServe(t *testing.T) {
	dir := embeddedConfDir(t)
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("e2e-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envServer, "")
	t.Setenv(envToken, "")
	output, stop := startServe(t, "--conf", dir, "--instance-id", "cli-e2e", "--http", "127.0.0.1:0", "--token-file", tokenFile, "--resp", "127.0.0.1:0", "--port", "3307")
	defer stop()
	m := regexp.MustCompile(`HTTP API and status page on (http://127\.0\.0\.1:\d+)/`).FindStringSubmatch(output())
	if m == nil {
		t.Fatalf("no HTTP address in the serve output:\n%s", output())
	}
	url := m[1]
	cli := cliExpect(t, "--server", url)
	cli(0, "/readyz: ok", "health")
	cli(0, "/livez: ok", "health", "--live")
	cli(0, "cli-e2e PROXY 127.0.0.1 3307 OK Standalone", "nodes", "list")
	cli(0, `"instance_id": "cli-e2e"`, "nodes", "show", "-o", "json")
	cli(0, "instance_id: cli-e2e", "nodes", "show", "cli-e2e", "-o", "yaml")
	cli(1, `compute node "nobody" is not online`, "nodes", "show", "nobody")
	cli(1, "pass --token-file or set SHARDKEEPER_TOKEN", "nodes", "disable", "cli-e2e")
	cli(1, "`cli-e2e` is the currently in use instance and cannot be disabled", "nodes", "disable", "cli-e2e", "--token", "e2e-token")

	out := cli(0, "key", "keys", "next", "-n", "5")
	keys := strings.Fields(out)[1:]
	if len(keys) != 5 {
		t.Fatalf("keys next -n 5:\n%s", out)
	}
	cli(0, "instance_id", "keys", "decode", keys[0])
	cli(0, "cli-e2e", "keys", "decode", keys[0])
	offline, _, _ := runCLI(t, "keys", "decode", keys[0])
	online, _, _ := runCLI(t, "keys", "decode", keys[0], "--server", url)
	// Rows: key time unix_millis worker_id sequence [instance_id].
	off, on := strings.Fields(offline)[5:], strings.Fields(online)[6:]
	if off[0] != on[0] || off[2] != on[2] || off[3] != on[3] || off[4] != on[4] {
		t.Fatalf("offline and online decode differ:\n%s\n%s", offline, online)
	}

	cli(0, "sql_show false", "props", "get", "sql_show")
	cli(0, "sql_show = true", "props", "set", "sql_show", "true", "--token", "e2e-token")
	deadline := time.Now().Add(10 * time.Second)
	for {
		stdout, _, _ := runCLI(t, "props", "get", "sql_show", "-o", "json", "--server", url)
		if strings.Contains(stdout, `"variable_value": "true"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("props get after set: %s", stdout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cli(1, "Can not support variable 'WORKER_ID'.", "props", "get", "worker_id")

	// serve --resp: INCR over the Redis protocol gives keys of the same worker.
	rm := regexp.MustCompile(`Redis-protocol key service on (127\.0\.0\.1:\d+)`).FindStringSubmatch(output())
	if rm == nil {
		t.Fatalf("no --resp address in the serve output:\n%s", output())
	}
	respKey := respIncr(t, rm[1])
	lastHTTP, _ := strconv.ParseInt(keys[4], 10, 64)
	if respKey <= lastHTTP || snowflake.Decompose(respKey).WorkerID != snowflake.Decompose(lastHTTP).WorkerID {
		t.Fatalf("RESP key %d after HTTP keys %v: want a larger key of the same worker", respKey, keys)
	}
	cli(0, "name storage_units tables", "databases", "list")
	cli(1, "nope", "databases", "show", "nope")

	cli(0, "database made_db created", "databases", "create", "made_db", "--token", "e2e-token")
	cli(0, "made_db 0 0", "databases", "list")
	cli(1, "Database 'made_db' already exists.", "databases", "create", "made_db", "--token", "e2e-token")
	cli(1, "Unsupported SQL operation: The current database has no `class org.apache.shardingsphere.readwritesplitting.rule.ReadwriteSplittingRule` rules. (code 30001)",
		"readwrite-splitting", "disable", "made_db", "g", "u", "--token", "e2e-token")
	cli(0, "database made_db dropped", "databases", "drop", "made_db", "--token", "e2e-token")
	cli(1, "Unknown database 'made_db'.", "databases", "drop", "made_db", "--token", "e2e-token")
	cli(0, "database group storage_unit status configured", "readwrite-splitting", "status")
	cli(0, "database schema table unique_key rows", "statistics", "show")
}

// embeddedConfDir returns a conf dir whose global.yaml runs a standalone
// node on an embedded registry in the same dir, on free ports.
func embeddedConfDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	global := "mode:\n  type: Standalone\n  repository:\n    type: Embedded\n    props:\n      dataDir: " + filepath.Join(dir, "data") +
		"\n      clientUrl: http://127.0.0.1:0\n"
	if err := os.WriteFile(filepath.Join(dir, "global.yaml"), []byte(global), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// respIncr sends INCR to the Redis-protocol port at addr and returns the key.
func respIncr(t *testing.T, addr string) int64 {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("*2\r\n$4\r\nINCR\r\n$1\r\nx\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, ":") {
		t.Fatalf("INCR over RESP: %q, %v", line, err)
	}
	key, err := strconv.ParseInt(strings.TrimSpace(line[1:]), 10, 64)
	if err != nil {
		t.Fatalf("INCR over RESP: %q: %v", line, err)
	}
	return key
}
