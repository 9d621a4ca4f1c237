package main

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/clusterlock"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/daemon"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// lockSurface runs LOCK CLUSTER WITH WRITE (lock) or UNLOCK CLUSTER on one
// of a node's surfaces.
type lockSurface struct {
	name string
	run  func(t *testing.T, lock bool) setResult
}

// lockSurfaces returns the five surfaces of d: the MySQL and PostgreSQL
// consoles, the HTTP API (with token), the CLI through --server and the
// CLI on the registry of the conf dir conf.
func lockSurfaces(ctx context.Context, t *testing.T, d *daemon.Daemon, token, conf string) []lockSurface {
	t.Helper()
	mc := gomysql.NewConfig()
	mc.User, mc.Net, mc.Addr, mc.Timeout = "root", "tcp", d.MySQLAddr, 10*time.Second
	my, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = my.Close() })
	pg, err := pgx.Connect(ctx, "postgres://root@"+d.PostgreSQLAddr+"/sharding_db?sslmode=disable&connect_timeout=10")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Close(context.Background()) })
	statement := func(lock bool) string {
		if lock {
			return "LOCK CLUSTER WITH LOCK_STRATEGY(TYPE='WRITE')"
		}
		return "UNLOCK CLUSTER"
	}
	return []lockSurface{
		{"mysql", func(t *testing.T, lock bool) setResult {
			_, err := my.ExecContext(ctx, statement(lock))
			var me *gomysql.MySQLError
			if errors.As(err, &me) {
				return setResult{int(me.Number), me.Message}
			}
			if err != nil {
				t.Fatal(err)
			}
			return setResult{}
		}},
		{"postgresql", func(t *testing.T, lock bool) setResult {
			_, err := pg.Exec(ctx, statement(lock))
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				return setResult{0, pe.Message}
			}
			if err != nil {
				t.Fatal(err)
			}
			return setResult{}
		}},
		{"http", func(t *testing.T, lock bool) setResult {
			path, body := "/api/v1/cluster/unlock", map[string]string{}
			if lock {
				path, body = "/api/v1/cluster/lock", map[string]string{"strategy": "WRITE"}
			}
			status, e := apiChange(ctx, t, http.MethodPut, "http://"+d.HTTPAddr+path, token, body)
			want := map[int]int{0: http.StatusOK, 17000: http.StatusBadRequest, 15030: http.StatusConflict, 15031: http.StatusConflict}[e.code]
			if status != want {
				t.Fatalf("PUT %s: HTTP %d with %d %q, want HTTP %d", path, status, e.code, e.message, want)
			}
			return e
		}},
		{"cli", func(t *testing.T, lock bool) setResult {
			verb := "unlock"
			if lock {
				verb = "lock"
			}
			return cliRefusal(t, "cluster", verb, "--server", "http://"+d.HTTPAddr, "--token", token)
		}},
		{"cli --conf", func(t *testing.T, lock bool) setResult {
			verb := "unlock"
			if lock {
				verb = "lock"
			}
			return cliRefusal(t, "cluster", verb, "--conf", conf)
		}},
	}
}

// checkLockAnswer fails the test unless got is want (the refusal's
// message and code, zero when accepted), the code compared where the
// surface shows one (not the PostgreSQL console).
func checkLockAnswer(t *testing.T, what string, got, want setResult) {
	t.Helper()
	if got.message != want.message || (got.code != 0 && got.code != want.code) || (got.code == 0 && want.code != 0 && got.message == "") {
		t.Errorf("%s: got %q (code %d), want %q (code %d)", what, got.message, got.code, want.message, want.code)
	}
}

// startLockNode starts a node of mode on repo with the HTTP API, the
// MySQL and the PostgreSQL consoles on free ports and no users (loopback
// clients only, every one an admin).
func startLockNode(ctx context.Context, t *testing.T, mode string, repo config.Repository, token string) *daemon.Daemon {
	t.Helper()
	d, err := daemon.Start(ctx, daemon.Config{
		Repository: repo, ModeType: mode,
		Node:       cluster.Config{InstanceID: "lock-" + strings.ToLower(mode), Reservation: time.Second},
		HTTP:       &daemon.HTTPConfig{Addr: "127.0.0.1:0", Token: token, OpenReads: true},
		MySQL:      &daemon.MySQLConfig{Addr: "127.0.0.1:0"},
		PostgreSQL: &daemon.PostgreSQLConfig{Addr: "127.0.0.1:0"},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	return d
}

// clusterState reads /states/cluster_state of d's registry.
func clusterState(ctx context.Context, t *testing.T, d *daemon.Daemon) string {
	t.Helper()
	s, err := clusterlock.State(ctx, d.Repo)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	modeRequired = setResult{int(clusterlock.ErrClusterModeRequired.Code), clusterlock.ErrClusterModeRequired.Message}
	locked       = setResult{int(clusterlock.ErrLocked.Code), clusterlock.ErrLocked.Message}
	notLocked    = setResult{int(clusterlock.ErrNotLocked.Code), clusterlock.ErrNotLocked.Message}
)

// TestClusterLockStandaloneSameEverywhere runs LOCK and UNLOCK CLUSTER on
// a Standalone node (the embedded registry, as `make run`) through the
// MySQL and PostgreSQL consoles, the HTTP API and the CLI: each refuses
// LOCK with 17000 and writes nothing, and each removes a lock found in
// the registry (set by a Cluster node or an earlier version), so no lock
// is left that only one surface can remove.
func TestClusterLockStandaloneSameEverywhere(t *testing.T) {
	ctx := testenv.Context(t)
	repo := config.DefaultMode().Repository
	repo.DataDir = filepath.Join(t.TempDir(), "data")
	repo.ClientURL = "http://127.0.0.1:0"
	const token = "lock-token"
	d := startLockNode(ctx, t, config.ModeStandalone, repo, token)
	conf := t.TempDir()
	global := "mode:\n  type: Standalone\n  repository:\n    type: Embedded\n    props:\n      dataDir: " + repo.DataDir + "\n"
	if err := os.WriteFile(filepath.Join(conf, "global.yaml"), []byte(global), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, s := range lockSurfaces(ctx, t, d, token, conf) {
		checkLockAnswer(t, s.name+" LOCK", s.run(t, true), modeRequired)
		if st := clusterState(ctx, t, d); st != clusterlock.StateOK {
			t.Fatalf("%s: a refused LOCK left the state %s", s.name, st)
		}
		checkLockAnswer(t, s.name+" UNLOCK of an unlocked cluster", s.run(t, false), notLocked)
		if _, err := d.Repo.Put(ctx, paths.ClusterState, []byte(clusterlock.StateReadOnly)); err != nil {
			t.Fatal(err)
		}
		checkLockAnswer(t, s.name+" UNLOCK of a lock in the registry", s.run(t, false), setResult{})
		if st := clusterState(ctx, t, d); st != clusterlock.StateOK {
			t.Fatalf("%s: UNLOCK left the state %s", s.name, st)
		}
	}
}

// TestClusterLockClusterSameEverywhere runs LOCK and UNLOCK CLUSTER on a
// Cluster node on real etcd through the same surfaces: each locks,
// refuses a second LOCK with 15030, unlocks, and refuses a second UNLOCK
// with 15031; a lock taken on one surface is removed on the next.
func TestClusterLockClusterSameEverywhere(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conf := clusterConf(t, realRegistries(t)[0], "sk_lockways_", "", nil)
	openConf(ctx, t, conf, "/nodes", "/reservation", "/metadata", "/props", "/states", "/exclusive_operation")
	c, err := config.Load(ctx, conf)
	if err != nil {
		t.Fatal(err)
	}
	const token = "lock-token"
	d := startLockNode(ctx, t, config.ModeCluster, c.Mode.Repository, token)
	surfaces := lockSurfaces(ctx, t, d, token, conf)
	for i, s := range surfaces {
		checkLockAnswer(t, s.name+" LOCK", s.run(t, true), setResult{})
		if st := clusterState(ctx, t, d); st != clusterlock.StateReadOnly {
			t.Fatalf("%s: LOCK left the state %s", s.name, st)
		}
		checkLockAnswer(t, s.name+" LOCK of a locked cluster", s.run(t, true), locked)
		next := surfaces[(i+1)%len(surfaces)]
		checkLockAnswer(t, next.name+" UNLOCK of "+s.name+"'s lock", next.run(t, false), setResult{})
		checkLockAnswer(t, s.name+" UNLOCK of an unlocked cluster", s.run(t, false), notLocked)
	}
}
