package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/internal/workerid"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// backend opens clients on one namespace of a registry.
type backend struct {
	ns     string
	open   func(t *testing.T) registry.Repository
	expire func(t *testing.T, s registry.Session) // a registry-side expiry
	dump   func(t *testing.T, key string) string  // the value as the registry's own CLI shows it
}

func etcdBackend(t *testing.T) backend {
	srv := etcdtest.New(t)
	ns := srv.Namespace(t, "sk_cluster_")
	return backend{
		ns:     ns,
		open:   func(t *testing.T) registry.Repository { return srv.Open(t, ns) },
		expire: func(t *testing.T, s registry.Session) { srv.ExpireSession(t, s) },
		dump: func(t *testing.T, key string) string {
			out, err := exec.Command("etcdctl", "--endpoints", srv.Endpoints[0], "get", ns+key, "--print-value-only").CombinedOutput()
			if err != nil {
				t.Fatalf("etcdctl get %s: %v %s", ns+key, err, out)
			}
			return strings.TrimRight(string(out), "\n")
		},
	}
}

func zookeeperBackend(t *testing.T) backend {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_cluster_")
	return backend{
		ns:     ns,
		open:   func(t *testing.T) registry.Repository { return zs.Open(t, ns) },
		expire: func(t *testing.T, s registry.Session) { zs.ExpireSession(t, s) },
		dump: func(t *testing.T, key string) string {
			out, err := exec.Command("/usr/share/zookeeper/bin/zkCli.sh", "-server", zs.Servers[0], "get", "/"+ns+key).CombinedOutput()
			if err != nil {
				t.Fatalf("zkCli.sh get: %v %s", err, out)
			}
			// zkCli prints log lines, then the value, then nothing else.
			var lines []string
			for _, l := range strings.Split(string(out), "\n") {
				if l == "" || strings.Contains(l, "INFO") || strings.Contains(l, "WATCHER") || strings.Contains(l, "WatchedEvent") ||
					strings.HasPrefix(l, "Connecting") || strings.HasPrefix(l, "log4j") || strings.HasPrefix(l, "SLF4J") || strings.HasPrefix(l, "JLine") {
					continue
				}
				lines = append(lines, l)
			}
			return strings.Join(lines, "\n")
		},
	}
}

func memoryBackend(t *testing.T) backend {
	store := memory.New()
	return backend{
		open: func(t *testing.T) registry.Repository { r := store.Clone(); t.Cleanup(func() { r.Close() }); return r },
		expire: func(t *testing.T, s registry.Session) {
			if !memory.Expire(s) {
				t.Fatal("not a live memory session")
			}
		},
	}
}

func quietLogger() *slog.Logger {
	if os.Getenv("SHARDKEEPER_TEST_LOGS") != "" {
		return slog.Default()
	}
	return slog.New(slog.NewTextHandler(discard{}, nil))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func openNode(t *testing.T, r registry.Repository, cfg Config) *Node {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	if cfg.Reservation == 0 {
		cfg.Reservation = 600 * time.Millisecond
	}
	n, err := Open(testenv.Context(t), r, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	return n
}

func TestNodeMemory(t *testing.T)    { runNodeSuite(t, memoryBackend) }
func TestNodeEtcd(t *testing.T)      { runNodeSuite(t, etcdBackend) }
func TestNodeZooKeeper(t *testing.T) { runNodeSuite(t, zookeeperBackend) }

func runNodeSuite(t *testing.T, mk func(*testing.T) backend) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, backend)
	}{
		{"DistinctWorkerIDsAndMembership", testDistinctAndMembership},
		{"RestartGetsOldWorkerID", testRestart},
		{"ExpiredNodeNeverOverlapsSuccessor", testExpiry},
		{"GracefulClose", testGracefulClose},
		{"Layout", testLayout},
		{"CorruptMembershipValuesSkipped", testCorruptMembership},
		{"MembershipLoadedByOpen", testMembershipLoadedByOpen},
		{"OnSessionWritesAgainAfterLoss", testOnSession},
		{"OnlineAgainOnlyOnceCaughtUp", testCatchUp},
		{"OnlineAgainAfterCatchUpBound", testCatchUpBound},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, mk(t)) })
	}
}

func testDistinctAndMembership(t *testing.T, b backend) {
	const n = 6
	nodes := make([]*Node, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := openNode(t, b.open(t), Config{InstanceID: fmt.Sprintf("node-%d", i), Port: 3307 + i})
			mu.Lock()
			nodes[i] = node
			mu.Unlock()
		}()
	}
	wg.Wait()
	seen := map[int]string{}
	for _, node := range nodes {
		if other, dup := seen[node.WorkerID()]; dup {
			t.Fatalf("%s and %s both hold worker id %d", node.InstanceID(), other, node.WorkerID())
		}
		seen[node.WorkerID()] = node.InstanceID()
	}
	// Keys from all nodes are unique.
	keys := map[int64]bool{}
	for _, node := range nodes {
		ks, err := node.NextIDs(testenv.Context(t), 2000)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			if keys[k] {
				t.Fatalf("duplicate key %d", k)
			}
			keys[k] = true
			if int(snowflake.Decompose(k).WorkerID) != node.WorkerID() {
				t.Fatalf("key %d carries worker id %d, node holds %d", k, snowflake.Decompose(k).WorkerID, node.WorkerID())
			}
		}
	}
	// Every node sees every other, with status and worker id.
	testenv.Eventually(t, "full membership", func() bool {
		for _, node := range nodes {
			insts := node.Instances()
			if len(insts) != n {
				return false
			}
			for _, in := range insts {
				if in.Status != "OK" || in.WorkerID < 0 || seen[in.WorkerID] != in.ID || in.Type != TypeProxy || in.Host != "127.0.0.1" {
					return false
				}
			}
		}
		return true
	})
	// A leave is seen by the others.
	if err := nodes[0].Close(testenv.Context(t)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "leave seen", func() bool {
		for _, in := range nodes[1].Instances() {
			if in.ID == nodes[0].InstanceID() {
				return false
			}
		}
		return len(nodes[1].Instances()) == n-1
	})
}

// testMembershipLoadedByOpen: as soon as Open returns, with no wait for a
// watch, a node's Instances show every node already online and itself, each
// with its status and worker id, as upstream's nodes know their peers once
// they are up.
func testMembershipLoadedByOpen(t *testing.T, b backend) {
	const n = 3
	want := map[string]int{}
	for i := 0; i < n; i++ {
		node := openNode(t, b.open(t), Config{InstanceID: fmt.Sprintf("member-%d", i), Port: 3307 + i})
		want[node.InstanceID()] = node.WorkerID()
		insts := node.Instances()
		got := map[string]int{}
		for _, in := range insts {
			if in.Status != "OK" || in.Type != TypeProxy || (in.ID == node.InstanceID() && in.Port != 3307+i) {
				t.Fatalf("node %d right after Open: instance %+v, want status OK, a proxy, its own port", i, in)
			}
			got[in.ID] = in.WorkerID
		}
		if len(got) != len(want) {
			t.Fatalf("node %d right after Open sees %d instances %v, want %d: %v", i, len(got), got, len(want), want)
		}
		for id, wid := range want {
			if g, ok := got[id]; !ok || g != wid {
				t.Fatalf("node %d right after Open: instance %s has worker id %d (seen %v), want %d", i, id, g, ok, wid)
			}
		}
	}
}

func testRestart(t *testing.T, b backend) {
	a := openNode(t, b.open(t), Config{InstanceID: "stable-node"})
	for i := 0; i < 3; i++ {
		openNode(t, b.open(t), Config{InstanceID: fmt.Sprintf("other-%d", i)})
	}
	id := a.WorkerID()
	k1, err := a.NextID(testenv.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(testenv.Context(t)); err != nil {
		t.Fatal(err)
	}
	a2 := openNode(t, b.open(t), Config{InstanceID: "stable-node"})
	if a2.WorkerID() != id {
		t.Fatalf("restarted node got worker id %d, want its old %d", a2.WorkerID(), id)
	}
	k2, err := a2.NextID(testenv.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if k2 <= k1 {
		t.Fatalf("key after restart %d <= key before %d", k2, k1)
	}
}

// fillExcept reserves every worker id but keep with persistent keys.
func fillExcept(t *testing.T, r registry.Repository, keep ...int) {
	skip := map[int]bool{}
	for _, k := range keep {
		skip[k] = true
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for id := 0; id <= paths.MaxWorkerID; id++ {
		if skip[id] {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			key, _ := paths.Reservation(id)
			if _, err := r.Put(testenv.Context(t), key, []byte("filler")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

func testExpiry(t *testing.T, b backend) {
	r := b.open(t)
	fillExcept(t, r, 11)
	// A reaches the registry through a fault injector, to be partitioned.
	ra := fault.Wrap(b.open(t), nil)
	a := openNode(t, ra, Config{InstanceID: "zombie", Reservation: 900 * time.Millisecond})
	if a.WorkerID() != 11 {
		t.Fatalf("A holds %d, want the only free id 11", a.WorkerID())
	}
	// A issues keys continuously while the registry expires its session.
	var mu sync.Mutex
	var aKeys []int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			k, err := a.NextID(c)
			cancel()
			if err == nil {
				mu.Lock()
				aKeys = append(aKeys, k)
				mu.Unlock()
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	// A is cut off from the registry, which then expires A's session: A
	// cannot renew, re-acquire or even learn of it (a zombie).
	ra.SetPlan(func(op, key string) fault.Action {
		return fault.Action{Err: fmt.Errorf("%w: partitioned (test)", registry.ErrUnavailable)}
	})
	b.expire(t, a.current.Load().sess.(*fault.Session).Unwrap())
	var bn *Node
	testenv.Eventually(t, "successor to take the expired id", func() bool {
		n, err := Open(testenv.Context(t), b.open(t), Config{InstanceID: "successor", Logger: quietLogger(), Reservation: 900 * time.Millisecond})
		if err != nil {
			return false
		}
		bn = n
		return true
	})
	bKeys, err := bn.NextIDs(testenv.Context(t), 5000)
	if err != nil {
		t.Fatal(err)
	}
	floor := bn.current.Load().h.Floor
	mu.Lock()
	var maxA int64
	for _, k := range aKeys {
		if p := snowflake.Decompose(k); p.WorkerID == 11 {
			maxA = max(maxA, p.Millis+snowflake.DefaultEpochMillis)
		}
	}
	countA := len(aKeys)
	mu.Unlock()
	minB := snowflake.Decompose(bKeys[0]).Millis + snowflake.DefaultEpochMillis
	if countA == 0 || floor <= 0 || maxA > floor || minB <= floor {
		t.Fatalf("overlap: A issued %d keys up to %d, successor floor %d, successor's first stamp %d (unix ms)", countA, maxA, floor, minB)
	}
	t.Logf("A issued %d keys up to %d; successor floor %d, first stamp %d (unix ms)", countA, maxA, floor, minB)

	// The partition heals; when the successor leaves, A re-acquires its
	// old id and goes on above everything the successor issued.
	ra.SetPlan(nil)
	lastB := snowflake.Decompose(bKeys[len(bKeys)-1]).Millis
	if err := bn.Close(testenv.Context(t)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "A to re-acquire", func() bool { return a.Stats().Acquisitions >= 2 && a.WorkerID() == 11 })
	close(stop)
	<-done
	k, err := a.NextID(testenv.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if snowflake.Decompose(k).Millis <= lastB {
		t.Fatalf("A's key after re-acquiring is stamped %d, not above the successor's last %d", snowflake.Decompose(k).Millis, lastB)
	}
	if s := a.Stats(); s.Losses < 1 || s.Acquisitions < 2 {
		t.Fatalf("stats = %+v, want a loss and a re-acquisition", s)
	}
}

// testCatchUp: after a lost session the node is not listed online again
// (nor issues keys) until its SetCatchUp function returns: a node whose
// metadata lags is not counted online while it catches up.
func testCatchUp(t *testing.T, b backend) {
	r := b.open(t)
	n := openNode(t, b.open(t), Config{InstanceID: "lagging", CatchUpTimeout: time.Minute})
	ctx := testenv.Context(t)
	online, _ := paths.Online(TypeProxy, "lagging")
	release := make(chan struct{})
	var called atomic.Int32
	n.SetCatchUp(func(ctx context.Context) error {
		called.Add(1)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if called.Load() != 0 {
		t.Fatal("SetCatchUp called the function at once; want it only after a lost session")
	}
	first := n.Session()
	b.expire(t, first)
	testenv.Eventually(t, "the re-acquisition to wait for the catch-up", func() bool { return called.Load() == 1 })
	// Long enough for a registration that does not wait to show.
	time.Sleep(300 * time.Millisecond)
	if kv, err := r.Get(ctx, online); err == nil {
		t.Fatalf("online while the metadata catches up: %s = %q; want it absent until the catch-up returns", online, kv.Value)
	} else if !errors.Is(err, registry.ErrNotFound) {
		t.Fatal(err)
	}
	if n.WorkerID() >= 0 {
		t.Fatalf("issuing on worker %d while the metadata catches up", n.WorkerID())
	}
	close(release)
	testenv.Eventually(t, "the node online again", func() bool {
		_, err := r.Get(ctx, online)
		return err == nil && n.WorkerID() >= 0 && n.Session() != first
	})
}

// testCatchUpBound: a catch-up that never returns delays the node's
// registration by CatchUpTimeout, not for good.
func testCatchUpBound(t *testing.T, b backend) {
	r := b.open(t)
	const bound = 400 * time.Millisecond
	n := openNode(t, b.open(t), Config{InstanceID: "stuck", CatchUpTimeout: bound})
	ctx := testenv.Context(t)
	online, _ := paths.Online(TypeProxy, "stuck")
	var calledAt atomic.Int64
	n.SetCatchUp(func(ctx context.Context) error {
		calledAt.Store(time.Now().UnixNano())
		<-ctx.Done()
		return fmt.Errorf("metadata: not caught up with the registry: databases [db]: %w", ctx.Err())
	})
	first := n.Session()
	b.expire(t, first)
	testenv.Eventually(t, "the node online again", func() bool {
		_, err := r.Get(ctx, online)
		return err == nil && n.WorkerID() >= 0 && n.Session() != first
	})
	if calledAt.Load() == 0 {
		t.Fatal("the catch-up was not called")
	}
	if waited := time.Since(time.Unix(0, calledAt.Load())); waited < bound {
		t.Fatalf("online %v after the catch-up started; want at least its bound %v", waited, bound)
	}
}

// testOnSession: what another part writes through OnSession lives in the
// node's session, goes with it when the registry expires it, and is
// written again in the next session before the node issues keys.
func testOnSession(t *testing.T, b backend) {
	r := b.open(t)
	n := openNode(t, b.open(t), Config{InstanceID: "hooked"})
	ctx := testenv.Context(t)
	const key = "/nodes/hooked_part"
	var calls atomic.Int32
	var issuingAtCall atomic.Bool
	remove, err := n.OnSession(ctx, func(ctx context.Context, sess registry.Session) error {
		if calls.Add(1) > 1 {
			issuingAtCall.Store(n.WorkerID() >= 0)
		}
		return sess.PutEphemeral(ctx, key, []byte(sess.ID()))
	})
	if err != nil {
		t.Fatal(err)
	}
	first := n.Session()
	if kv, err := r.Get(ctx, key); err != nil || string(kv.Value) != first.ID() || calls.Load() != 1 {
		t.Fatalf("after OnSession: %s = %v, %v after %d calls; want the node's session %s after 1", key, kv, err, calls.Load(), first.ID())
	}
	b.expire(t, first)
	testenv.Eventually(t, "the node to hold a new session", func() bool {
		s := n.Session()
		return s != nil && s != first && n.WorkerID() >= 0
	})
	second := n.Session()
	if kv, err := r.Get(ctx, key); err != nil || string(kv.Value) != second.ID() || calls.Load() != 2 {
		t.Fatalf("after the loss: %s = %v, %v after %d calls; want the new session %s after 2", key, kv, err, calls.Load(), second.ID())
	}
	if issuingAtCall.Load() {
		t.Error("the hook ran while the node was issuing keys again; want it before")
	}
	remove()
	b.expire(t, second)
	testenv.Eventually(t, "the node to hold a third session", func() bool {
		s := n.Session()
		return s != nil && s != second && n.WorkerID() >= 0
	})
	if calls.Load() != 2 {
		t.Errorf("a removed hook ran: %d calls", calls.Load())
	}
	if _, err := r.Get(ctx, key); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("%s after its session expired and the hook was removed: %v, want not found", key, err)
	}
}

func testGracefulClose(t *testing.T, b backend) {
	r := b.open(t)
	n := openNode(t, b.open(t), Config{InstanceID: "leaver", Reservation: 3 * time.Second})
	id := n.WorkerID()
	ks, err := n.NextIDs(testenv.Context(t), 10)
	if err != nil {
		t.Fatal(err)
	}
	last := snowflake.Decompose(ks[len(ks)-1]).Millis + snowflake.DefaultEpochMillis
	if err := n.Close(testenv.Context(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := n.NextID(testenv.Context(t)); !errors.Is(err, ErrNotIssuing) {
		t.Fatalf("NextID after Close = %v", err)
	}
	online, _ := paths.Online(paths.Proxy, "leaver")
	status, _ := paths.Status("leaver")
	wid, _ := paths.WorkerID("leaver")
	res, _ := paths.Reservation(id)
	for _, k := range []string{online, status, wid, res} {
		if ok, err := registry.Exists(testenv.Context(t), r, k); err != nil || ok {
			t.Fatalf("%s still there after Close (%v)", k, err)
		}
	}
	fk, _ := paths.Fence(id)
	kv, err := r.Get(testenv.Context(t), fk)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kv.Value), fmt.Sprintf(`"reservedUntil":%d`, last)) {
		t.Fatalf("final fence %s, want reservedUntil %d (the last issued stamp)", kv.Value, last)
	}
}

func testLayout(t *testing.T, b backend) {
	n := openNode(t, b.open(t), Config{InstanceID: "8c7b2a3e-5d1f-4f6a-9c0e-2b7d8e9f0a1b", Host: "10.0.0.7", Port: 3307})
	if b.dump == nil {
		t.Skip("the memory backend has no command-line client")
	}
	id := n.WorkerID()
	online := b.dump(t, "/nodes/compute_nodes/online/proxy/8c7b2a3e-5d1f-4f6a-9c0e-2b7d8e9f0a1b")
	want := "attribute: 10.0.0.7@3307\ndatabaseName: \"\"\nversion: " + Version
	if online != want {
		t.Fatalf("online node = %q, want %q", online, want)
	}
	for key, want := range map[string]string{
		"/nodes/compute_nodes/status/8c7b2a3e-5d1f-4f6a-9c0e-2b7d8e9f0a1b":    "OK",
		"/nodes/compute_nodes/worker_id/8c7b2a3e-5d1f-4f6a-9c0e-2b7d8e9f0a1b": strconv.Itoa(id),
		"/reservation/worker_id/" + strconv.Itoa(id):                          "8c7b2a3e-5d1f-4f6a-9c0e-2b7d8e9f0a1b",
	} {
		if got := b.dump(t, key); got != want {
			t.Fatalf("%s = %q, want %q", key, got, want)
		}
	}
	if got := b.dump(t, "/reservation/worker_id_fence/"+strconv.Itoa(id)); !strings.Contains(got, `"holder":"8c7b2a3e-5d1f-4f6a-9c0e-2b7d8e9f0a1b"`) {
		t.Fatalf("fence = %q", got)
	}
}

func testCorruptMembership(t *testing.T, b backend) {
	r := b.open(t)
	n := openNode(t, b.open(t), Config{InstanceID: "watcher"})
	for key, value := range map[string]string{
		"/nodes/compute_nodes/online/proxy/bad1": "attribute: [not, a, string",
		"/nodes/compute_nodes/status/bad2":       "MAYBE",
		"/nodes/compute_nodes/worker_id/bad3":    "4096",
	} {
		if _, err := r.Put(testenv.Context(t), key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "corrupt values reported", func() bool { return n.Stats().CorruptValues >= 3 })
	if _, err := r.Put(testenv.Context(t), "/nodes/compute_nodes/online/proxy/good", []byte("attribute: 1.2.3.4@5\ndatabaseName: ''\nversion: x\n")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "a good node after corrupt ones", func() bool {
		for _, in := range n.Instances() {
			if in.ID == "good" && in.Host == "1.2.3.4" && in.Port == 5 {
				return true
			}
		}
		return false
	})
	if _, err := n.NextID(testenv.Context(t)); err != nil {
		t.Fatalf("node stopped working after corrupt values: %v", err)
	}
}

func TestConfiguredWorkerIDIsIgnoredWithWarning(t *testing.T) {
	var logs testenv.SyncBuffer
	cfg := Config{InstanceID: "w", Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	cfg.Snowflake = snowflake.DefaultConfig()
	cfg.Snowflake.WorkerID = 5
	r := memory.New()
	fillExcept(t, r, 9)
	n := openNode(t, r, cfg)
	if n.WorkerID() != 9 {
		t.Fatalf("worker id %d, want the assigned 9", n.WorkerID())
	}
	want := "It is unnecessary to configure worker-id in cluster mode, system assigned worker-id was 9"
	if !strings.Contains(logs.String(), want) {
		t.Fatalf("logs lack %q:\n%s", want, logs.String())
	}
}

func TestCloseAfterLosingTheWorkerID(t *testing.T) {
	store := memory.New()
	fillExcept(t, store, 3)
	ra := fault.Wrap(store.Clone(), nil)
	a := openNode(t, ra, Config{InstanceID: "loser"})
	ra.SetPlan(func(op, key string) fault.Action {
		return fault.Action{Err: fmt.Errorf("%w: partitioned (test)", registry.ErrUnavailable)}
	})
	memory.Expire(a.current.Load().sess.(*fault.Session).Unwrap())
	testenv.Eventually(t, "the loss to be noticed", func() bool { return a.Stats().Losses >= 1 && a.WorkerID() == -1 })
	refused := a.Stats().Refused
	if _, err := a.NextID(testenv.Context(t)); !errors.Is(err, ErrNotIssuing) {
		t.Fatalf("NextID while not holding = %v", err)
	}
	if _, err := a.NextIDs(testenv.Context(t), 3); !errors.Is(err, ErrNotIssuing) {
		t.Fatalf("NextIDs while not holding = %v", err)
	}
	if got := a.Stats().Refused - refused; got != 2 {
		t.Fatalf("Stats().Refused grew by %d for two refused requests, want 2 (the metric the refused-keys alert reads)", got)
	}
	if err := a.Close(testenv.Context(t)); err != nil {
		t.Fatalf("Close while not holding a worker id: %v", err)
	}
}

// TestEvents checks the OnEvent trail a harness relies on: acquired, then
// reservations that only grow, a loss when the session expires, a new
// acquisition with a higher epoch above the old reservation, and the
// release at Close.
func TestEvents(t *testing.T) {
	store := memory.New()
	fillExcept(t, store, 7)
	var mu sync.Mutex
	var events []Event
	n := openNode(t, store, Config{InstanceID: "audited", OnEvent: func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})
	snapshot := func() []Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]Event(nil), events...)
	}
	testenv.Eventually(t, "a renewal", func() bool { return len(snapshot()) >= 3 })
	memory.Expire(n.current.Load().sess)
	// EventReserved of the new epoch comes before the node registers
	// online and issues: wait until it holds the worker id again.
	testenv.Eventually(t, "the re-acquisition", func() bool {
		s := snapshot()
		return s[len(s)-1].Kind == EventReserved && s[len(s)-1].Epoch > s[0].Epoch && n.WorkerID() == 7
	})
	if err := n.Close(testenv.Context(t)); err != nil {
		t.Fatal(err)
	}
	got := snapshot()
	if got[0].Kind != EventAcquired || got[0].WorkerID != 7 || got[1].Kind != EventReserved {
		t.Fatalf("first events = %+v, want acquired then reserved on worker 7", got[:2])
	}
	var lastUntil, lostUntil int64
	lost := false
	for i, e := range got {
		switch e.Kind {
		case EventReserved:
			if e.ReservedUntilMs <= lastUntil && e.Epoch == got[0].Epoch {
				t.Fatalf("event %d: reservation %d did not grow from %d", i, e.ReservedUntilMs, lastUntil)
			}
			lastUntil = e.ReservedUntilMs
		case EventLost:
			lost, lostUntil = true, lastUntil
			if e.Err == nil {
				t.Fatalf("event %d: lost without a reason", i)
			}
		case EventAcquired:
			if lost && e.FloorMs < lostUntil {
				t.Fatalf("event %d: new floor %d below the lost holder's reservation %d", i, e.FloorMs, lostUntil)
			}
		}
	}
	if !lost || got[len(got)-1].Kind != EventReleased {
		t.Fatalf("events = %+v, want a loss and a final release", got)
	}
}

// TestCloseDuringReacquisition closes a node whose re-acquisition has
// claimed a worker id and committed its first reservation but not yet
// registered online: Close releases that claim as it releases any holding.
// The fence goes back to the claim's floor (no key of the epoch was
// issued), the reservation is gone with the session, and the trail ends
// with EventReleased for the new epoch, not EventLost.
func TestCloseDuringReacquisition(t *testing.T) {
	store := memory.New()
	fillExcept(t, store, 7)
	r := fault.Wrap(store.Clone(), nil)
	var mu sync.Mutex
	var events []Event
	n := openNode(t, r, Config{InstanceID: "interrupted", OnEvent: func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})
	snapshot := func() []Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]Event(nil), events...)
	}
	first := n.current.Load().h.Epoch
	// The next registration waits until its context ends: Close cancels it.
	online, _ := paths.Online(TypeProxy, "interrupted")
	r.SetPlan(func(op, key string) fault.Action {
		if op == "put-ephemeral" && key == online {
			return fault.Action{Delay: time.Hour}
		}
		return fault.Action{}
	})
	memory.Expire(n.current.Load().sess.(*fault.Session).Unwrap())
	testenv.Eventually(t, "the re-acquisition's first reservation", func() bool {
		s := snapshot()
		return s[len(s)-1].Kind == EventReserved && s[len(s)-1].Epoch > first
	})
	claim := snapshot()[len(snapshot())-1]
	if n.WorkerID() != -1 {
		t.Fatalf("issuing on worker %d before registering online", n.WorkerID())
	}
	if err := n.Close(testenv.Context(t)); err != nil {
		t.Fatalf("Close during the re-acquisition: %v", err)
	}
	got := snapshot()
	if last := got[len(got)-1]; last.Kind != EventReleased || last.Epoch != claim.Epoch || last.Err != nil || last.ReservedUntilMs != claim.FloorMs {
		t.Fatalf("events = %+v; want the last to be a release of epoch %d down to its floor %d", got, claim.Epoch, claim.FloorMs)
	}
	ctx := testenv.Context(t)
	fk, _ := paths.Fence(7)
	kv, err := store.Get(ctx, fk)
	if err != nil {
		t.Fatal(err)
	}
	var f workerid.Fence
	if err := json.Unmarshal(kv.Value, &f); err != nil {
		t.Fatal(err)
	}
	if f.Epoch != claim.Epoch || f.ReservedUntil != claim.FloorMs {
		t.Fatalf("fence after Close = %+v; want epoch %d reserved until its floor %d (not the claim's reservation %d)",
			f, claim.Epoch, claim.FloorMs, claim.ReservedUntilMs)
	}
	res, _ := paths.Reservation(7)
	if _, err := store.Get(ctx, res); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("reservation of worker 7 after Close: %v, want it gone with the session", err)
	}
}

// TestMembershipFirstViewWhole checks that the first membership view a
// node publishes shows each instance whole: a disabled instance online
// with its status and worker id, never online alone with no worker id and
// the default status (its online node sorts before the others). The watch
// is held back, so the first view published is the one read.
func TestMembershipFirstViewWhole(t *testing.T) {
	store := memory.New()
	ctx := testenv.Context(t)
	sess, err := store.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	online, _ := paths.Online(TypeProxy, "other")
	status, _ := paths.Status("other")
	worker, _ := paths.WorkerID("other")
	for key, value := range map[string]string{online: string(encodeOnline(Config{Type: TypeProxy, Host: "10.0.0.1", Port: 3307})),
		status: "CIRCUIT_BREAK", worker: "5"} {
		if err := sess.PutEphemeral(ctx, key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	r := fault.Wrap(store.Clone(), func(op, key string) fault.Action {
		if op == "watch" {
			return fault.Action{Delay: time.Hour}
		}
		return fault.Action{}
	})
	m := newMembers(quietLogger())
	_, changed := m.view()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		known, err := m.load(runCtx, r)
		if err != nil {
			t.Error(err)
			return
		}
		m.run(runCtx, r, known)
	}()
	defer func() { stop(); <-done }()
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no membership view published")
	}
	list, _ := m.view()
	if len(list) != 1 || list[0].ID != "other" || list[0].WorkerID != 5 || list[0].Status != "CIRCUIT_BREAK" || list[0].Host != "10.0.0.1" {
		t.Fatalf("first view = %+v, want other whole: worker 5, CIRCUIT_BREAK, 10.0.0.1", list)
	}
}

// TestUnsafeIgnoreFloor shows what the floor prevents. The previous holder
// of the only free worker id reserved time up to ten minutes ahead of this
// node's clock (its clock ran ahead, or this one is behind). A node stamps
// no key at or below that floor: it waits for its clock to pass it. A node
// with UnsafeIgnoreFloor stamps keys from its own clock, at or below the
// floor, where the previous holder may have stamped the same keys.
func TestUnsafeIgnoreFloor(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("UnsafeIgnoreFloor=%v", ignore), func(t *testing.T) {
			store := memory.New()
			fillExcept(t, store, 5)
			floor := time.Now().Add(10 * time.Minute).UnixMilli()
			fk, _ := paths.Fence(5)
			prev, err := json.Marshal(workerid.Fence{Epoch: 4, Holder: "previous", ReservedUntil: floor})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.Put(testenv.Context(t), fk, prev); err != nil {
				t.Fatal(err)
			}
			n := openNode(t, store, Config{InstanceID: "next", UnsafeIgnoreFloor: ignore})
			if h := n.current.Load().h; h.WorkerID != 5 || h.Epoch != 5 || h.Floor != floor {
				t.Fatalf("holds worker %d epoch %d floor %d; want 5, 5, %d (the previous holder's reservation)",
					h.WorkerID, h.Epoch, h.Floor, floor)
			}
			c, cancel := context.WithTimeout(testenv.Context(t), 300*time.Millisecond)
			keys, err := n.NextIDs(c, 100)
			cancel()
			atOrBelow := 0
			for _, k := range keys {
				if snowflake.Decompose(k).Millis+snowflake.DefaultEpochMillis <= floor {
					atOrBelow++
				}
			}
			if !ignore {
				if len(keys) != 0 || !errors.Is(err, snowflake.ErrReservationExpired) {
					t.Fatalf("issued %d keys (%d at or below the floor), err %v; want none and ErrReservationExpired (waiting for the clock to pass the floor)",
						len(keys), atOrBelow, err)
				}
				return
			}
			if err != nil || len(keys) != 100 || atOrBelow != 100 {
				t.Fatalf("issued %d keys, %d of them at or below the floor, err %v; want 100, all at or below the floor",
					len(keys), atOrBelow, err)
			}
		})
	}
}

// TestHostileDuplicateInstanceID runs testDuplicateInstanceID on real
// etcd and ZooKeeper.
func TestHostileDuplicateInstanceID(t *testing.T) {
	t.Run("etcd", func(t *testing.T) { testDuplicateInstanceID(t, etcdBackend(t)) })
	t.Run("zookeeper", func(t *testing.T) { testDuplicateInstanceID(t, zookeeperBackend(t)) })
}

// testDuplicateInstanceID: a second live node with an instance id whose
// online node another session holds refuses to start, naming the id and
// the holder's address, and leaves the first node's worker id alone (two
// such nodes took worker ids from each other about 200 times each); a key
// left by a session that then expires (a killed node) is waited for.
func testDuplicateInstanceID(t *testing.T, b backend) {
	const ttl = 2 * time.Second
	a := openNode(t, b.open(t), Config{InstanceID: "twin", Host: "10.0.0.7", Port: 3307, SessionTTL: ttl})
	w := a.WorkerID()
	_, err := Open(testenv.Context(t), b.open(t), Config{InstanceID: "twin", Host: "10.0.0.8", SessionTTL: ttl,
		Reservation: 600 * time.Millisecond, Logger: quietLogger()})
	if !errors.Is(err, ErrInstanceIDInUse) || !strings.Contains(err.Error(), "twin") || !strings.Contains(err.Error(), "10.0.0.7@3307") {
		t.Fatalf("second Open with the same instance id: %v, want ErrInstanceIDInUse naming twin and 10.0.0.7@3307", err)
	}
	if a.WorkerID() != w || !a.Ready() {
		t.Fatalf("first node: worker id %d ready %v, want %d and ready", a.WorkerID(), a.Ready(), w)
	}
	if _, err := a.NextID(testenv.Context(t)); err != nil {
		t.Fatal(err)
	}

	// A key whose session the registry expires a moment later.
	r := b.open(t)
	sess, err := r.NewSession(testenv.Context(t), registry.SessionOptions{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := paths.Online(paths.Proxy, "crashed")
	if err := sess.PutEphemeral(testenv.Context(t), key, []byte("attribute: 10.0.0.9@3307\n")); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(500 * time.Millisecond); b.expire(t, sess) }()
	openNode(t, b.open(t), Config{InstanceID: "crashed", SessionTTL: ttl})
}
