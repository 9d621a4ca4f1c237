package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/daemon"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// setResult is what one front end answered to SET DIST VARIABLE: the
// vendor code and message of a refusal (0 and "" when accepted).
type setResult struct {
	code    int
	message string
}

// apiChange sends body as JSON with method to url with the bearer token
// and returns the HTTP status and the refusal the answer carries
// ({"error", "code"}; zero when accepted).
func apiChange(ctx context.Context, t *testing.T, method, url, token string, body any) (int, setResult) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, setResult{e.Code, e.Error}
}

// cliRefusal runs the CLI with args and returns the refusal it printed:
// its message and vendor code (zero when it succeeded). An error without
// a vendor code fails the test.
func cliRefusal(t *testing.T, args ...string) setResult {
	t.Helper()
	_, stderr, code := runCLI(t, args...)
	if code == 0 {
		return setResult{}
	}
	m := regexp.MustCompile(`shardkeeper: (.*) \(code (\d+)\)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("shardkeeper %s: exit %d without a vendor code: %s", strings.Join(args, " "), code, stderr)
	}
	n, _ := strconv.Atoi(m[2])
	return setResult{n, m[1]}
}

// startThreeWaysNode starts a node (id, HTTP with token, a MySQL console,
// user root with password pw) on a fresh namespace (prefix) of real etcd,
// and returns it with a registry client on that namespace and its conf
// dir, for the tests that run one change through the console, the HTTP
// API and the CLI.
func startThreeWaysNode(ctx context.Context, t *testing.T, prefix, id, token string) (*daemon.Daemon, registry.Repository, string) {
	t.Helper()
	reg := realRegistries(t)[0]
	conf := clusterConf(t, reg, prefix, "authority:\n  users:\n    - user: root@%\n      password: pw\n      admin: true\n", nil)
	repo := openConf(ctx, t, conf, "/nodes", "/reservation", "/metadata", "/props")
	c, err := config.Load(ctx, conf)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Start(ctx, daemon.Config{
		Repository: c.Mode.Repository, Conf: c,
		Node:   cluster.Config{InstanceID: id, Reservation: time.Second},
		HTTP:   &daemon.HTTPConfig{Addr: "127.0.0.1:0", Token: token, OpenReads: true},
		MySQL:  &daemon.MySQLConfig{Addr: "127.0.0.1:0"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	return d, repo, conf
}

// TestSetDistVariableThreeWays runs the same SET DIST VARIABLE through
// the MySQL console, the HTTP API and the CLI (on the registry) against
// one node on real etcd: each front end accepts and refuses the same
// names and values with the same code and message, stores the same
// canonical value, and returns only once the node acknowledged the /props
// version it wrote.
func TestSetDistVariableThreeWays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const token, id = "setvar-token", "setvar"
	d, repo, conf := startThreeWaysNode(ctx, t, "sk_setvar_", id, token)
	mc := gomysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr, mc.Timeout = "root", "pw", "tcp", d.MySQLAddr, 10*time.Second
	db, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })

	ways := []struct {
		name string
		set  func(t *testing.T, name, value string) setResult
	}{
		{"console", func(t *testing.T, name, value string) setResult {
			_, err := db.ExecContext(ctx, "SET DIST VARIABLE `"+name+"` = '"+value+"'")
			var me *gomysql.MySQLError
			if errors.As(err, &me) {
				return setResult{int(me.Number), me.Message}
			}
			if err != nil {
				t.Fatal(err)
			}
			return setResult{}
		}},
		{"http", func(t *testing.T, name, value string) setResult {
			_, r := apiChange(ctx, t, http.MethodPut, "http://"+d.HTTPAddr+"/api/v1/props/"+name, token, map[string]string{"value": value})
			return r
		}},
		{"cli", func(t *testing.T, name, value string) setResult {
			return cliRefusal(t, "props", "set", name, value, "--conf", conf)
		}},
	}
	for _, tc := range []struct {
		name, value    string
		key, canonical string // accepted: the property and what /props holds
		prior          string // the value /props holds before each SET
		want           setResult
	}{
		{name: "sql_show", value: "TRUE", key: "sql-show", canonical: "true", prior: "false"},
		{name: "SQL_SIMPLE", value: "true", key: "sql-simple", canonical: "true", prior: "false"},
		{name: "proxy_frontend_database_protocol_type", value: "postgresql", key: "proxy-frontend-database-protocol-type", canonical: "PostgreSQL", prior: "MySQL"},
		{name: "metadata_identifier_case_sensitivity", value: "insensitive", key: "metadata-identifier-case-sensitivity", canonical: "INSENSITIVE", prior: "DATABASE"},
		{name: "kernel_executor_size", value: "16", key: "kernel-executor-size", canonical: "16", prior: "0"},
		{name: "sql-show", value: "true", want: setResult{12010, "Can not support variable 'sql-show'."}},
		{name: "worker_id", value: "1", want: setResult{12010, "Can not support variable 'worker_id'."}},
		{name: "sql_show", value: "1", want: setResult{12011, "Invalid variable value '1'."}},
		{name: "kernel_executor_size", value: "lots", want: setResult{12011, "Invalid variable value 'lots'."}},
	} {
		for _, w := range ways {
			t.Run(w.name+"/"+tc.name+"="+tc.value, func(t *testing.T) {
				before := propsVersion(ctx, t, repo)
				if tc.key != "" {
					// Start from another value, so that each way's write shows.
					if err := metadata.SetProps(ctx, repo, map[string]string{tc.key: tc.prior}); err != nil {
						t.Fatal(err)
					}
					before = propsVersion(ctx, t, repo)
				}
				got := w.set(t, tc.name, tc.value)
				if got != tc.want {
					t.Fatalf("%s: SET DIST VARIABLE %s = %s answered %+v, want %+v", w.name, tc.name, tc.value, got, tc.want)
				}
				after := propsVersion(ctx, t, repo)
				if tc.key == "" {
					if after != before {
						t.Fatalf("%s: a refused SET wrote /props version %d (was %d)", w.name, after, before)
					}
					return
				}
				if after <= before {
					t.Fatalf("%s: /props version %d after the SET, was %d", w.name, after, before)
				}
				store, err := metadata.Load(ctx, repo, nil)
				if err != nil {
					t.Fatal(err)
				}
				if v := store.Current().Props[tc.key]; v != tc.canonical {
					t.Errorf("%s: /props holds %s = %q, want %q", w.name, tc.key, v, tc.canonical)
				}
				// Acknowledged before the front end answered.
				key, _ := paths.PropsApplied(id)
				kv, err := repo.Get(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				// Its first line is the /props version (distvar.Ack).
				if n := distvar.ParseAck(kv.Value).Props; n < after {
					t.Errorf("%s: the node's acknowledgement is %q when the SET returned, want version %d or later", w.name, kv.Value, after)
				}
			})
		}
	}
}

// propsVersion is the registry's /props active version, -1 when none.
func propsVersion(ctx context.Context, t *testing.T, repo registry.Repository) int {
	t.Helper()
	kv, err := repo.Get(ctx, paths.ActiveVersion(paths.PropsRoot))
	if errors.Is(err, registry.ErrNotFound) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(kv.Value)))
	if err != nil {
		t.Fatalf("/props active version %q", kv.Value)
	}
	return n
}
