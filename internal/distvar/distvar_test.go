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

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
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

// TestLookup: names read back (SHOW DIST VARIABLE, props get) in any
// case and the dashed key; SET takes the variable names only (Property).
func TestLookup(t *testing.T) {
	for _, c := range []struct{ name, prop string }{{"sql_show", "sql-show"}, {"SQL_SHOW", "sql-show"}, {"sql-show", "sql-show"},
		{"proxy_frontend_max_connections", "proxy-frontend-max-connections"}} {
		k, ok := Lookup(c.name)
		if !ok || k.Name != c.prop {
			t.Errorf("Lookup(%q) = %q, %v", c.name, k.Name, ok)
		}
	}
	if _, ok := Lookup("worker_id"); ok {
		t.Error("worker_id is a variable")
	}
	if _, err := Property("sql-show"); err == nil {
		t.Error("Property accepts the dashed key sql-show")
	}
	if v := VariableName("proxy-frontend-max-connections"); v != "proxy_frontend_max_connections" {
		t.Errorf("VariableName = %q", v)
	}
	if _, v, err := Check("metadata_identifier_case_sensitivity", "insensitive"); err != nil || v != "INSENSITIVE" {
		t.Errorf("enum value = %q, %v", v, err)
	}
	var e *sqlerr.Error
	if _, _, err := Check("metadata_identifier_case_sensitivity", "bogus"); !errors.As(err, &e) || e.Code != 12011 || e.Message != "Invalid variable value 'bogus'." {
		t.Errorf("enum bogus = %v", err)
	}
	if _, _, err := Check("proxy_meta_data_collector_cron", "0 0 2"); err == nil {
		t.Error("a 3-field cron was accepted")
	}
	if _, v, err := Check("proxy_meta_data_collector_cron", "0 0 3 * * ?"); err != nil || v != "0 0 3 * * ?" {
		t.Errorf("cron = %q, %v", v, err)
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
	sess, err := repo.NewSession(ctx, registry.SessionOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a, err := StartAcker(ctx, repo, AckerConfig{InstanceID: id, Node: oneSession{sess}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); _ = sess.Close(context.Background()); m.stop(); <-m.done })
	return m
}

// oneSession is a node that holds one session all its life, as a
// cluster.Node does until it loses one.
type oneSession struct{ s registry.Session }

func (o oneSession) Session() registry.Session { return o.s }

func (o oneSession) OnSession(ctx context.Context, f func(context.Context, registry.Session) error) (func(), error) {
	return func() {}, f(ctx, o.s)
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

// TestAckerFollowsTheNodesSession: the acknowledgement lives in the
// node's session; when the registry expires it, the node writes it again
// in its next session (cluster.Node.OnSession), with the version applied
// meanwhile.
func TestAckerFollowsTheNodesSession(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	t.Cleanup(func() { _ = repo.Close() })
	quiet := slog.New(slog.DiscardHandler)
	node, err := cluster.Open(ctx, repo, cluster.Config{InstanceID: "acked", Reservation: 300 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Close(context.Background()) })
	m := &member{id: "acked"}
	if m.store, err = metadata.Load(ctx, repo, quiet); err != nil {
		t.Fatal(err)
	}
	m.run()
	t.Cleanup(func() { m.stop(); <-m.done })
	a, err := StartAcker(ctx, repo, AckerConfig{InstanceID: "acked", Node: node, Store: m.store, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	key, _ := paths.PropsApplied("acked")
	first := node.Session()
	before := AckValue(m.store.Current())
	if kv, err := repo.Get(ctx, key); err != nil || string(kv.Value) != before {
		t.Fatalf("acknowledgement after StartAcker: %q, %v; want %s", kv.Value, err, before)
	}
	if !memory.Expire(first) {
		t.Fatal("the node's session is not a live memory session")
	}
	// The version is unchanged: only the node's session hook writes it.
	testenv.Eventually(t, "the acknowledgement in the node's next session", func() bool {
		s := node.Session()
		kv, err := repo.Get(ctx, key)
		return s != nil && s != first && err == nil && string(kv.Value) == before
	})
	if err := metadata.SetProps(ctx, repo, map[string]string{"sql-show": "true"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the acknowledgement of the new version", func() bool {
		kv, err := repo.Get(ctx, key)
		v := m.store.Current().PropsVersion
		return err == nil && string(kv.Value) != before && strings.HasPrefix(string(kv.Value), strconv.Itoa(v)+" ")
	})
	a.Close()
	if _, err := repo.Get(ctx, key); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("acknowledgement after Close: %v, want it withdrawn", err)
	}
}

// closedWatch is a repository whose watches end at once without an
// error event, as a registry client's may when it is closed.
type closedWatch struct{ registry.Repository }

func (r closedWatch) Watch(ctx context.Context, prefix string) ([]registry.KV, <-chan registry.Event, error) {
	initial, err := r.List(ctx, prefix)
	ch := make(chan registry.Event)
	close(ch)
	return initial, ch, err
}

// TestWaitWatchClosed: a watch that ends without an error event is an
// error that says so (it wrapped a nil error: "%!w(<nil>)").
func TestWaitWatchClosed(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	t.Cleanup(func() { _ = repo.Close() })
	online, _ := paths.Online(paths.Proxy, "behind")
	applied, _ := paths.PropsApplied("behind")
	for k, v := range map[string]string{online: "attribute: 127.0.0.1@3307\n", applied: "0"} {
		if _, err := repo.Put(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	var out Outcome
	err := Wait(ctx, closedWatch{repo}, 1, &out)
	if err == nil || strings.Contains(err.Error(), "%!") || !errors.Is(err, registry.ErrUnavailable) {
		t.Fatalf("Wait on a watch that closed = %v, want an ErrUnavailable that says the watch ended", err)
	}
	if !slices.Equal(out.Pending, []string{"behind"}) {
		t.Errorf("outcome %+v, want behind pending", out)
	}
}
