package httpapi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// previousIncarnation leaves what a node killed right after reserving a
// minute ahead leaves once its session is gone: its hint names worker id
// 5, whose fence is reserved 50 s ahead. With fillAll, every other id is
// reserved by someone else.
func previousIncarnation(t *testing.T, inst string, fillAll bool) registry.Repository {
	t.Helper()
	ctx := testenv.Context(t)
	repo := memory.New()
	put := func(key, value string) {
		if _, err := repo.Put(ctx, key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	hint, _ := paths.WorkerIDHint(inst)
	fence, _ := paths.Fence(5)
	put(hint, "5")
	put(fence, fmt.Sprintf(`{"epoch":1,"holder":%q,"reservedUntil":%d}`, inst, time.Now().UnixMilli()+50_000))
	if fillAll {
		for id := 0; id < 1024; id++ {
			if id != 5 {
				res, _ := paths.Reservation(id)
				put(res, "filler")
			}
		}
	}
	return repo
}

// TestHostileReadyzFutureFloor: a node restarted with the same instance id
// after a long reservation. When its hinted id is the only one free it
// must take it and wait for the floor: /readyz is not 200 (and the gauge
// is 0) while key requests fail. When other ids are free it does not take
// the hinted id, and keys come at once.
func TestHostileReadyzFutureFloor(t *testing.T) {
	t.Run("only the hinted id free", func(t *testing.T) {
		n := startNode(t, previousIncarnation(t, "restarted", true), "restarted", nil)
		if n.node.WorkerID() != 5 {
			t.Fatalf("worker id %d, want the only free one, 5", n.node.WorkerID())
		}
		keys := get(t, n, "/api/v1/keys")
		if keys.status == 200 {
			t.Fatalf("a key was issued below the floor: %s", keys.body)
		}
		if r := get(t, n, "/readyz"); r.status == 200 {
			t.Fatalf("/readyz = 200 while GET /api/v1/keys = %d %s", keys.status, keys.body)
		}
		if m := get(t, n, "/metrics"); !strings.Contains(string(m.body), "\nshardkeeper_ready 0\n") {
			t.Fatalf("shardkeeper_ready is not 0 while keys fail:\n%s", m.body)
		}
	})
	t.Run("other ids free", func(t *testing.T) {
		n := startNode(t, previousIncarnation(t, "restarted", false), "restarted", nil)
		if n.node.WorkerID() == 5 {
			t.Fatal("took the hinted id whose floor is 50 s ahead while 1023 ids were free")
		}
		if r := get(t, n, "/readyz"); r.status != 200 {
			t.Fatalf("/readyz = %d %s", r.status, r.body)
		}
		if r := get(t, n, "/api/v1/keys"); r.status != 200 {
			t.Fatalf("GET /api/v1/keys = %d %s", r.status, r.body)
		}
	})
}

// TestKeysRefusedWithoutWorkerID: a node that lost its worker id and
// cannot take another (every other id is taken) answers key requests 503,
// counts each in shardkeeper_key_requests_refused_total (what the
// refused-keys alert reads) and says why on /readyz.
func TestKeysRefusedWithoutWorkerID(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	for id := 0; id < 1024; id++ {
		if id != 7 {
			res, _ := paths.Reservation(id)
			if _, err := repo.Put(ctx, res, []byte("filler")); err != nil {
				t.Fatal(err)
			}
		}
	}
	n := startNode(t, repo, "loser", nil)
	if r := get(t, n, "/api/v1/keys"); r.status != 200 {
		t.Fatalf("GET /api/v1/keys while holding = %d %s", r.status, r.body)
	}
	res, _ := paths.Reservation(7)
	if _, err := repo.Put(ctx, res, []byte("someone-else")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the loss to be noticed", func() bool { return n.node.WorkerID() == -1 })
	for range 2 {
		if r := get(t, n, "/api/v1/keys?count=5"); r.status != 503 {
			t.Fatalf("GET /api/v1/keys without a worker id = %d %s", r.status, r.body)
		}
	}
	if r := get(t, n, "/readyz"); r.status != 503 || !strings.Contains(string(r.body), "holds no worker id") {
		t.Fatalf("/readyz without a worker id = %d %s", r.status, r.body)
	}
	if m := get(t, n, "/metrics"); !strings.Contains(string(m.body), "\nshardkeeper_key_requests_refused_total 2\n") {
		t.Fatalf("shardkeeper_key_requests_refused_total is not 2 after two refused requests:\n%s", m.body)
	}
}
