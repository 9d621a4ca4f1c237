package daemon

import (
	"context"
	"errors"
	"net"
	"net/http"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/keyclient"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// TestCloseStopsEveryFrontend starts a daemon on real etcd with HTTP, RESP
// and UDP, and checks that Close leaves nothing behind in the process:
// every port refuses or ignores requests and the online node is gone.
func TestCloseStopsEveryFrontend(t *testing.T) {
	ctx := testenv.Context(t)
	repo := etcdRepository(t)
	d, err := Start(ctx, Config{
		Repository: repo,
		Node:       cluster.Config{InstanceID: "daemon-close", Reservation: time.Second},
		HTTP:       &HTTPConfig{Addr: "127.0.0.1:0", OpenReads: true},
		RESP:       &RESPConfig{Addr: "127.0.0.1:0"},
		UDP:        &UDPConfig{Addr: "127.0.0.1:0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	online, err := paths.Online(paths.Proxy, "daemon-close")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Repo.Get(ctx, online); err != nil {
		t.Fatalf("online node while running: %v", err)
	}
	if code := readyz(t, d.HTTPAddr); code != http.StatusOK {
		t.Fatalf("/readyz while running = %d", code)
	}
	conn, err := net.Dial("tcp", d.RESPAddr)
	if err != nil {
		t.Fatalf("RESP while running: %v", err)
	}
	conn.Close()
	udp, err := keyclient.DialUDP(d.UDPAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	if _, err := udp.NextID(ctx); err != nil {
		t.Fatalf("UDP while running: %v", err)
	}

	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.TCPRefused(t, d.HTTPAddr, d.RESPAddr)
	uctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if k, err := udp.NextID(uctx); err == nil {
		t.Fatalf("UDP key %d after Close", k)
	}
	r, err := connect.Open(ctx, repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if kv, err := r.Get(ctx, online); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("online node after Close: %q, %v; want it gone", kv.Value, err)
	}
}

// etcdRepository is the test environment's etcd under a fresh namespace.
func etcdRepository(t *testing.T) config.Repository {
	return config.Repository{Type: config.RepositoryEtcd, ServerLists: testenv.EtcdEndpoints(t),
		Namespace: testenv.Namespace("sk_daemon_"), TimeToLive: 10 * time.Second, ConnectTimeout: 10 * time.Second}
}

func readyz(t *testing.T, addr string) int {
	t.Helper()
	r, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	return r.StatusCode
}

// TestBusyPortFailsTheStart: a front end whose port is taken fails Start
// before the registry is contacted, and the ports already bound are
// released.
func TestBusyPortFailsTheStart(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := free.Addr().String()
	free.Close()
	// No registry listens on port 1: reaching it would fail differently.
	repo := config.Repository{Type: config.RepositoryEtcd, ServerLists: []string{"http://127.0.0.1:1"}, Namespace: "sk_daemon_busy",
		TimeToLive: 10 * time.Second, ConnectTimeout: time.Second}
	_, err = Start(context.Background(), Config{
		Repository: repo,
		HTTP:       &HTTPConfig{Addr: httpAddr},
		RESP:       &RESPConfig{Addr: busy.Addr().String()},
	})
	if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("Start with a busy RESP port: %v, want address in use", err)
	}
	ln, err := net.Listen("tcp", httpAddr)
	if err != nil {
		t.Fatalf("HTTP port %s still bound after the failed start: %v", httpAddr, err)
	}
	ln.Close()
}

// TestMaxBorrow: Config.MaxBorrow reaches the node's generator: a burst of
// a million keys, which needs 245 ms of sequence, is stamped ahead of the
// clock instead of waiting for it.
func TestMaxBorrow(t *testing.T) {
	ctx := testenv.Context(t)
	repo := etcdRepository(t)
	d, err := Start(ctx, Config{Repository: repo, Node: cluster.Config{InstanceID: "daemon-borrow"}, MaxBorrow: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.WithoutCancel(ctx))
	keys := make([]int64, 0, 1<<20)
	for len(keys) < 1_000_000 {
		if keys, err = d.Node.AppendIDs(ctx, keys, 10000); err != nil {
			t.Fatal(err)
		}
	}
	last := snowflake.Decompose(keys[len(keys)-1]).Time(time.UnixMilli(snowflake.DefaultEpochMillis))
	if ahead := time.Until(last); ahead <= 0 {
		t.Fatalf("the last of %d keys is stamped %v behind the clock: no borrow", len(keys), -ahead)
	}
}

// TestProcessTriggers starts a daemon on real etcd and asks the cluster
// for its processes as a ShardingSphere node would: the daemon answers
// with the sessions registered in its table, and once closed it is no
// longer asked.
func TestProcessTriggers(t *testing.T) {
	ctx := testenv.Context(t)
	repo := etcdRepository(t)
	d, err := Start(ctx, Config{Repository: repo, Node: cluster.Config{InstanceID: "daemon-processes", Reservation: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	d.Processes.Add(process.Process{ID: "s1", Username: "admin"}, nil, nil)
	r, err := connect.Open(ctx, repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := process.Collect(ctx, r, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []process.InstanceList{{InstanceID: "daemon-processes", Processes: []process.Process{{ID: "s1", Username: "admin"}}}}
	if !reflect.DeepEqual(c.Answered, want) || len(c.Unanswered) != 0 {
		t.Fatalf("Collect = %+v, want %+v answered", c, want)
	}
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := process.Collect(ctx, r, 0); err != nil || len(c.Answered)+len(c.Unanswered) != 0 {
		t.Fatalf("Collect after Close = %+v, %v; want no instance asked", c, err)
	}
}
