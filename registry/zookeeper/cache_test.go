package zookeeper_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// countConn counts the requests a client writes (the client writes each
// request, and each ping, with one Write).
type countConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// Once a prefix was listed twice, a List of it that did not change since
// the last List costs a sync, not a request per znode; one that changed
// reads what changed.
func TestListReadsWhatChanged(t *testing.T) {
	const tables = 300
	ctx, r, writes, w := openCountedWithTables(t, "sk_listcache_", tables)
	list := func() (map[string]registry.KV, int64) {
		t.Helper()
		before := writes.Load()
		kvs, err := r.List(ctx, "/c")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]registry.KV{}
		for _, kv := range kvs {
			got[kv.Key] = kv
		}
		return got, writes.Load() - before
	}
	// The first List of a prefix reads it all with multiRead (a request
	// per 128 reads) and keeps nothing; the second reads it all one
	// znode at a time, arming the watches that keep it current, and
	// keeps it.
	first, sent := list()
	if len(first) != 4*tables || sent > 4*tables/10 {
		t.Fatalf("the first List read %d keys with %d requests, want %d keys read with multiRead", len(first), sent, 4*tables)
	}
	if second, sent := list(); len(second) != len(first) || sent < 4*tables {
		t.Fatalf("the second List read %d keys with %d requests, want %d keys read one by one", len(second), sent, 4*tables)
	}
	// A ping may go out meanwhile.
	if again, sent := list(); len(again) != len(first) || sent > 3 {
		t.Fatalf("a List of the unchanged subtree read %d keys with %d requests, want %d keys with a sync", len(again), sent, len(first))
	}
	v, err := w.Put(ctx, "/c/t_00007/active_version", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	got, sent := list()
	if kv := got["/c/t_00007/active_version"]; string(kv.Value) != "1" || kv.Version != v {
		t.Fatalf("List after a Put: %q v%d, want \"1\" v%d", kv.Value, kv.Version, v)
	}
	if sent > 6 {
		t.Fatalf("a List after one Put sent %d requests, want a sync and the changed znode's reads", sent)
	}
}

// Each List returns what the registry held when it began, whatever
// changed since the last List: puts, creates of new subtrees, deletes and
// commits of other clients, seen by a client that keeps its cache.
func TestListFollowsOtherClients(t *testing.T) {
	zs := zktest.New(t)
	ns := zs.Namespace(t, "sk_listfollow_")
	ctx, cancel := context.WithTimeout(testenv.Context(t), 2*time.Minute)
	defer cancel()
	r, w := zs.Open(t, ns), zs.Open(t, ns)
	sess, err := w.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Close(ctx) }()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		k := fmt.Sprintf("/f/t_%d/v_%d", rng.IntN(8), rng.IntN(4))
		switch rng.IntN(4) {
		case 0:
			if err := w.Delete(ctx, fmt.Sprintf("/f/t_%d", rng.IntN(8))); err != nil {
				t.Fatal(err)
			}
		case 1:
			txn := registry.Txn{}
			for j := range 3 {
				key := fmt.Sprintf("/f/n_%d/x_%d/y", i, j)
				txn.Conds = append(txn.Conds, registry.Cond{Key: key})
				txn.Ops = append(txn.Ops, registry.Op{Key: key, Value: []byte(key)})
			}
			if _, err := sess.Commit(ctx, txn); err != nil {
				t.Fatal(err)
			}
		default:
			if _, err := w.Put(ctx, k, []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		if i%3 != 0 {
			continue
		}
		fresh, err := zookeeper.Open(ctx, zs.Config(ns))
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.List(ctx, "/f")
		_ = fresh.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.List(ctx, "/f")
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("step %d: List of the caching client = %v\nwant (a new client's) %v", i, got, want)
		}
	}
}

// openCountedWithTables opens a Repo on a new namespace (prefix) whose
// connection counts the requests it writes, and another client w that
// writes tables versioned nodes under /c (versionedTxn) before it returns.
func openCountedWithTables(t *testing.T, prefix string, tables int) (ctx context.Context, r *zookeeper.Repo, writes *atomic.Int64, w registry.Repository) {
	t.Helper()
	zs := zktest.New(t)
	ns := zs.Namespace(t, prefix)
	ctx = testenv.Context(t)
	writes = new(atomic.Int64)
	cfg := zs.Config(ns)
	cfg.Dialer = func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := zs.Dial(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return countConn{Conn: c, writes: writes}, nil
	}
	r, err := zookeeper.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	w = zs.Open(t, ns)
	writeTables(t, w, "/c", tables, 60)
	return ctx, r, writes, w
}
