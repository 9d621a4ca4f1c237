package zookeeper_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// dialRecorder is a Config.Dialer that keeps every connection it opens and
// counts the bytes they read and the requests they send by opcode; a
// request whose xid and opcode are unknown is sent with opcode 127, which
// no server knows.
type dialRecorder struct {
	zs      *zktest.Server
	read    atomic.Int64
	ops     [128]atomic.Int64 // requests sent, by opcode (as asked)
	unknown []byte
	sent    atomic.Int64 // requests sent with opcode 127
	refuse  atomic.Bool  // dial no more
	mu      sync.Mutex
	conns   []net.Conn
}

func (d *dialRecorder) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	if d.refuse.Load() {
		return nil, errors.New("dialing refused by the test")
	}
	c, err := d.zs.Dial(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	rc := &recordedConn{Conn: c, d: d}
	d.mu.Lock()
	d.conns = append(d.conns, rc)
	d.mu.Unlock()
	return rc, nil
}

// requests returns how many requests its connections sent, of any opcode.
func (d *dialRecorder) requests() int64 {
	var n int64
	for i := range d.ops {
		n += d.ops[i].Load()
	}
	return n
}

// dialed returns the connections opened so far.
func (d *dialRecorder) dialed() []net.Conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.conns)
}

type recordedConn struct {
	net.Conn
	d *dialRecorder
}

func (c *recordedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.d.read.Add(int64(n))
	return n, err
}

func (c *recordedConn) Write(p []byte) (int, error) {
	// A packet's length, then its xid and opcode (one packet per Write).
	if len(p) >= 12 {
		if op := binary.BigEndian.Uint32(p[8:]); op < uint32(len(c.d.ops)) {
			c.d.ops[op].Add(1)
		}
	}
	if c.d.unknown != nil && len(p) >= 4+len(c.d.unknown) && bytes.Equal(p[4:4+len(c.d.unknown)], c.d.unknown) {
		p = slices.Clone(p)
		p[4+len(c.d.unknown)-1] = 127
		c.d.sent.Add(1)
	}
	return c.Conn.Write(p)
}

// addWatchRequest is the start of an addWatch request with xid 1, as the
// recursive watch sends it: xid, opcode 106.
var addWatchRequest = []byte{0, 0, 0, 1, 0, 0, 0, 106}

// versions are the versions of the keys of each state the tests build,
// to catch an event applied twice.
var versions sync.Map // map[string]registry.Version, by state's address and key

// apply applies ev to state, failing the test when the watch repeats a
// put (same key and version), deletes a key it does not hold, or puts a
// key before its parent.
func apply(t *testing.T, state map[string]string, ev registry.Event) {
	t.Helper()
	id := fmt.Sprintf("%p%s", state, ev.KV.Key)
	if ev.Type == registry.EventDelete {
		if _, ok := state[ev.KV.Key]; !ok {
			t.Fatalf("delete of %s, which the watch did not report", ev.KV.Key)
		}
		delete(state, ev.KV.Key)
		versions.Delete(id)
		return
	}
	if v, ok := versions.Load(id); ok && v.(registry.Version) == ev.KV.Version {
		t.Fatalf("put of %s at version %d twice", ev.KV.Key, ev.KV.Version)
	}
	if parent := ev.KV.Key[:strings.LastIndexByte(ev.KV.Key, '/')]; parent != "" {
		if _, ok := state[parent]; !ok {
			t.Fatalf("put of %s before its parent", ev.KV.Key)
		}
	}
	state[ev.KV.Key] = string(ev.KV.Value)
	versions.Store(id, ev.KV.Version)
}

// putAndFollow puts key = value through r and applies the watch's events
// to state until they report it.
func putAndFollow(t *testing.T, r registry.Repository, ch <-chan registry.Event, state map[string]string, key, value string) {
	t.Helper()
	if _, err := r.Put(testenv.Context(t), key, []byte(value)); err != nil {
		t.Fatal(err)
	}
	follow(t, ch, state, key, value)
}

// stateOf is the state a Watch's initial keys give, checked as apply
// checks events.
func stateOf(t *testing.T, initial []registry.KV) map[string]string {
	t.Helper()
	state := map[string]string{}
	for _, kv := range initial {
		apply(t, state, registry.Event{Type: registry.EventPut, KV: kv})
	}
	return state
}

// openDialed opens a Repo on namespace ns of zs whose connections d dials;
// it is closed when the test ends.
func openDialed(t *testing.T, zs *zktest.Server, ns string, d *dialRecorder) *zookeeper.Repo {
	t.Helper()
	cfg := zs.Config(ns)
	cfg.Dialer = d.dial
	r, err := zookeeper.Open(testenv.Context(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// applyReceived applies ev, received from a watch's channel (ok false:
// the channel is closed), to state; a closed channel or a failed watch
// fails the test.
func applyReceived(t *testing.T, state map[string]string, ev registry.Event, ok bool) {
	t.Helper()
	if !ok {
		t.Fatal("watch channel closed")
	}
	if ev.Err != nil {
		t.Fatal(ev.Err)
	}
	apply(t, state, ev)
}

// follow applies the watch's events to state until key has value want.
func follow(t *testing.T, ch <-chan registry.Event, state map[string]string, key, want string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for state[key] != want {
		select {
		case ev, ok := <-ch:
			applyReceived(t, state, ev, ok)
		case <-timeout:
			t.Fatalf("no event for %s = %q within a minute", key, want)
		}
	}
}

// listed returns what a List of prefix reads, with the prefix's znode
// (which a Watch reports too).
func listed(t *testing.T, r registry.Repository, prefix string) map[string]string {
	t.Helper()
	kvs, err := r.List(testenv.Context(t), prefix)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{prefix: ""}
	for _, kv := range kvs {
		want[kv.Key] = string(kv.Value)
	}
	return want
}

// converge applies the watch's events to state until it is what a List of
// prefix reads (nothing writes any more), for at most 30 s.
func converge(t *testing.T, ch <-chan registry.Event, r registry.Repository, prefix string, state map[string]string) {
	t.Helper()
	end := time.After(30 * time.Second)
	for !maps.Equal(listed(t, r, prefix), state) {
		idle := time.After(200 * time.Millisecond)
	drain:
		for {
			select {
			case ev, ok := <-ch:
				applyReceived(t, state, ev, ok)
			case <-idle:
				break drain
			case <-end:
				sameAsList(t, r, prefix, state)
				return
			}
		}
	}
}

// sameAsList fails the test unless state is what a List of prefix reads.
func sameAsList(t *testing.T, r registry.Repository, prefix string, state map[string]string) {
	t.Helper()
	want := listed(t, r, prefix)
	if !maps.Equal(want, state) {
		for k, v := range want {
			if got, ok := state[k]; !ok || got != v {
				t.Errorf("%s: watch state %q (present %v), server %q", k, got, ok, v)
			}
		}
		for k, v := range state {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: watch state %q, not on the server", k, v)
			}
		}
		t.FailNow()
	}
}

// waitRecursive waits until r holds want recursive watches open.
func waitRecursive(t *testing.T, r *zookeeper.Repo, want int64) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); zookeeper.RecursiveWatches(r) != want; {
		if time.Now().After(end) {
			t.Fatalf("%d recursive watches open, want %d", zookeeper.RecursiveWatches(r), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// With the recursive watch, a new child of a parent of 2,000 children is
// reported without listing the parent again (a few hundred bytes read, not
// the 2,000 names); with child watches only, the parent is listed.
func TestWatchNewChildWithoutListingParent(t *testing.T) {
	const tables = 2000
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_recnew_")
	ctx := testenv.Context(t)
	w := zs.Open(t, ns)
	sess := writeTables(t, w, "/c", tables, 100)
	for _, recursive := range []bool{true, false} {
		t.Run(fmt.Sprintf("recursive=%v", recursive), func(t *testing.T) {
			d := &dialRecorder{zs: zs}
			cfg := zs.Config(ns)
			cfg.Dialer = d.dial
			r, err := zookeeper.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			zookeeper.SetRecursiveWatch(r, recursive)
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			initial, ch, err := r.Watch(wctx, "/c")
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int64{true: 1, false: 0}[recursive]; zookeeper.RecursiveWatches(r) != want {
				t.Fatalf("%d recursive watches, want %d", zookeeper.RecursiveWatches(r), want)
			}
			state := stateOf(t, initial)
			sameAsList(t, w, "/c", state)
			for i := range 3 {
				before := d.read.Load()
				table := tables + i + map[bool]int{true: 0, false: 10}[recursive]
				if _, err := sess.Commit(ctx, versionedTxn("/c", table, 1)); err != nil {
					t.Fatal(err)
				}
				follow(t, ch, state, fmt.Sprintf("/c/t_%05d/active_version", table), "0")
				follow(t, ch, state, fmt.Sprintf("/c/t_%05d/versions/0", table), fmt.Sprintf("table %d", table))
				read := d.read.Load() - before
				t.Logf("table %d: the watch's client read %d bytes", table, read)
				// Listing /c reads its 2,000+ names (7+ bytes each).
				if listed := read > 10*tables; listed == recursive {
					t.Fatalf("a new table read %d bytes (recursive watch %v): the parent was listed %v, want %v", read, recursive, listed, !recursive)
				}
			}
			sameAsList(t, w, "/c", state)
			cancel()
			waitRecursive(t, r, 0)
		})
	}
}

// churn runs two writers that create, set and delete znodes at depths 1 to
// 3 under /t for steps steps each, calling mid (if any) half way.
func churn(t *testing.T, zs *zktest.Server, ns string, steps int, mid func()) {
	t.Helper()
	ctx := testenv.Context(t)
	var wg sync.WaitGroup
	for i := range 2 {
		writer := zs.Open(t, ns)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			for s := range steps {
				if i == 0 && s == steps/2 && mid != nil {
					mid()
				}
				depth := 1 + rng.IntN(3)
				k := "/t"
				for range depth {
					k += fmt.Sprintf("/%c", 'a'+rune(rng.IntN(3)))
				}
				var err error
				switch rng.IntN(6) {
				case 0:
					err = writer.Delete(ctx, k)
				case 1:
					_, err = writer.Put(ctx, k+fmt.Sprintf("/n%d", s), nil)
				default:
					_, err = writer.Put(ctx, k, []byte(fmt.Sprintf("%d.%d", i, s)))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A Watch follows random creates, sets and deletes of two writers at
// depths 1 to 3 and ends with the server's tree, with the recursive watch
// and with child watches only.
func TestWatchRandomChurn(t *testing.T) {
	for _, recursive := range []bool{true, false} {
		t.Run(fmt.Sprintf("recursive=%v", recursive), func(t *testing.T) {
			zs := zktest.New(t)
			ns := zs.Namespace(t, "sk_recchurn_")
			r := zs.Open(t, ns)
			zookeeper.SetRecursiveWatch(r, recursive)
			ctx := testenv.Context(t)
			if _, err := r.Put(ctx, "/t/a/a", []byte("seed")); err != nil {
				t.Fatal(err)
			}
			initial, ch, err := r.Watch(ctx, "/t")
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int64{true: 1, false: 0}[recursive]; zookeeper.RecursiveWatches(r) != want {
				t.Fatalf("%d recursive watches, want %d", zookeeper.RecursiveWatches(r), want)
			}
			state := stateOf(t, initial)
			churn(t, zs, ns, 300, nil)
			putAndFollow(t, r, ch, state, "/t/done", "1")
			converge(t, ch, r, "/t", state)
		})
	}
}

// When the recursive watch's connection is lost mid-stream, the Watch
// falls back to child watches (closing the recursive session) and still
// ends with the server's tree; it registers a recursive watch again once
// it can dial, and ends with the server's tree after more churn.
func TestWatchRecursiveConnectionLost(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_reclost_")
	d := &dialRecorder{zs: zs}
	ctx := testenv.Context(t)
	r := openDialed(t, zs, ns, d)
	if _, err := r.Put(ctx, "/t/a/a", []byte("seed")); err != nil {
		t.Fatal(err)
	}
	opened := len(d.dialed())
	initial, ch, err := r.Watch(ctx, "/t")
	if err != nil {
		t.Fatal(err)
	}
	conns := d.dialed()
	if len(conns) != opened+1 || zookeeper.RecursiveWatches(r) != 1 {
		t.Fatalf("Watch dialed %d connections and holds %d recursive watches, want 1 and 1", len(conns)-opened, zookeeper.RecursiveWatches(r))
	}
	state := stateOf(t, initial)
	// Lost, and not registered again while dialing fails.
	churn(t, zs, ns, 200, func() {
		d.refuse.Store(true)
		conns[opened].Close()
	})
	putAndFollow(t, r, ch, state, "/t/done", "1")
	waitRecursive(t, r, 0)
	converge(t, ch, r, "/t", state)
	// Child watches report what is created meanwhile.
	putAndFollow(t, r, ch, state, "/t/x/y/z", "after")
	converge(t, ch, r, "/t", state)
	// Registered again; lost again mid-stream, dialing allowed this time.
	d.refuse.Store(false)
	waitRecursive(t, r, 1)
	churn(t, zs, ns, 200, func() {
		conns := d.dialed()
		conns[len(conns)-1].Close()
	})
	putAndFollow(t, r, ch, state, "/t/done", "2")
	converge(t, ch, r, "/t", state)
	waitRecursive(t, r, 1)
	putAndFollow(t, r, ch, state, "/t/x/y/w", "again")
	converge(t, ch, r, "/t", state)
}

// A server that does not know addWatch (a 3.5 server; here the request is
// sent with an opcode no server knows) leaves the Watch on child watches,
// which report new znodes, and it does not ask again.
func TestWatchWithoutRecursiveWatch(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_recnone_")
	d := &dialRecorder{zs: zs, unknown: addWatchRequest}
	ctx := testenv.Context(t)
	r := openDialed(t, zs, ns, d)
	_, ch, err := r.Watch(ctx, "/t")
	if err != nil {
		t.Fatal(err)
	}
	if n := zookeeper.RecursiveWatches(r); n != 0 {
		t.Fatalf("%d recursive watches, want none", n)
	}
	state := map[string]string{}
	putAndFollow(t, r, ch, state, "/t/a/b", "1")
	putAndFollow(t, r, ch, state, "/t/a/c", "2")
	sameAsList(t, r, "/t", state)
	time.Sleep(1500 * time.Millisecond) // past the first retry after a failure
	if n := d.sent.Load(); n != 1 || zookeeper.RecursiveWatches(r) != 0 {
		t.Fatalf("%d addWatch requests and %d recursive watches after the server refused addWatch, want 1 and none", n, zookeeper.RecursiveWatches(r))
	}
}

// BenchmarkWatchNewTable10k measures what a Watch of a prefix holding a
// parent of 10,000 znodes spends to report one new child, with the
// recursive watch and with child watches only (which list the parent
// again), one after the other in the same run: the time from the create
// to its event (recursive-ns/op, child-ns/op) and the process's CPU time
// meanwhile (recursive-cpu-ns/op, child-cpu-ns/op, the create's own
// included; with the GC work that falls into it).
func BenchmarkWatchNewTable10k(b *testing.B) {
	zs := zktest.New(b)
	ns := zs.Namespace(b, "sk_recbench_")
	ctx := testenv.Context(b)
	w := openWithTables10k(b, zs, ns)
	rec, child := zs.Open(b, ns), zs.Open(b, ns)
	zookeeper.SetRecursiveWatch(child, false)
	b.Run("one-create", func(b *testing.B) {
		var took, cpu [2]time.Duration
		b.ResetTimer()
		for j, r := range []*zookeeper.Repo{rec, child} {
			b.StopTimer()
			wctx, cancel := context.WithCancel(ctx)
			_, ch, err := r.Watch(wctx, "/p")
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			for i := 0; i < b.N; i++ {
				key := fmt.Sprintf("/p/tables/n_%d_%d_%d", j, b.N, i)
				start, startCPU := time.Now(), cpuTime()
				if _, err := w.Put(ctx, key, []byte("v")); err != nil {
					b.Fatal(err)
				}
				for ev := range ch {
					if ev.Err != nil {
						b.Fatal(ev.Err)
					}
					if ev.KV.Key == key {
						break
					}
				}
				took[j] += time.Since(start)
				cpu[j] += cpuTime() - startCPU
			}
			cancel()
		}
		b.StopTimer()
		n := float64(b.N)
		b.ReportMetric(float64(took[0].Nanoseconds())/n, "recursive-ns/op")
		b.ReportMetric(float64(took[1].Nanoseconds())/n, "child-ns/op")
		b.ReportMetric(float64(cpu[0].Nanoseconds())/n, "recursive-cpu-ns/op")
		b.ReportMetric(float64(cpu[1].Nanoseconds())/n, "child-cpu-ns/op")
		b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "child/recursive-cpu")
	})
}

// The Watches of one Repo share one recursive session: each gets the
// changes under its own prefix; the session is closed with the last one.
func TestWatchesShareRecursiveSession(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_recshare_")
	d := &dialRecorder{zs: zs}
	ctx := testenv.Context(t)
	r := openDialed(t, zs, ns, d)
	opened := len(d.dialed())
	actx, cancelA := context.WithCancel(ctx)
	defer cancelA()
	_, a, err := r.Watch(actx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	bctx, cancelB := context.WithCancel(ctx)
	defer cancelB()
	_, b, err := r.Watch(bctx, "/b")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(d.dialed()) - opened; n != 1 || zookeeper.RecursiveWatches(r) != 2 {
		t.Fatalf("two Watches dialed %d connections, %d recursive watches; want 1 and 2", n, zookeeper.RecursiveWatches(r))
	}
	sa, sb := map[string]string{}, map[string]string{}
	for _, k := range []string{"/a/x/1", "/b/y/2", "/a/x/3"} {
		if _, err := r.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	follow(t, a, sa, "/a/x/3", "/a/x/3")
	follow(t, b, sb, "/b/y/2", "/b/y/2")
	converge(t, a, r, "/a", sa)
	converge(t, b, r, "/b", sb)
	cancelA()
	waitRecursive(t, r, 1)
	if _, err := r.Put(ctx, "/b/z", []byte("z")); err != nil {
		t.Fatal(err)
	}
	follow(t, b, sb, "/b/z", "z")
	cancelB()
	waitRecursive(t, r, 0)
	// A new Watch opens a new session.
	initial, c, err := r.Watch(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(d.dialed()) - opened; n != 2 || zookeeper.RecursiveWatches(r) != 1 {
		t.Fatalf("a third Watch: %d connections dialed in all, %d recursive watches; want 2 and 1", n, zookeeper.RecursiveWatches(r))
	}
	sc := map[string]string{}
	for _, kv := range initial {
		apply(t, sc, registry.Event{Type: registry.EventPut, KV: kv})
	}
	sameAsList(t, r, "/a", sc)
	if _, err := r.Put(ctx, "/a/new", []byte("n")); err != nil {
		t.Fatal(err)
	}
	follow(t, c, sc, "/a/new", "n")
}
