package ensemble

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/tools/chaos/chaostest"
	"github.com/shardkeeper/shardkeeper/tools/chaos/netns"
)

// kv writes through some members and reads through one, with a fresh
// client each time so the member used is the one named.
type kv interface {
	put(ctx context.Context, endpoints []string, key, value string) error
	get(ctx context.Context, endpoint, key string) (string, error)
}

type etcdKV struct{}

func (etcdKV) client(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
}

func (e etcdKV) put(ctx context.Context, endpoints []string, key, value string) error {
	c, err := e.client(endpoints)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Put(ctx, "/chaostest/"+key, value)
	return err
}

func (e etcdKV) get(ctx context.Context, endpoint, key string) (string, error) {
	c, err := e.client([]string{endpoint})
	if err != nil {
		return "", err
	}
	defer c.Close()
	resp, err := c.Get(ctx, "/chaostest/"+key) // linearizable
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) != 1 {
		return "", errors.New("not found")
	}
	return string(resp.Kvs[0].Value), nil
}

type zkKV struct{}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

func (zkKV) conn(ctx context.Context, servers []string) (*zk.Conn, error) {
	c, events, err := zk.Connect(servers, 4*time.Second, zk.WithLogger(nopLogger{}))
	if err != nil {
		return nil, err
	}
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c, nil
			}
		case <-ctx.Done():
			c.Close()
			return nil, ctx.Err()
		}
	}
}

func (z zkKV) put(ctx context.Context, servers []string, key, value string) error {
	c, err := z.conn(ctx, servers)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Create("/chaostest-"+key, []byte(value), 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = c.Set("/chaostest-"+key, []byte(value), -1)
	}
	return err
}

func (z zkKV) get(ctx context.Context, server, key string) (string, error) {
	c, err := z.conn(ctx, []string{server})
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := c.Sync("/chaostest-" + key); err != nil {
		return "", err
	}
	data, _, err := c.Get("/chaostest-" + key)
	return string(data), err
}

type startFunc func(ctx context.Context, hosts []*netns.Host, dir string, logs io.Writer, opts ...Option) (Ensemble, error)

func TestEnsembleEtcd(t *testing.T) {
	chaostest.RequireTools(t, "etcd")
	testEnsemble(t, "etcd", []string{"e1", "e2", "e3"}, StartEtcd, etcdKV{})
}

func TestEnsembleZooKeeper(t *testing.T) {
	chaostest.RequireTools(t, "java", "/usr/share/java/zookeeper.jar")
	testEnsemble(t, "zookeeper", []string{"z1", "z2", "z3"}, StartZooKeeper, zkKV{})
}

func testEnsemble(t *testing.T, kind string, names []string, start startFunc, store kv) {
	_, hosts := chaostest.Network(t, names...)
	logs := &testenv.SyncBuffer{}
	var out io.Writer = logs
	if path := os.Getenv("CHAOS_SERVER_LOGS"); path != "" { // keep the servers' output for a look
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		out = io.MultiWriter(logs, f)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last server output:\n%s", logs.LastLines(80))
		}
	})
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	began := time.Now()
	ens, err := start(ctx, hosts, dir, out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ens.Close() })
	t.Logf("%s: 3 members serving after %v", ens.Version(), time.Since(began).Round(time.Millisecond))
	if ens.Kind() != kind || !strings.HasPrefix(ens.Version(), kind+" 3.") {
		t.Errorf("Kind %q, Version %q", ens.Kind(), ens.Version())
	}
	eps := ens.Endpoints()
	if len(eps) != 3 || !strings.HasPrefix(eps[0], hosts[0].Addr.String()+":") {
		t.Fatalf("Endpoints %v", eps)
	}
	others := func(i int) []string {
		var r []string
		for j, ep := range eps {
			if j != i {
				r = append(r, ep)
			}
		}
		return r
	}
	opCtx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 10*time.Second) }
	mustPut := func(endpoints []string, key, value string) {
		t.Helper()
		c, cancel := opCtx()
		defer cancel()
		if err := store.put(c, endpoints, key, value); err != nil {
			t.Fatalf("put %s via %v: %v", key, endpoints, err)
		}
	}
	mustGet := func(endpoint, key, want string) {
		t.Helper()
		c, cancel := opCtx()
		defer cancel()
		if got, err := store.get(c, endpoint, key); err != nil || got != want {
			t.Fatalf("get %s via %s = %q, %v; want %q", key, endpoint, got, err, want)
		}
	}
	// waitLeader polls until a leader other than not (-1: any) is found.
	waitLeader := func(not int) int {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			c, cancel := context.WithTimeout(ctx, 2*time.Second)
			l, err := ens.Leader(c)
			cancel()
			if err == nil && l != not {
				return l
			}
			if err != nil && !errors.Is(err, ErrNoLeader) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Leader: %v", err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("no leader other than %d after 30 s (last %d, %v)", not, l, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Write through one member, read through another.
	mustPut(eps[:1], "a", "1")
	mustGet(eps[1], "a", "1")

	// Kill the leader: a new one is elected and writes go on.
	leader := waitLeader(-1)
	killed := time.Now()
	if err := ens.Kill(leader); err != nil {
		t.Fatal(err)
	}
	if ens.Running(leader) || ens.PID(leader) != 0 {
		t.Errorf("member %d still running after Kill", leader)
	}
	next := waitLeader(leader)
	elected := time.Since(killed)
	mustPut(others(leader), "b", "2")
	t.Logf("leader %s killed: %s elected after %v, write accepted after %v",
		hosts[leader].Name, hosts[next].Name, elected.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))

	// Restart it: it catches up.
	restarted := time.Now()
	if err := ens.Start(leader); err != nil {
		t.Fatal(err)
	}
	t.Logf("member %s restarted and serving after %v", hosts[leader].Name, time.Since(restarted).Round(time.Millisecond))
	mustGet(eps[leader], "b", "2")

	// Pause a follower: the others go on; after Resume it catches up.
	leader = waitLeader(-1)
	follower := (leader + 1) % 3
	if err := ens.Pause(follower); err != nil {
		t.Fatal(err)
	}
	mustPut(others(follower), "c", "3")
	if l := waitLeader(-1); l == follower {
		t.Errorf("paused member %d reported as leader", follower)
	}
	if err := ens.Resume(follower); err != nil {
		t.Fatal(err)
	}
	mustGet(eps[follower], "c", "3")

	// Pause the leader: the others elect a new one.
	paused := time.Now()
	if err := ens.Pause(leader); err != nil {
		t.Fatal(err)
	}
	next = waitLeader(leader)
	t.Logf("leader %s paused: %s elected after %v", hosts[leader].Name, hosts[next].Name, time.Since(paused).Round(time.Millisecond))
	mustPut(others(leader), "d", "4")
	if err := ens.Resume(leader); err != nil {
		t.Fatal(err)
	}
	mustGet(eps[leader], "d", "4")

	// Any order: Kill of a paused member, Resume and Pause of a dead one.
	x := (waitLeader(-1) + 1) % 3
	for _, step := range []struct {
		name string
		f    func(int) error
	}{{"Pause", ens.Pause}, {"Pause", ens.Pause}, {"Kill", ens.Kill}, {"Resume", ens.Resume},
		{"Pause", ens.Pause}, {"Kill", ens.Kill}, {"Start", ens.Start}, {"Start", ens.Start}, {"Resume", ens.Resume}} {
		if err := step.f(x); err != nil {
			t.Fatalf("%s(%d): %v", step.name, x, err)
		}
	}
	if !ens.Running(x) {
		t.Errorf("member %d not running after Start", x)
	}
	mustGet(eps[x], "d", "4")
	if err := ens.Kill(7); err == nil {
		t.Error("Kill(7) succeeded")
	}

	// Close kills every member and removes the data.
	var pids []int
	for i := range 3 {
		pids = append(pids, ens.PID(i))
	}
	if err := ens.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d after Close: %v, want ESRCH", pid, err)
		}
	}
	for _, h := range hosts {
		if _, err := os.Stat(filepath.Join(dir, h.Name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("data of %s after Close: %v", h.Name, err)
		}
	}
	if err := ens.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := ens.Start(0); err == nil {
		t.Error("Start after Close succeeded")
	}
}
