package zookeeper_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// checkChanged compares r's ListChanged of prefix since since with a List
// by a new client (which reads every znode from the server) and returns
// its Rev and the List's highest version.
func checkChanged(t *testing.T, zs *zktest.Server, ns string, r *zookeeper.Repo, prefix string, since registry.Version, step string) (rev, top registry.Version) {
	t.Helper()
	ctx := testenv.Context(t)
	got, ok, err := r.ListChanged(ctx, prefix, since, 1<<20)
	if err != nil || !ok {
		t.Fatalf("%s: ListChanged(%s, %d) = %v, %v", step, prefix, since, ok, err)
	}
	fresh, err := zookeeper.Open(ctx, zs.Config(ns))
	if err != nil {
		t.Fatal(err)
	}
	all, err := fresh.List(ctx, prefix)
	_ = fresh.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := []registry.KV{}
	top = since
	for _, kv := range all {
		top = max(top, kv.Version)
		if kv.Version > since {
			want = append(want, kv)
		}
	}
	if got.KVs == nil {
		got.KVs = []registry.KV{}
	}
	// Rev may lag behind writes whose watches fired during the call (a
	// reconnection's re-armed watches may fire late).
	if fmt.Sprint(got.KVs) != fmt.Sprint(want) || got.Count != len(all) || got.Truncated || got.Rev < since {
		t.Fatalf("%s: ListChanged(%s, %d) = %v, count %d, rev %d, truncated %v\nwant (a new client's List) %v, count %d, rev >= %d",
			step, prefix, since, got.KVs, got.Count, got.Rev, got.Truncated, want, len(all), since)
	}
	return got.Rev, top
}

// ListChanged of a followed prefix reflects exactly each change made since
// its last call, by its own client or another: creates, data changes and
// deletes of deep znodes, a subtree deleted and created again, a new
// parent with children, writes beside the prefix; with a recursive watch
// and following the cache's watches.
func TestListChangedFollowsChanges(t *testing.T) {
	zs := zktest.New(t)
	for _, recursive := range []bool{true, false} {
		t.Run(fmt.Sprintf("recursive=%v", recursive), func(t *testing.T) {
			testListChangedFollowsChanges(t, zs, recursive)
		})
	}
}

func testListChangedFollowsChanges(t *testing.T, zs *zktest.Server, recursive bool) {
	ns := zs.Namespace(t, "sk_memo_")
	ctx, cancel := context.WithTimeout(testenv.Context(t), 3*time.Minute)
	defer cancel()
	r, w := zs.Open(t, ns), zs.Open(t, ns)
	zookeeper.SetRecursiveWatch(r, recursive)
	sess, err := w.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Close(ctx) }()
	if _, err := sess.Commit(ctx, versionedTxn("/m", 0, 20)); err != nil {
		t.Fatal(err)
	}
	since, _ := checkChanged(t, zs, ns, r, "/m", 0, "first")
	if zookeeper.Memos(r) != 1 {
		t.Fatalf("%d memos after a ListChanged, want 1", zookeeper.Memos(r))
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 200 {
		by := r
		if rng.IntN(2) == 0 {
			by = w // another client
		}
		for o := range 1 + rng.IntN(3) {
			key := fmt.Sprintf("/m/t_%05d/x_%d/y_%d", rng.IntN(24), rng.IntN(3), rng.IntN(3))
			var err error
			switch rng.IntN(7) {
			case 0, 1:
				_, err = by.Put(ctx, key, []byte(fmt.Sprint(i)))
			case 2:
				err = by.Delete(ctx, key)
			case 3: // a subtree deleted and created again
				t := fmt.Sprintf("/m/t_%05d", rng.IntN(24))
				if err = by.Delete(ctx, t); err == nil {
					_, err = by.Put(ctx, t+"/x_0/y_0", []byte(fmt.Sprint(i)))
				}
			case 4: // a new parent with children, in one multi
				txn := registry.Txn{}
				for j := range 3 {
					k := fmt.Sprintf("/m/n_%d_%d/p/q_%d", i, o, j)
					txn.Conds = append(txn.Conds, registry.Cond{Key: k})
					txn.Ops = append(txn.Ops, registry.Op{Key: k, Value: []byte(k)})
				}
				_, err = sess.Commit(ctx, txn)
			case 5: // a parent's own data
				_, err = by.Put(ctx, fmt.Sprintf("/m/t_%05d", rng.IntN(24)), []byte(fmt.Sprint(i)))
			case 6: // beside the prefix
				_, err = by.Put(ctx, fmt.Sprintf("/mx/t_%d", rng.IntN(3)), []byte(fmt.Sprint(i)))
			}
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		if rng.IntN(10) == 0 {
			checkChanged(t, zs, ns, r, "/m", 0, fmt.Sprintf("step %d since 0", i))
		}
		var top registry.Version
		since, top = checkChanged(t, zs, ns, r, "/m", since, fmt.Sprintf("step %d", i))
		if err := zookeeper.MemosCounted(r); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		// Every watch that fired told of a write made before the call.
		if since < top {
			t.Fatalf("step %d: rev %d, below the highest version %d", i, since, top)
		}
	}
	if zookeeper.Memos(r) != 1 {
		t.Fatalf("%d memos after the steps, want 1", zookeeper.Memos(r))
	}
}

// A ListChanged of a followed prefix after one change costs a sync and the
// changed znode's reads, however many znodes the prefix holds.
func TestListChangedReadsWhatChanged(t *testing.T) {
	ctx, r, writes, w := openCountedWithTables(t, "sk_memocost_", 300)
	changed := func(since registry.Version) (registry.Changed, int64) {
		t.Helper()
		before := writes.Load()
		c, _, err := r.ListChanged(ctx, "/c", since, 100)
		if err != nil {
			t.Fatal(err)
		}
		return c, writes.Load() - before
	}
	// The first walk reads every znode (with multiRead, on the recursive session).
	first, _ := changed(0)
	if !first.Truncated || first.Count != 4*300 {
		t.Fatalf("the first ListChanged: %d keys (truncated %v), want %d", first.Count, first.Truncated, 4*300)
	}
	// Two syncs (the recursive session's and the connection's); a ping may
	// go out meanwhile.
	if again, sent := changed(first.Rev); len(again.KVs) != 0 || again.Count != first.Count || sent > 3 {
		t.Fatalf("a ListChanged of the unchanged prefix: %v, count %d, with %d requests; want nothing changed, count %d, with two syncs", again.KVs, again.Count, sent, first.Count)
	}
	v, err := w.Put(ctx, "/c/t_00007/active_version", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	got, sent := changed(first.Rev)
	if len(got.KVs) != 1 || got.KVs[0].Key != "/c/t_00007/active_version" || string(got.KVs[0].Value) != "1" || got.KVs[0].Version != v || got.Rev != v {
		t.Fatalf("ListChanged after a Put = %+v, want the put key at v%d", got, v)
	}
	if sent > 5 {
		t.Fatalf("a ListChanged after one Put sent %d requests, want a sync and the changed znode's reads", sent)
	}
}

// With a recursive watch, ListChanged after a new child of a parent of
// 2,000 children reads the new znodes, not the parent's 2,000 names
// again, with a handful of requests; following the cache's watches it
// lists the parent again. Either way it reports the new keys.
func TestListChangedNewChildWithoutListingParent(t *testing.T) {
	const tables = 2000
	zs := zktest.New(t)
	ctx := testenv.Context(t)
	for _, recursive := range []bool{true, false} {
		t.Run(fmt.Sprintf("recursive=%v", recursive), func(t *testing.T) {
			ns := zs.Namespace(t, "sk_memonew_")
			sess := writeTables(t, zs.Open(t, ns), "/c", tables, 100)
			d := &dialRecorder{zs: zs}
			r := openDialed(t, zs, ns, d)
			zookeeper.SetRecursiveWatch(r, recursive)
			since, _ := checkChanged(t, zs, ns, r, "/c", 0, "first")
			if n, want := zookeeper.RecursiveWatches(r), map[bool]int64{true: 1, false: 0}[recursive]; n != want {
				t.Fatalf("%d recursive watches, want %d", n, want)
			}
			for i := range 3 {
				if _, err := sess.Commit(ctx, versionedTxn("/c", tables+i, 1)); err != nil {
					t.Fatal(err)
				}
				before, sent := d.read.Load(), d.requests()
				c, _, err := r.ListChanged(ctx, "/c", since, 100)
				read, sent := d.read.Load()-before, d.requests()-sent
				if err != nil || len(c.KVs) != 4 || c.Count != 4*(tables+i+1) {
					t.Fatalf("table %d: ListChanged = %v keys, count %d, %v; want the 4 new keys, count %d", tables+i, c.KVs, c.Count, err, 4*(tables+i+1))
				}
				since = c.Rev
				t.Logf("table %d: ListChanged read %d bytes with %d requests", tables+i, read, sent)
				// Listing /c reads its 2,000+ names (7+ bytes each).
				if listed := read > 10*tables; listed == recursive {
					t.Fatalf("a new table read %d bytes (recursive watch %v): the parent was listed %v, want %v", read, recursive, listed, !recursive)
				}
				// Two syncs, the reads of the 4 new znodes and of the names of
				// the 2 with children, and a ping of each connection maybe.
				if recursive && sent > 10 {
					t.Fatalf("a new table cost %d requests, want 10 at most", sent)
				}
			}
			checkChanged(t, zs, ns, r, "/c", since, "after")
		})
	}
}

// A server that does not know addWatch (a 3.5 server; here the request is
// sent with an opcode no server knows) leaves ListChanged's memo on the
// cache's watches, which report every change, and it does not ask again
// when it builds a memo anew.
func TestListChangedWithoutRecursiveWatch(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_memonone_")
	d := &dialRecorder{zs: zs, unknown: addWatchRequest}
	ctx := testenv.Context(t)
	r, w := openDialed(t, zs, ns, d), zs.Open(t, ns)
	for i := range 10 {
		if _, err := w.Put(ctx, fmt.Sprintf("/n/k_%d/v", i), []byte("0")); err != nil {
			t.Fatal(err)
		}
	}
	since, _ := checkChanged(t, zs, ns, r, "/n", 0, "first")
	if n := zookeeper.RecursiveWatches(r); n != 0 || zookeeper.Memos(r) != 1 {
		t.Fatalf("%d recursive watches and %d memos, want none and 1", n, zookeeper.Memos(r))
	}
	for i := range 5 {
		if _, err := w.Put(ctx, fmt.Sprintf("/n/k_%d/v", i), []byte(fmt.Sprint(i+1))); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Put(ctx, fmt.Sprintf("/n/new_%d/v", i), []byte("new")); err != nil {
			t.Fatal(err)
		}
		if err := w.Delete(ctx, fmt.Sprintf("/n/k_%d", 9-i)); err != nil {
			t.Fatal(err)
		}
		since, _ = checkChanged(t, zs, ns, r, "/n", since, fmt.Sprintf("step %d", i))
	}
	// Another prefix: a memo built anew.
	checkChanged(t, zs, ns, r, "/n/new_0", 0, "another prefix")
	if n := d.sent.Load(); n != 1 || zookeeper.RecursiveWatches(r) != 0 || zookeeper.Memos(r) != 2 {
		t.Fatalf("%d addWatch requests, %d recursive watches and %d memos after the server refused addWatch, want 1, none and 2", n, zookeeper.RecursiveWatches(r), zookeeper.Memos(r))
	}
}

// A lost connection or session drops the memos (their watches may have
// missed changes), and so does a failed recursive session: ListChanged
// walks again and sees the changes made meanwhile.
func TestListChangedAfterSessionLoss(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_memoloss_")
	ctx, cancel := context.WithTimeout(testenv.Context(t), 2*time.Minute)
	defer cancel()
	d := &dialRecorder{zs: zs}
	r := openDialed(t, zs, ns, d)
	last := func() net.Conn { conns := d.dialed(); return conns[len(conns)-1] }
	w := zs.Open(t, ns)
	for i := range 10 {
		if _, err := w.Put(ctx, fmt.Sprintf("/s/k_%d/v", i), []byte("0")); err != nil {
			t.Fatal(err)
		}
	}
	since, _ := checkChanged(t, zs, ns, r, "/s", 0, "first")
	waitDropped := func(what string) {
		t.Helper()
		for zookeeper.Memos(r) != 0 {
			if ctx.Err() != nil {
				t.Fatalf("the memo outlived %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	main := d.dialed()[0]
	for round, loss := range []func(){
		func() { _ = last().Close() }, // the recursive session's connection breaks
		func() { _ = main.Close() },   // the Repo's connection breaks; its session survives
		func() { zs.Expire(t, r.Conn().SessionID()) },
	} {
		since, _ = checkChanged(t, zs, ns, r, "/s", since, fmt.Sprintf("round %d before", round))
		if zookeeper.Memos(r) != 1 {
			t.Fatalf("round %d: %d memos, want 1", round, zookeeper.Memos(r))
		}
		loss()
		waitDropped(fmt.Sprintf("loss %d", round))
		if _, err := w.Put(ctx, "/s/k_1/v", []byte(fmt.Sprint(round+1))); err != nil {
			t.Fatal(err)
		}
		if err := w.Delete(ctx, "/s/k_2"); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Put(ctx, fmt.Sprintf("/s/new_%d/v", round), []byte("new")); err != nil {
			t.Fatal(err)
		}
		since, _ = checkChanged(t, zs, ns, r, "/s", since, fmt.Sprintf("round %d after", round))
		if _, err := w.Put(ctx, "/s/k_3/v", []byte(fmt.Sprint(round+1))); err != nil {
			t.Fatal(err)
		}
		since, _ = checkChanged(t, zs, ns, r, "/s", since, fmt.Sprintf("round %d with a new memo", round))
	}
}

// With a full cache (no watch armed on what does not fit), ListChanged is
// right: following the cache's watches it walks every time and keeps no
// memo; with a recursive watch, whose memo reads without the cache, it
// keeps its memo.
func TestListChangedCacheFull(t *testing.T) {
	zs := zktest.New(t)
	ctx := testenv.Context(t)
	for _, recursive := range []bool{true, false} {
		t.Run(fmt.Sprintf("recursive=%v", recursive), func(t *testing.T) {
			ns := zs.Namespace(t, "sk_memofull_")
			r, w := zs.Open(t, ns), zs.Open(t, ns)
			zookeeper.SetMaxCached(r, 10)
			zookeeper.SetRecursiveWatch(r, recursive)
			for i := range 20 {
				if _, err := w.Put(ctx, fmt.Sprintf("/f/k_%d/v", i), []byte("0")); err != nil {
					t.Fatal(err)
				}
			}
			since, _ := checkChanged(t, zs, ns, r, "/f", 0, "first")
			for i := range 10 {
				if _, err := w.Put(ctx, fmt.Sprintf("/f/k_%d/v", 3*i%20), []byte(fmt.Sprint(i))); err != nil {
					t.Fatal(err)
				}
				if err := w.Delete(ctx, fmt.Sprintf("/f/k_%d/v", (3*i+7)%20)); err != nil {
					t.Fatal(err)
				}
				since, _ = checkChanged(t, zs, ns, r, "/f", since, fmt.Sprintf("step %d", i))
				if n, want := zookeeper.Memos(r), map[bool]int{true: 1, false: 0}[recursive]; n != want {
					t.Fatalf("step %d: %d memos with the cache full, want %d", i, n, want)
				}
			}
		})
	}
}

// Concurrent ListChanged calls of one prefix, while another client
// writes, each since the Rev of the caller's last call, reflect every
// write that returned before the call began: Rev is below every write
// not read yet; with a recursive watch and following the cache's watches.
func TestListChangedConcurrent(t *testing.T) {
	zs := zktest.New(t)
	for _, recursive := range []bool{true, false} {
		t.Run(fmt.Sprintf("recursive=%v", recursive), func(t *testing.T) {
			testListChangedConcurrent(t, zs, recursive)
		})
	}
}

func testListChangedConcurrent(t *testing.T, zs *zktest.Server, recursive bool) {
	ns := zs.Namespace(t, "sk_memoconc_")
	ctx, cancel := context.WithTimeout(testenv.Context(t), 2*time.Minute)
	defer cancel()
	r, w := zs.Open(t, ns), zs.Open(t, ns)
	zookeeper.SetRecursiveWatch(r, recursive)
	const keys = 20
	key := func(i int) string { return fmt.Sprintf("/cc/k_%02d/v", i) }
	var (
		mu      sync.Mutex
		written = map[string]registry.Version{} // what returned, by key
	)
	for i := range keys {
		v, err := w.Put(ctx, key(i), []byte("0"))
		if err != nil {
			t.Fatal(err)
		}
		written[key(i)] = v
	}
	done := make(chan struct{})
	var writers sync.WaitGroup
	writers.Add(1)
	go func() {
		defer writers.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			k := key(i % keys)
			v, err := w.Put(ctx, k, []byte(fmt.Sprint(i)))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			written[k] = v
			mu.Unlock()
		}
	}()
	var readers sync.WaitGroup
	for g := range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			seen := map[string]registry.Version{}
			var since registry.Version
			for call := range 40 {
				if call%10 == 9 {
					since = 0 // all of it, now and then
				}
				mu.Lock()
				before := maps.Clone(written)
				mu.Unlock()
				c, _, err := r.ListChanged(ctx, "/cc", since, 1000)
				if err != nil {
					t.Error(err)
					return
				}
				for _, kv := range c.KVs {
					seen[kv.Key] = kv.Version
				}
				since = c.Rev
				for k, v := range before {
					if seen[k] < v {
						t.Errorf("reader %d call %d: %s at version %d, but version %d was written before the call", g, call, k, seen[k], v)
						return
					}
				}
				if c.Count != 2*keys {
					t.Errorf("reader %d call %d: count %d, want %d", g, call, c.Count, 2*keys)
					return
				}
			}
		}()
	}
	readers.Wait()
	close(done)
	writers.Wait()
}

// BenchmarkListChanged10k measures ListChanged of a prefix of 10,000
// znodes after one change, with the memo and with a walk of the whole
// subtree through the cache (the baseline), in the same run: the time of
// a call (memo-ns/op, walk-ns/op, walk/memo) and the process's CPU time
// during it (memo-cpu-ns/op, walk-cpu-ns/op, walk/memo-cpu; with the GC
// work that falls into it, the walk's garbage included). new-child
// measures it after a new child of the parent of 10,000 znodes, with the
// memo following the recursive watch and the memo following the cache's
// watches (which lists the parent again), one after the other in the
// same run: recursive-ns/op, child-ns/op, recursive-cpu-ns/op,
// child-cpu-ns/op and the ratios.
func BenchmarkListChanged10k(b *testing.B) {
	zs := zktest.New(b)
	ns := zs.Namespace(b, "sk_memobench_")
	ctx := testenv.Context(b)
	const tables = 10000
	w := openWithTables10k(b, zs, ns)
	memo, walk := zs.Open(b, ns), zs.Open(b, ns)
	zookeeper.SetListChangedByWalk(walk, true)
	b.Run("one-change", func(b *testing.B) {
		for _, r := range []*zookeeper.Repo{memo, walk} {
			for range 2 { // the first call arms the watches
				if _, _, err := r.ListChanged(ctx, "/p", 0, 0); err != nil {
					b.Fatal(err)
				}
			}
		}
		var took, cpu [2]time.Duration
		rng := rand.New(rand.NewPCG(1, 2))
		b.ResetTimer()
		// One after the other, so that no GC of the walk's garbage falls
		// into the memo's calls.
		for j, r := range []*zookeeper.Repo{memo, walk} {
			c, _, err := r.ListChanged(ctx, "/p", 0, 0) // the Rev to start from
			if err != nil {
				b.Fatal(err)
			}
			since := c.Rev
			for i := 0; i < b.N; i++ {
				if _, err := w.Put(ctx, fmt.Sprintf("/p/tables/t_%05d", rng.IntN(tables)), []byte(fmt.Sprint(i))); err != nil {
					b.Fatal(err)
				}
				start, startCPU := time.Now(), cpuTime()
				c, _, err := r.ListChanged(ctx, "/p", since, 100)
				took[j] += time.Since(start)
				cpu[j] += cpuTime() - startCPU
				if err != nil || len(c.KVs) != 1 || c.Count != tables+1 {
					b.Fatalf("ListChanged after one Put: %d keys, count %d, %v; want 1 key, count %d", len(c.KVs), c.Count, err, tables+1)
				}
				since = c.Rev
			}
		}
		b.StopTimer()
		reportPair(b, "memo", "walk", took, cpu)
	})
	children := zs.Open(b, ns)
	zookeeper.SetRecursiveWatch(children, false)
	b.Run("new-child", func(b *testing.B) {
		var took, cpu [2]time.Duration
		for j, r := range []*zookeeper.Repo{memo, children} {
			c, _, err := r.ListChanged(ctx, "/p", 0, 0) // the memo, and the Rev to start from
			if err != nil {
				b.Fatal(err)
			}
			since, count := c.Rev, c.Count
			for i := 0; i < b.N; i++ {
				if _, err := w.Put(ctx, fmt.Sprintf("/p/tables/n_%d_%d_%d", j, b.N, i), []byte("new")); err != nil {
					b.Fatal(err)
				}
				start, startCPU := time.Now(), cpuTime()
				c, _, err := r.ListChanged(ctx, "/p", since, 100)
				took[j] += time.Since(start)
				cpu[j] += cpuTime() - startCPU
				if err != nil || len(c.KVs) != 1 || c.Count <= count {
					b.Fatalf("ListChanged after a new child: %d keys, count %d, %v; want 1 key, count above %d", len(c.KVs), c.Count, err, count)
				}
				since, count = c.Rev, c.Count
			}
		}
		reportPair(b, "recursive", "child", took, cpu)
	})
	if zookeeper.Memos(memo) != 1 || zookeeper.Memos(children) != 1 {
		b.Fatal("a memo was dropped during the benchmark")
	}
}

// cpuTime is the user and system time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// openWithTables10k opens a Repo on namespace ns of zs and writes the
// 10,000 keys /p/tables/t_00000 to t_09999 (value "table N"), 500 a
// transaction: the parent of 10,000 znodes the benchmarks change.
func openWithTables10k(b *testing.B, zs *zktest.Server, ns string) *zookeeper.Repo {
	ctx := testenv.Context(b)
	w := zs.Open(b, ns)
	sess, err := w.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sess.Close(ctx) }()
	const tables, batch = 10000, 500
	for from := 0; from < tables; from += batch {
		var txn registry.Txn
		for i := from; i < from+batch; i++ {
			k := fmt.Sprintf("/p/tables/t_%05d", i)
			txn.Conds = append(txn.Conds, registry.Cond{Key: k})
			txn.Ops = append(txn.Ops, registry.Op{Key: k, Value: []byte(fmt.Sprintf("table %d", i))})
		}
		if _, err := sess.Commit(ctx, txn); err != nil {
			b.Fatal(err)
		}
	}
	return w
}

// reportPair reports the wall and CPU time per op of two ways x and y of
// one benchmark, measured in the same run (took and cpu hold x's, then
// y's, over b.N ops each), and y's over x's: x-ns/op, y-ns/op, y/x,
// x-cpu-ns/op, y-cpu-ns/op and y/x-cpu.
func reportPair(b *testing.B, x, y string, took, cpu [2]time.Duration) {
	perOp := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(perOp(took[0]), x+"-ns/op")
	b.ReportMetric(perOp(took[1]), y+"-ns/op")
	b.ReportMetric(perOp(took[1])/perOp(took[0]), y+"/"+x)
	b.ReportMetric(perOp(cpu[0]), x+"-cpu-ns/op")
	b.ReportMetric(perOp(cpu[1]), y+"-cpu-ns/op")
	b.ReportMetric(perOp(cpu[1])/perOp(cpu[0]), y+"/"+x+"-cpu")
}
