package etcd

import (
	"context"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardkeeper/shardkeeper/registry"
)

// TestHistoryForgetsWholeRevisions: past historyWrites a history forgets
// its oldest revisions, each whole, and its floor follows, so that a
// replay from before the floor answers not ok while one after it holds
// every write; a replay waits for the revision asked for, and gives up
// when its context ends first.
func TestHistoryForgetsWholeRevisions(t *testing.T) {
	r := &Repo{ns: "/ns"}
	h := &history{floor: 0, more: make(chan struct{})}
	put := func(rev int64, keys ...string) {
		var evs []*clientv3.Event
		for _, k := range keys {
			evs = append(evs, &clientv3.Event{Type: clientv3.EventTypePut, Kv: &mvccpb.KeyValue{Key: []byte("/ns" + k), Value: []byte("v"), ModRevision: rev}})
		}
		h.append(r, evs)
	}
	for rev := int64(1); rev <= historyWrites/2+1; rev++ {
		put(rev, fmt.Sprint("/p/a", rev), fmt.Sprint("/q/b", rev)) // two writes a revision
	}
	if h.floor != 1 || len(h.writes) != historyWrites {
		t.Fatalf("after %d writes: floor %d, %d held; want floor 1 (revision 1 forgotten, whole), %d held", historyWrites+2, h.floor, len(h.writes), historyWrites)
	}
	ctx := context.Background()
	if _, ok := h.replay(ctx, "/p", 0, 5, 100); ok {
		t.Fatal("a replay from before the floor answered")
	}
	got, ok := h.replay(ctx, "/p", 1, 5, 100)
	if !ok || len(got) != 4 || got[0].KV.Key != "/p/a2" || got[3].KV.Key != "/p/a5" || got[3].KV.Version != 5 {
		t.Fatalf("replay of /p in (1, 5] = %v, %v; want /p/a2 ... /p/a5", got, ok)
	}
	if _, ok := h.replay(ctx, "/p", 1, 5, 3); ok {
		t.Fatal("a replay past max answered")
	}
	next := h.rev + 1
	done := make(chan []registry.Event)
	go func() {
		evs, _ := h.replay(ctx, "/q", next-1, next, 10)
		done <- evs
	}()
	put(next, "/q/late")
	if evs := <-done; len(evs) != 1 || evs[0].KV.Key != "/q/late" {
		t.Fatalf("a replay waiting for revision %d got %v", next, evs)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, ok := h.replay(cctx, "/q", next, next+1, 10); ok {
		t.Fatal("a replay whose context ended answered")
	}
	h.end()
	if _, ok := h.replay(ctx, "/q", next, next+1, 10); ok {
		t.Fatal("a replay of an ended history answered")
	}
}
