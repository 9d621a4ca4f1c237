package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
	"github.com/shardkeeper/shardkeeper/tools/chaos/netns"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
)

func TestOperatorDeletesFencesEtcd(t *testing.T) {
	testOperatorDeletesFences(t, func(ctx context.Context, ns string) (registry.Repository, error) {
		return etcd.Open(ctx, etcd.Config{Endpoints: testenv.EtcdEndpoints(t), Namespace: ns})
	})
}

func TestOperatorDeletesFencesZooKeeper(t *testing.T) {
	testOperatorDeletesFences(t, func(ctx context.Context, ns string) (registry.Repository, error) {
		return zookeeper.Open(ctx, zookeeper.Config{Servers: testenv.ZooKeeperServers(t), Namespace: ns})
	})
}

// testOperatorDeletesFences lays out a pool of 6 worker ids on a real
// registry: 0, 2 and 5 held with a current fence, 1 held with a fence an
// hour ahead, 3 reserved without a fence, 4 fenced without a reservation.
// A deletion before the cluster has its ledger must delete nothing; with
// the ledger, a deletion must delete nothing while the lane has seen no
// holder issue on them, or no node that would stamp again what it saw
// stamped is free of a fault that cuts it off, and then take the reservations and fences of 2, held
// by the issuing holder the least behind, and 0, whose holder is at least
// minSkew further behind (5's is not), swap their holders' hints, and
// touch nothing else; waitFences must return once the deleted fences are
// written again; later deletions leave one usable id.
func testOperatorDeletesFences(t *testing.T, open func(context.Context, string) (registry.Repository, error)) {
	ctx := testenv.Context(t)
	repo, err := open(ctx, testenv.Namespace("chaos_operator_"))
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	now := time.Now().UnixMilli()
	put := func(key, value string) {
		t.Helper()
		if _, err := repo.Put(ctx, key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	fence := func(id int, until int64) {
		key, _ := paths.Fence(id)
		put(key, fmt.Sprintf(`{"epoch":3,"holder":"g%d.1","reservedUntil":%d}`, id, until))
	}
	reserve := func(id int) {
		key, _ := paths.Reservation(id)
		put(key, fmt.Sprintf("g%d.1", id))
	}
	for _, id := range []int{0, 2} {
		reserve(id)
		fence(id, now+600)
	}
	reserve(5)
	fence(5, now-500+600)
	reserve(1)
	fence(1, now+int64(time.Hour/time.Millisecond))
	reserve(3)
	fence(4, now)

	// The holders' clocks: g2.1 0 s, g5.1 500 ms and g0.1 10 s behind (the
	// last waits for a floor ahead): 2, held by the least behind of those
	// issuing, and 0, held by the one at least minSkew behind it, go, and
	// their holders' hints are swapped.
	m := &nemesis{cfg: Config{Pool: 6, Reservation: 600 * time.Millisecond,
		Nodes: []Node{&clockNode{"g0.1", 10 * time.Second}, &clockNode{"g2.1", 0}, &clockNode{"g5.1", 500 * time.Millisecond}}}}
	hint0, _ := paths.WorkerIDHint("g0.1")
	put(hint0, "0")
	// Before the cluster has its ledger, nothing goes, relaxed or not.
	for _, relaxed := range []bool{false, true} {
		if rec, deleted, err := m.fenceDelete(ctx, repo, 42, relaxed); err != nil || rec.Start != 0 || len(deleted) != 0 {
			t.Fatalf("deletion without the ledger (relaxed %v): %+v, %v, %v; want none", relaxed, rec, deleted, err)
		}
	}
	for id := range 6 {
		rkey, _ := paths.Reservation(id)
		fkey, _ := paths.Fence(id)
		if _, err := repo.Get(ctx, rkey); (err == nil) != (id != 4) {
			t.Fatalf("worker id %d: reservation read %v after a deletion without the ledger", id, err)
		}
		if _, err := repo.Get(ctx, fkey); (err == nil) != (id != 3) {
			t.Fatalf("worker id %d: fence read %v after a deletion without the ledger", id, err)
		}
	}
	put(paths.Ledger, `{"createdBy":"g0.1"}`)
	// Without spans no node would stamp again what was stamped: nothing
	// goes.
	if rec, deleted, err := m.fenceDelete(ctx, repo, 42, false); err != nil || rec.Start != 0 || len(deleted) != 0 {
		t.Fatalf("deletion with no holder seen issuing: %+v, %v, %v; want none", rec, deleted, err)
	}
	// The lane saw 2 and 5 issued on by their holders for the last minute.
	m.spans = map[int][]span{
		2: {{holder: "g2.1", from: time.Now().Add(-time.Minute), to: time.Now()}},
		5: {{holder: "g5.1", behind: 500 * time.Millisecond, from: time.Now().Add(-time.Minute), to: time.Now()}},
	}
	// With every clock within minSkew of the issuing holders', no node
	// would stamp again what another stamped: nothing goes.
	closeClocks := &nemesis{cfg: Config{Pool: 6, Reservation: 600 * time.Millisecond,
		Nodes: []Node{&clockNode{"g0.1", 0}, &clockNode{"g2.1", 0}, &clockNode{"g5.1", 500 * time.Millisecond}}}, spans: m.spans}
	if rec, deleted, err := closeClocks.fenceDelete(ctx, repo, 42, false); err != nil || rec.Start != 0 || len(deleted) != 0 {
		t.Fatalf("deletion with the clocks within %v: %+v, %v, %v; want none", minSkew, rec, deleted, err)
	}
	// g0.1, the only node that far behind, cut off: it would not claim
	// again until the fault ends, so nothing goes.
	cutOff := &nemesis{cfg: m.cfg, unreachable: map[string]bool{"g0": true}, spans: m.spans}
	if rec, deleted, err := cutOff.fenceDelete(ctx, repo, 42, false); err != nil || rec.Start != 0 || len(deleted) != 0 {
		t.Fatalf("deletion with the only node %v behind cut off: %+v, %v, %v; want none", minSkew, rec, deleted, err)
	}
	rec, deleted, err := m.fenceDelete(ctx, repo, 42, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(deleted, []int{2, 0}) || rec.Kind != record.FaultFenceDelete || rec.Start == 0 {
		t.Fatalf("deleted %v, record %+v; want 2 and 0 and a fence-delete record", deleted, rec)
	}
	for inc, want := range map[string]string{"g0.1": "2", "g2.1": "0"} {
		key, _ := paths.WorkerIDHint(inc)
		if kv, err := repo.Get(ctx, key); err != nil || string(kv.Value) != want {
			t.Errorf("hint of %s: %q, %v; want %s", inc, kv.Value, err, want)
		}
	}
	exists := func(key string) bool {
		t.Helper()
		_, err := repo.Get(ctx, key)
		if err != nil && !errors.Is(err, registry.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	for id := range 6 {
		rkey, _ := paths.Reservation(id)
		fkey, _ := paths.Fence(id)
		gone := slices.Contains(deleted, id)
		if gone && !slices.Contains([]int{0, 2, 5}, id) {
			t.Errorf("worker id %d deleted: only held ids with a current fence may be", id)
		}
		wantRes := id != 4 && !gone
		wantFence := id != 3 && !gone
		if exists(rkey) != wantRes || exists(fkey) != wantFence {
			t.Errorf("worker id %d: reservation %v, fence %v; want %v, %v", id, exists(rkey), exists(fkey), wantRes, wantFence)
		}
	}

	// New holders write the fences again, as fenced nodes do for a
	// missing fence: reserved a minute and more ahead.
	ahead := time.Now().Add(unknownFloorAhead).UnixMilli()
	go func() {
		time.Sleep(300 * time.Millisecond)
		for _, id := range deleted {
			fence(id, ahead)
		}
	}()
	start := time.Now()
	if err := waitFences(ctx, repo, deleted); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 300*time.Millisecond || ctx.Err() != nil {
		t.Errorf("waitFences returned after %v (ctx %v), before the fences were written again", time.Since(start), ctx.Err())
	}

	// Usable now: 4 and 5 only, and 5 is held by an issuing holder with
	// g0.1 10 s behind it: deleting it leaves one usable id.
	rec, again, err := m.fenceDelete(ctx, repo, 1, false)
	if err != nil || rec.Start == 0 || !slices.Equal(again, []int{5}) {
		t.Errorf("deletion with two usable ids: %+v, %v, %v; want worker id 5", rec, again, err)
	}
	// Usable: 4 only. 2 held again with a current fence makes 2 usable
	// ids: 2 can go, alone.
	reserve(2)
	fence(2, time.Now().UnixMilli())
	rec, again, err = m.fenceDelete(ctx, repo, 1, false)
	if err != nil || rec.Start == 0 || !slices.Equal(again, []int{2}) {
		t.Errorf("deletion with two usable ids: %+v, %v, %v; want worker id 2", rec, again, err)
	}
	// Usable: 4 only: nothing goes, relaxed or not.
	reserve(0)
	for _, relaxed := range []bool{false, true} {
		rec, again, err = m.fenceDelete(ctx, repo, 1, relaxed)
		if err != nil || rec.Start != 0 || len(again) != 0 {
			t.Errorf("deletion with one usable id (relaxed %v): %+v, %v, %v; want none", relaxed, rec, again, err)
		}
	}
}

// clockNode is a node whose current incarnation's clock is behind by
// behind; the operator lane only asks that.
type clockNode struct {
	incarnation string
	behind      time.Duration
}

func (n *clockNode) Name() string                     { return n.incarnation[:2] }
func (n *clockNode) Host() *netns.Host                { return nil }
func (n *clockNode) Current() (string, time.Duration) { return n.incarnation, n.behind }
func (n *clockNode) Signal(syscall.Signal)            {}
func (n *clockNode) Kill() error                      { return nil }
func (n *clockNode) Start(time.Duration) error        { return nil }
func (n *clockNode) Command(string) error             { return nil }

// TestRestamps checks which claimers of worker id 1 would stamp again,
// in their first stampWindow, milliseconds its holders were seen stamping:
// g1.1 (clock right) issued on it from 20 s to 10 s ago, g2.2 (clock 5 s
// behind) from 3 s ago until now.
func TestRestamps(t *testing.T) {
	now := time.Now()
	m := &nemesis{spans: map[int][]span{1: {
		{holder: "g1.1", from: now.Add(-20 * time.Second), to: now.Add(-10 * time.Second)},
		{holder: "g2.2", behind: 5 * time.Second, from: now.Add(-3 * time.Second), to: now},
	}}}
	for _, tc := range []struct {
		behind time.Duration
		want   bool
	}{
		{0, false},                       // stamps only milliseconds after every holder's
		{500 * time.Millisecond, false},  // less than minSkew behind g1.1
		{5 * time.Second, false},         // g1.1's milliseconds of 5 s ago: it was not issuing
		{5500 * time.Millisecond, false}, // g2.2's: less than minSkew behind it; g1.1's of 5.5 s ago: not issuing
		{8 * time.Second, true},          // g2.2's milliseconds of 3 s ago
		{15 * time.Second, true},         // g1.1's milliseconds of 15 s ago
		{25 * time.Second, false},        // g1.1's of 25 s ago, g2.2's of 20 s ago: none issuing
	} {
		if got := m.restamps(1, tc.behind, now); got != tc.want {
			t.Errorf("restamps(1, %v) = %v, want %v", tc.behind, got, tc.want)
		}
	}
	if m.restamps(2, 15*time.Second, now) {
		t.Error("restamps(2, 15s) = true for an id never seen issued on")
	}
}
