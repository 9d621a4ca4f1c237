package distvar

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, value    string
		key, canonical string
		code           uint16
	}{
		{name: "sql_show", value: "TRUE", key: "sql-show", canonical: "true"},
		{name: "SQL_SHOW", value: "false", key: "sql-show", canonical: "false"},
		{name: "sql_show", value: "1", code: 12011},
		{name: "sql-show", value: "true", code: 12010},
		{name: "no_such_variable", value: "1", code: 12010},
		{name: "worker_id", value: "1", code: 12010},
		{name: "kernel_executor_size", value: " 16", key: "kernel-executor-size", canonical: "16"},
		{name: "kernel_executor_size", value: "99999999999", code: 12011},
		{name: "proxy_frontend_connection_idle_timeout", value: "99999999999", key: "proxy-frontend-connection-idle-timeout", canonical: "99999999999"},
		{name: "metadata_identifier_case_sensitivity", value: "insensitive", key: "metadata-identifier-case-sensitivity", canonical: "INSENSITIVE"},
		{name: "metadata_identifier_case_sensitivity", value: "upper", code: 12011},
		{name: "proxy_meta_data_collector_cron", value: "0 0 3 * * ?", key: "proxy-meta-data-collector-cron", canonical: "0 0 3 * * ?"},
		{name: "proxy_meta_data_collector_cron", value: "daily", code: 12011},
		{name: "proxy_frontend_database_protocol_type", value: "postgresql", key: "proxy-frontend-database-protocol-type", canonical: "PostgreSQL"},
		{name: "proxy_frontend_database_protocol_type", value: "Cobol", code: 12011},
	} {
		key, canonical, err := Check(tc.name, tc.value)
		if tc.code != 0 {
			var e *sqlerr.Error
			if !errors.As(err, &e) || e.Code != tc.code {
				t.Errorf("Check(%q, %q) = %v, want error %d", tc.name, tc.value, err, tc.code)
			}
			continue
		}
		if err != nil || key != tc.key || canonical != tc.canonical {
			t.Errorf("Check(%q, %q) = %q, %q, %v; want %q, %q", tc.name, tc.value, key, canonical, err, tc.key, tc.canonical)
		}
	}
}

// member is one shardkeeper node's share of the protocol: a metadata store
// following the registry and its Acker.
type member struct {
	id    string
	store *metadata.Store
	stop  context.CancelFunc // holds the store still: it applies nothing more
	done  chan struct{}
}

func startMember(t testing.TB, repo registry.Repository, id string) *member {
	t.Helper()
	ctx := testenv.Context(t)
	store, err := metadata.Load(ctx, repo, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	m := &member{id: id, store: store}
	m.run()
	a, err := StartAcker(ctx, repo, AckerConfig{InstanceID: id, Store: store, SessionTTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); m.stop(); <-m.done })
	return m
}

func (m *member) run() {
	ctx, cancel := context.WithCancel(context.Background())
	m.stop, m.done = cancel, make(chan struct{})
	go func() { defer close(m.done); _ = m.store.Run(ctx) }()
}

// goOnline registers ids as online proxies, as ShardingSphere does.
func goOnline(t testing.TB, repo registry.Repository, ids ...string) {
	t.Helper()
	ctx := testenv.Context(t)
	sess, err := repo.NewSession(ctx, registry.SessionOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close(context.Background()) })
	for _, id := range ids {
		key, err := paths.Online(paths.Proxy, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := sess.PutEphemeral(ctx, key, []byte("attribute: 127.0.0.1@3307\ndatabaseName: ''\nversion: 5.5.2\n")); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSetWaitsForEveryNode(t *testing.T) {
	realtest.Each(t, "sk_distvar_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo := open(t)
		if err := metadata.SetProps(ctx, repo, map[string]string{"sql-simple": "true"}); err != nil {
			t.Fatal(err)
		}
		var members []*member
		for _, id := range []string{"node-a", "node-b", "node-c"} {
			members = append(members, startMember(t, open(t), id))
		}
		// upstream is a ShardingSphere node: online, no acknowledgement.
		goOnline(t, repo, "node-a", "node-b", "node-c", "upstream")

		start := time.Now()
		out, err := Set(ctx, repo, "sql_show", "true", Options{Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		if !slices.Equal(out.Applied, []string{"node-a", "node-b", "node-c"}) || out.Pending != nil || !slices.Equal(out.Unacknowledging, []string{"upstream"}) {
			t.Fatalf("outcome %+v, want applied on node-a..c, upstream unacknowledging", out)
		}
		if elapsed >= 20*time.Second {
			t.Fatalf("Set took %v: it waited for its timeout although every node applied", elapsed)
		}
		// Every member's snapshot has the value when Set returns.
		for _, m := range members {
			if p := m.store.Current().Props; p["sql-show"] != "true" || p["sql-simple"] != "true" {
				t.Errorf("%s applied props %v, want sql-show and sql-simple true", m.id, p)
			}
		}
	})
}

func TestSetNamesTheNodeHeldStill(t *testing.T) {
	realtest.Each(t, "sk_distvar_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo := open(t)
		a := startMember(t, open(t), "node-a")
		startMember(t, open(t), "node-b")
		c := startMember(t, open(t), "node-c")
		goOnline(t, repo, "node-a", "node-b", "node-c")
		// node-c's watch is held still: its session (and its last
		// acknowledgement) lives on, but it applies nothing.
		c.stop()
		<-c.done

		const timeout = time.Second
		start := time.Now()
		out, err := Set(ctx, repo, "sql_show", "true", Options{Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		if !slices.Equal(out.Pending, []string{"node-c"}) || !slices.Equal(out.Applied, []string{"node-a", "node-b"}) {
			t.Fatalf("outcome %+v, want node-c pending, node-a and node-b applied", out)
		}
		if elapsed < timeout || elapsed > timeout+5*time.Second {
			t.Fatalf("Set returned after %v, want its timeout %v (plus the write)", elapsed, timeout)
		}
		if got := a.store.Current().Props["sql-show"]; got != "true" {
			t.Fatalf("node-a applied sql-show=%q", got)
		}

		// Released, node-c catches up and confirms the version.
		c.run()
		if err := Wait(ctx, repo, out.Version, &out); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out.Applied, []string{"node-a", "node-b", "node-c"}) {
			t.Fatalf("after release: %+v", out)
		}
	})
}

func TestSetRefusesBeforeWriting(t *testing.T) {
	realtest.Each(t, "sk_distvar_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo := open(t)
		_, err := Set(ctx, repo, "sql_show", "yes", Options{})
		var e *sqlerr.Error
		if !errors.As(err, &e) || e.Code != 12011 || e.SQLState != "HY004" || e.Message != "Invalid variable value 'yes'." {
			t.Fatalf("Set(sql_show, yes) = %v", err)
		}
		if _, err := repo.Get(ctx, paths.ActiveVersion(paths.PropsRoot)); !errors.Is(err, registry.ErrNotFound) {
			t.Fatalf("a refused SET wrote /props: %v", err)
		}
	})
}

// TestHostileSetVariableCleanupFailure: once the new /props version is
// active the variable is set; a failed delete of the older version (etcd
// paused after the switch) is a warning, not an error (it was "ERROR ...
// registry delete /props/versions/N" although the value was in force).
func TestHostileSetVariableCleanupFailure(t *testing.T) {
	realtest.Each(t, "sk_distvar_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		inner := open(t)
		if err := metadata.SetProps(ctx, inner, map[string]string{"sql-simple": "true"}); err != nil {
			t.Fatal(err)
		}
		repo := fault.Observe(inner, fault.HookFunc(func(_ context.Context, op, key string) (func(error) error, error) {
			if op == "delete" && strings.HasPrefix(key, "/props/versions/") {
				return nil, errors.New("injected: registry unreachable")
			}
			return nil, nil
		}))
		out, err := Set(ctx, repo, "sql_show", "true", Options{Timeout: time.Second})
		if err != nil {
			t.Fatalf("Set = %v, want success: the new version is active", err)
		}
		if len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "injected") {
			t.Errorf("warnings %q, want the failed cleanup", out.Warnings)
		}
		kv, err := inner.Get(ctx, paths.ActiveVersion(paths.PropsRoot))
		if err != nil || string(kv.Value) != strconv.Itoa(out.Version) {
			t.Fatalf("active_version %q %v, want %d", kv.Value, err, out.Version)
		}
		// The next write deletes the leftover.
		if _, err := Set(ctx, inner, "sql_show", "false", Options{Timeout: time.Second}); err != nil {
			t.Fatal(err)
		}
		if vs, err := inner.Children(ctx, "/props/versions"); err != nil || len(vs) != 1 {
			t.Errorf("versions %v %v after the next write, want one", vs, err)
		}
	})
}
