package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/internal/zapslog"
)

// TestFreshStartClientsLogQuietly starts serve as `make run` does and has
// clients use both consoles the usual ways: a statement over MySQL and
// over PostgreSQL, a MySQL client that disconnects without COM_QUIT (as a
// killed client or a pool does) and one that closes after the greeting.
// At --log-level info the log has no WARN or ERROR line and no line per
// session: session starts and normal disconnects are at debug, on both
// consoles alike.
func TestFreshStartClientsLogQuietly(t *testing.T) {
	log := serveFresh(t, func(out string) {
		ctx := testenv.Context(t)
		addr := func(re string) string {
			m := regexp.MustCompile(re).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no %s in the serve output:\n%s", re, out)
			}
			return m[1]
		}
		mysqlAddr := addr(`MySQL protocol on (127\.0\.0\.1:\d+)`)
		pgAddr := addr(`PostgreSQL protocol on (127\.0\.0\.1:\d+)`)
		// The driver's socket, to close it under the driver: no COM_QUIT.
		sockets := make(chan net.Conn, 1)
		gomysql.RegisterDialContext("quietlog", func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err == nil {
				sockets <- c
			}
			return c, err
		})
		mc := gomysql.NewConfig()
		mc.User, mc.Net, mc.Addr, mc.Timeout = "root", "quietlog", mysqlAddr, 10*time.Second
		db, err := sql.Open("mysql", mc.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		if _, err := db.ExecContext(ctx, "SHOW COMPUTE NODES"); err != nil {
			t.Fatal(err)
		}
		_ = (<-sockets).Close()
		_ = db.Close()
		greeted, err := net.Dial("tcp", mysqlAddr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = bufio.NewReader(greeted).ReadByte()
		_ = greeted.Close()
		pg, err := pgx.Connect(ctx, "postgres://root@"+pgAddr+"/sharding_db?sslmode=disable&connect_timeout=10")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pg.Exec(ctx, "SHOW DIST VARIABLES"); err != nil {
			t.Fatal(err)
		}
		_ = pg.Close(ctx)
		time.Sleep(time.Second) // the sessions end
	}, "--log-level", "info")
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") || sessionLine.MatchString(line) {
			t.Errorf("a console client's normal use logged at info or above: %s", line)
		}
	}
}

// sessionLine matches a console's line about one session.
var sessionLine = regexp.MustCompile(`msg="(mysql|postgresql)[a-z ]*: session`)

// TestFreshStartLogsOneFormat starts serve on the embedded registry in a
// fresh data dir, as `make run` does, and stops it: its log (stderr) has no
// ERROR line and no stack trace, every line is in the one format asked for
// (with --log-format json, a JSON object), the embedded etcd's included,
// and every line carries the instance id exactly once; etcd's warnings
// about its own deliberate configuration stay at debug.
func TestFreshStartLogsOneFormat(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			// Let the embedded etcd's first monitor ticks run (the storage
			// version check logs its benign error about a second in).
			log := serveFresh(t, func(string) { time.Sleep(2 * time.Second) }, "--instance-id", "fresh-start", "--log-format", format)
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

// serveFresh starts serve as `make run` does (the embedded registry in a
// fresh data dir, no users, the HTTP API and both consoles, here on free
// ports) with the extra flags, calls during with serve's standard output
// once it runs, stops it, and returns its log (stderr).
func serveFresh(t *testing.T, during func(stdout string), flags ...string) string {
	t.Helper()
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
	cmd.SetArgs(append([]string{"serve", "--conf", conf, "--http", "127.0.0.1:0", "--mysql", "127.0.0.1:0", "--postgresql", "127.0.0.1:0"}, flags...))
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
	during(stdout.String())
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	return stderr.String()
}

// TestIdleFreshStartNoWarn starts serve as `make run` does and leaves it
// idle: its log has no WARN and no ERROR line, and the consoles' notice
// that without users only loopback clients get in is at INFO. With
// --log-level debug the embedded etcd's own lines show; with --log-level
// error nothing does; a wrong level is a usage error.
func TestIdleFreshStartNoWarn(t *testing.T) {
	serve := func(level string, idle time.Duration) string {
		return serveFresh(t, func(string) { time.Sleep(idle) }, "--log-level", level)
	}
	log := serve("info", 5*time.Second)
	if strings.Contains(log, "level=WARN") || strings.Contains(log, "level=ERROR") || strings.Contains(log, "level=DEBUG") {
		t.Errorf("idle fresh start logged a warning, an error or debug at --log-level info:\n%s", log)
	}
	if !strings.Contains(log, "level=INFO") {
		t.Errorf("nothing at info:\n%s", log)
	}
	for _, console := range []string{"mysql", "postgresql"} {
		if !strings.Contains(log, "level=INFO msg=\""+console+" console: no users in the authority rule: only loopback clients are accepted") {
			t.Errorf("no loopback-only notice at INFO for the %s console:\n%s", console, log)
		}
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
