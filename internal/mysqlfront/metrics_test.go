package mysqlfront_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/console/consoletest"
	"github.com/shardkeeper/shardkeeper/internal/mysqlfront"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestConsoleMetrics logs in with a wrong password, runs a statement and
// a failing one over the MySQL console, and checks the console metrics
// count them, in an exposition promtool accepts.
func TestConsoleMetrics(t *testing.T) {
	m := console.NewMetrics()
	f := start(t, mysqlfront.Config{Users: consoletest.Users(t, usersYAML), Metrics: m})
	ctx := testenv.Context(t)
	bad := open(t, f.dsn("root", "wrong", ""))
	if err := bad.PingContext(ctx); err == nil {
		t.Fatal("a wrong password logged in")
	}
	db := open(t, f.dsn("root", "r00t-pw", ""))
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "SET NAMES utf8mb4"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "BOGUS STATEMENT"); err == nil {
		t.Fatal("BOGUS STATEMENT succeeded")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	body := buf.String()
	for _, want := range []string{
		`shardkeeper_console_failed_logins_total{protocol="mysql"} 1`,
		`shardkeeper_console_sessions{protocol="mysql"} 1`,
		`shardkeeper_console_refused_connections_total{protocol="postgresql"} 0`,
		`shardkeeper_console_statements_total{kind="OTHER"} 1`,
		`shardkeeper_console_errors_total{code="1064"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
	if _, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command("promtool", "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}
}
