package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/internal/zapslog"
)

// TestFreshStartLogsOneFormat starts serve on the embedded registry in a
// fresh data dir, as `make run` does, and stops it: its log (stderr) has no
// ERROR line and no stack trace, every line is in the one format asked for
// (with --log-format json, a JSON object), the embedded etcd's included,
// and every line carries the instance id exactly once; etcd's warnings
// about its own deliberate configuration stay at debug.
func TestFreshStartLogsOneFormat(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			conf := filepath.Join(dir, "conf")
			if err := os.MkdirAll(conf, 0o755); err != nil {
				t.Fatal(err)
			}
			global := "mode:\n  type: Standalone\n  repository:\n    type: Embedded\n    props:\n      dataDir: " + filepath.Join(dir, "data") +
				"\n      clientUrl: http://127.0.0.1:0\n"
			if err := os.WriteFile(filepath.Join(conf, "global.yaml"), []byte(global), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stdout, stderr testenv.SyncBuffer
			cmd := newRootCommand()
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			cmd.SetArgs([]string{"serve", "--conf", conf, "--instance-id", "fresh-start", "--http", "127.0.0.1:0", "--mysql", "127.0.0.1:0",
				"--log-format", format})
			done := make(chan error, 1)
			go func() { done <- cmd.ExecuteContext(ctx) }()
			testenv.Eventually(t, "serve's running line", func() bool {
				select {
				case err := <-done:
					t.Fatalf("serve exited: %v\n%s%s", err, stdout.String(), stderr.String())
				default:
				}
				return strings.Contains(stdout.String(), "shardkeeper: running")
			})
			// Let the embedded etcd's first monitor ticks run (the storage
			// version check logs its benign error about a second in).
			time.Sleep(2 * time.Second)
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("serve: %v\n%s", err, stderr.String())
			}
			log := stderr.String()
			sc := bufio.NewScanner(strings.NewReader(log))
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			lines := 0
			for sc.Scan() {
				line := sc.Text()
				lines++
				if format == "json" {
					var rec map[string]any
					if err := json.Unmarshal([]byte(line), &rec); err != nil {
						t.Errorf("log line is not JSON: %q", line)
						continue
					}
					if rec["level"] == "ERROR" {
						t.Errorf("ERROR on a clean start: %s", line)
					}
					// etcd warns of a request only past its
					// --warning-unary-request-duration (300 ms).
					if spent, ok := rec["time spent"].(float64); ok && rec["msg"] == "request stats" && time.Duration(spent) < 300*time.Millisecond {
						t.Errorf("etcd logged a request of %v as slow: %s", time.Duration(spent), line)
					}
				} else {
					if !strings.HasPrefix(line, "time=") {
						t.Errorf("log line is not slog text: %q", line)
					}
					if strings.Contains(line, "level=ERROR") {
						t.Errorf("ERROR on a clean start: %s", line)
					}
				}
				for _, b := range zapslog.Benign {
					if strings.Contains(line, b.Message) {
						t.Errorf("etcd's benign %q shown above debug: %s", b.Message, line)
					}
				}
				if strings.Contains(line, "stacktrace") || strings.Contains(line, "goroutine ") {
					t.Errorf("stack trace on a clean start: %s", line)
				}
				if n := strings.Count(line, "instance"); n != 1 {
					t.Errorf("instance appears %d times, want 1: %s", n, line)
				}
			}
			if lines == 0 {
				t.Fatal("nothing logged")
			}
		})
	}
}

// TestIdleFreshStartNoWarn starts serve as `make run` does (the embedded
// registry in a fresh data dir, no instance id, the HTTP API and both
// consoles, here on free ports) and leaves it idle: its log has no WARN
// and no ERROR line. With --log-level debug the embedded etcd's own lines
// show; with --log-level error nothing does; a wrong level is a usage
// error.
func TestIdleFreshStartNoWarn(t *testing.T) {
	serve := func(level string, idle time.Duration) string {
		dir := t.TempDir()
		conf := filepath.Join(dir, "conf")
		if err := os.MkdirAll(conf, 0o755); err != nil {
			t.Fatal(err)
		}
		global := "mode:\n  type: Standalone\n  repository:\n    type: Embedded\n    props:\n      dataDir: " + filepath.Join(dir, "data") +
			"\n      clientUrl: http://127.0.0.1:0\n"
		if err := os.WriteFile(filepath.Join(conf, "global.yaml"), []byte(global), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var stdout, stderr testenv.SyncBuffer
		cmd := newRootCommand()
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs([]string{"serve", "--conf", conf, "--http", "127.0.0.1:0", "--mysql", "127.0.0.1:0", "--postgresql", "127.0.0.1:0", "--log-level", level})
		done := make(chan error, 1)
		go func() { done <- cmd.ExecuteContext(ctx) }()
		testenv.Eventually(t, "serve's running line", func() bool {
			select {
			case err := <-done:
				t.Fatalf("serve exited: %v\n%s%s", err, stdout.String(), stderr.String())
			default:
			}
			return strings.Contains(stdout.String(), "shardkeeper: running")
		})
		time.Sleep(idle)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("serve: %v\n%s", err, stderr.String())
		}
		return stderr.String()
	}
	log := serve("info", 5*time.Second)
	if strings.Contains(log, "level=WARN") || strings.Contains(log, "level=ERROR") || strings.Contains(log, "level=DEBUG") {
		t.Errorf("idle fresh start logged a warning, an error or debug at --log-level info:\n%s", log)
	}
	if !strings.Contains(log, "level=INFO") {
		t.Errorf("nothing at info:\n%s", log)
	}
	if log := serve("debug", 0); !strings.Contains(log, "level=DEBUG msg=\"closed etcd server\"") {
		t.Errorf("--log-level debug shows no embedded etcd line:\n%s", log)
	}
	if log := serve("error", 0); log != "" {
		t.Errorf("--log-level error logged:\n%s", log)
	}
	if _, err := run(t, t.Context(), "serve", "--log-level", "loud"); err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "--log-level") {
		t.Errorf("serve --log-level loud: %v", err)
	}
}
