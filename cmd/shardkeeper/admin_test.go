package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/computenode"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/httpapi"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// runCLI executes the CLI in-process with separate standard output and
// error, and returns the exit code main would use.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := newRootCommand()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	ctx := testenv.Context(t)
	err := cmd.ExecuteContext(ctx)
	if err != nil {
		errb.WriteString("shardkeeper: " + errorText(err) + "\n")
	}
	return out.String(), errb.String(), exitCode(err)
}

// cliExpect returns a runner of shardkeeper with flags appended to its
// arguments: it fails the test unless the command exits with code and its
// stdout (stderr when code is not 0) contains want, both compared with
// runs of white space collapsed (column widths vary with the values). It
// returns stdout.
func cliExpect(t *testing.T, flags ...string) func(code int, want string, args ...string) string {
	return func(code int, want string, args ...string) string {
		t.Helper()
		stdout, stderr, got := runCLI(t, append(args, flags...)...)
		out := stdout
		if code != 0 {
			out = stderr
		}
		if got != code || !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Fatalf("shardkeeper %s: exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, code, want, stdout, stderr)
		}
		return stdout
	}
}

func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"keys", "decode", "1190422418313265152"}, 0, ""},
		{[]string{"keys", "decode"}, 2, "usage: shardkeeper keys decode KEY..."},
		{[]string{"keys", "decode", "-5"}, 2, "unknown shorthand flag"},
		{[]string{"keys", "decode", "x1"}, 2, `KEY "x1": want a non-negative decimal`},
		{[]string{"keys", "decode", "1", "--epoch", "yesterday"}, 2, "--epoch"},
		{[]string{"keys", "next", "--conf", "/tmp"}, 2, "keys next needs a running node: pass --server URL"},
		{[]string{"keys", "next", "-n", "0", "--server", "http://127.0.0.1:1"}, 2, "-n 0: want 1 to 10000 keys"},
		{[]string{"keys", "next", "-n", "10001", "--server", "http://127.0.0.1:1"}, 2, "-n 10001"},
		{[]string{"keys", "next", "--server", "http://127.0.0.1:1"}, 1, "cannot reach the node at http://127.0.0.1:1"},
		{[]string{"nodes", "list", "--bogus"}, 2, "unknown flag: --bogus\nSee 'shardkeeper nodes list --help'."},
		{[]string{"nodes", "frobnicate"}, 2, `unknown command "frobnicate" for "shardkeeper nodes"`},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"registry", "lss", "/"}, 2, `unknown command "lss" for "shardkeeper registry"`},
		{[]string{"nodes", "list", "-o", "xml"}, 2, `-o "xml": want table, json or yaml`},
		{[]string{"nodes", "list", "extra"}, 2, "shardkeeper nodes list takes no arguments"},
		{[]string{"nodes", "enable"}, 2, "usage: shardkeeper nodes enable INSTANCE_ID"},
		{[]string{"nodes", "disable", "../x", "--server", "http://127.0.0.1:1"}, 2, `INSTANCE_ID "../x"`},
		{[]string{"nodes", "list", "--server", "http://x:1", "--conf", "/tmp"}, 2, "give one or the other"},
		{[]string{"nodes", "list", "--server", "ftp://x"}, 2, "--server \"ftp://x\": want a URL"},
		{[]string{"props", "set", "sql_show"}, 2, "usage: shardkeeper props set NAME VALUE"},
		{[]string{"props", "set", "no_such_prop", "1", "--server", "http://127.0.0.1:1"}, 1, "Can not support variable 'no_such_prop'. (code 12010"},
		{[]string{"props", "set", "sql_show", "maybe", "--server", "http://127.0.0.1:1"}, 1, "Invalid variable value 'maybe'. (code 12011"},
		{[]string{"props", "get", "worker_id", "--conf", "/nonexistent"}, 1, "Can not support variable 'WORKER_ID'."},
		{[]string{"databases", "show", "a/b", "--server", "http://127.0.0.1:1"}, 2, `DATABASE "a/b"`},
		{[]string{"nodes", "list", "--conf", "/nonexistent"}, 1, "neither global.yaml nor server.yaml"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Setenv(envServer, "")
			t.Setenv(envToken, "")
			_, stderr, code := runCLI(t, c.args...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, c.code, c.want)
			}
		})
	}
}

func TestExitCodeMapping(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{fmt.Errorf("wrapped: %w", usagef("bad")), 2},
		{errors.New(`unknown command "x" for "shardkeeper"`), 2},
		{errors.New(`accepts 1 arg(s), received 0`), 2},
		{&sqlerr.Error{Kind: sqlerr.NotFound, Message: "not found"}, 1},
		{&sqlerr.Error{Code: 12010, SQLState: "44000", Message: "Can not support variable 'x'."}, 1},
	} {
		if got := exitCode(c.err); got != c.code {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.code)
		}
	}
}

func TestPrinters(t *testing.T) {
	nodes := []computenode.Row{
		{InstanceID: "a", InstanceType: "PROXY", Host: "10.0.0.1", Port: 3307, Status: "OK", ModeType: "Cluster", WorkerID: 7, Version: "v"},
		{InstanceID: "b", InstanceType: "JDBC", Host: "10.0.0.2", Port: -1, Status: "CIRCUIT_BREAK", ModeType: "Cluster", WorkerID: -1, DatabaseName: "db"},
	}
	for _, c := range []struct {
		format string
		want   []string
	}{
		{"table", []string{
			"instance_id   instance_type   host       port   status          mode_type   worker_id   version   database_name",
			"a             PROXY           10.0.0.1   3307   OK              Cluster     7           v         <none>",
			"b             JDBC            10.0.0.2   -1     CIRCUIT_BREAK   Cluster     -1          <none>    db",
		}},
		{"json", []string{`"nodes": [`, `"instance_id": "a"`, `"port": -1`, `"worker_id": 7`, `"database_name": "db"`}},
		{"yaml", []string{"nodes:", "- database_name: \"\"", "  instance_id: a", "  port: 3307", "  worker_id: -1", "  status: CIRCUIT_BREAK"}},
	} {
		t.Run(c.format, func(t *testing.T) {
			var b bytes.Buffer
			if err := output(&b, c.format, nodesTable(nodes), map[string]any{"nodes": nodes}); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestListNodesFromTheRegistry(t *testing.T) {
	r := memory.New()
	for key, value := range map[string]string{
		"/nodes/compute_nodes/online/proxy/p1":  "attribute: 10.0.0.1@3307\nversion: 5.5.2\n",
		"/nodes/compute_nodes/online/jdbc/j1":   "attribute: 10.0.0.2\ndatabaseName: sharding_db\nversion: 5.5.2\n",
		"/nodes/compute_nodes/status/p1":        "CIRCUIT_BREAK",
		"/nodes/compute_nodes/worker_id/p1":     "12",
		"/nodes/compute_nodes/status/gone":      "OK", // not online: not listed
		"/nodes/compute_nodes/online/proxy/bad": "[",  // corrupt: reported and skipped
	} {
		if _, err := r.Put(context.Background(), key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	insts, err := cluster.LoadInstances(context.Background(), r, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var got []computenode.Row
	for _, inst := range insts {
		got = append(got, computenode.RowOf(inst, "Cluster"))
	}
	want := []computenode.Row{
		{InstanceID: "j1", InstanceType: "JDBC", Host: "10.0.0.2", Port: -1, Status: "OK", ModeType: "Cluster", WorkerID: -1, Version: "5.5.2", DatabaseName: "sharding_db"},
		{InstanceID: "p1", InstanceType: "PROXY", Host: "10.0.0.1", Port: 3307, Status: "CIRCUIT_BREAK", ModeType: "Cluster", WorkerID: 12, Version: "5.5.2"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows =\n%v\nwant\n%v", got, want)
	}
}

func TestPropNames(t *testing.T) {
	for _, c := range []struct{ in, key, err string }{
		{"sql_show", "sql-show", ""},
		{"SQL_SHOW", "sql-show", ""},
		{"sql-show", "sql-show", ""},
		{"Proxy_Frontend_Max_Connections", "proxy-frontend-max-connections", ""},
		{"worker_id", "", "Can not support variable 'WORKER_ID'."},
	} {
		key, err := propKey(c.in)
		if key != c.key || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("propKey(%q) = %q, %v", c.in, key, err)
		}
	}
	vars := distVariables(config.Props{"sql-show": "true", "custom-key": "x"}, nil)
	if len(vars) != len(config.KnownProps)+1 {
		t.Fatalf("%d variables", len(vars))
	}
	for i := 1; i < len(vars); i++ {
		if vars[i-1].Name >= vars[i].Name {
			t.Fatalf("not sorted: %v", vars)
		}
	}
	find := func(n string) string {
		for _, v := range vars {
			if v.Name == n {
				return v.Value
			}
		}
		return "<missing>"
	}
	if find("sql_show") != "true" || find("kernel_executor_size") != "0" || find("custom_key") != "x" {
		t.Fatalf("values: %v", vars)
	}
}

func TestKeyDecoding(t *testing.T) {
	for _, c := range []struct {
		key   int64
		epoch string
		want  httpapi.KeyInfo
	}{
		// ShardingSphere's vectors: ((ms - epoch) << 22) | (worker << 12) | seq.
		{0, "2016-11-01T00:00:00Z", httpapi.KeyInfo{Key: "0", UnixMillis: 1477958400000, Time: "2016-11-01T00:00:00.000Z"}},
		{1<<22 | 3<<12 | 5, "1477958400000", httpapi.KeyInfo{Key: "4206597", UnixMillis: 1477958400001, Time: "2016-11-01T00:00:00.001Z", WorkerID: 3, Sequence: 5}},
		{4095, "2016-10-31T16:00:00Z", httpapi.KeyInfo{Key: "4095", UnixMillis: 1477929600000, Time: "2016-10-31T16:00:00.000Z", Sequence: 4095}},
	} {
		ep, err := parseEpoch(c.epoch)
		if err != nil {
			t.Fatal(err)
		}
		if got := decodeKey(c.key, ep); got != c.want {
			t.Errorf("decodeKey(%d, %s) = %+v, want %+v", c.key, c.epoch, got, c.want)
		}
	}
	for _, bad := range []string{"", "-1", "2016-11-01", "yesterday"} {
		if _, err := parseEpoch(bad); exitCode(err) != exitUsage {
			t.Errorf("parseEpoch(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, stderr, code := runCLI(t, "completion", shell)
		if code != 0 || !strings.Contains(out, "shardkeeper") || len(out) < 1000 {
			t.Fatalf("completion %s: exit %d, %d bytes, %s", shell, code, len(out), stderr)
		}
	}
	// Dynamic completion of property names and flag values.
	out, _, _ := runCLI(t, "__complete", "props", "set", "")
	if !strings.Contains(out, "sql_show\tboolean, default false") {
		t.Fatalf("props completion:\n%s", out)
	}
	out, _, _ = runCLI(t, "__complete", "nodes", "list", "-o", "")
	if !strings.Contains(out, "table\njson\nyaml") {
		t.Fatalf("-o completion:\n%s", out)
	}
}
