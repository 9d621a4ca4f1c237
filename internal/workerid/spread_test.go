package workerid

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// takeFirstBeforeClaim returns a repository over store whose claims
// (CommitFirst) find the ids taken(n, first) taken by another session just
// before they run: n counts the claims from 1, first is the reservation
// key of the claim's first alternative. A stale view, as every node of a
// mass start has.
func takeFirstBeforeClaim(t *testing.T, store *memory.Repo, taken func(n int, first string) []int) (registry.Repository, *fault.Counter) {
	ctx := testenv.Context(t)
	other := session(t, store)
	var claims int
	hook := fault.HookFunc(func(_ context.Context, op, key string) (func(error) error, error) {
		if op != "commit-first" {
			return nil, nil
		}
		claims++
		for _, id := range taken(claims, key) {
			res, _ := paths.Reservation(id)
			if err := other.CreateExclusiveEphemeral(ctx, res, []byte("thief")); err != nil {
				t.Errorf("take %s: %v", res, err)
			}
		}
		return nil, nil
	})
	c := fault.Count(store)
	return fault.Observe(c, hook), c
}

// A node whose first candidates were taken after it listed gets another
// of its candidates in the same claim: one list, one read, one commit.
func TestLostCandidateTakenInSameClaim(t *testing.T) {
	ctx := testenv.Context(t)
	store := memory.New()
	stolen := -1
	r, c := takeFirstBeforeClaim(t, store, func(n int, first string) []int {
		if n > 1 {
			return nil
		}
		_, name := splitLast(first)
		id, err := paths.ParseWorkerID(name)
		if err != nil {
			t.Errorf("first alternative's key %s: %v", first, err)
		}
		stolen = id
		return []int{id}
	})
	// Leave 24 ids free.
	fill := session(t, store)
	for id := UpstreamRange + 24; id < Count; id++ {
		res, _ := paths.Reservation(id)
		if err := fill.CreateExclusiveEphemeral(ctx, res, []byte("filler")); err != nil {
			t.Fatal(err)
		}
	}
	s := session(t, r)
	c.Reset()
	h, err := Acquire(ctx, r, s, "late", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.WorkerID == stolen || stolen < 0 {
		t.Fatalf("claimed %d; the thief took %d", h.WorkerID, stolen)
	}
	if h.WorkerID < UpstreamRange {
		t.Fatalf("claimed %d below UpstreamRange while higher ids were free", h.WorkerID)
	}
	counts := c.Counts()
	if counts["children"] != 1 || counts["get-many"] != 1 || counts["commit-first"] != 1 || c.Total() != 3 {
		t.Fatalf("registry calls = %v, want one children, one get-many, one commit-first", counts)
	}
}

// Ids below UpstreamRange are alternatives only when every free higher id
// is one too. A thief takes every free higher id just before the first
// claim: with 3 of them free the claim's alternatives go on with low ids
// and the first claim gets one; with 17 free (more than the 16
// alternatives) it has no low id, fails, and the node lists again before
// it takes a low id.
func TestLowIDsOnlyBehindEveryHighID(t *testing.T) {
	ctx := testenv.Context(t)
	for _, tc := range []struct {
		freeHigh   int
		wantClaims int64
	}{{Alternatives + 1, 2}, {3, 1}} {
		t.Run(fmt.Sprint(tc.freeHigh, " higher ids free"), func(t *testing.T) {
			store := memory.New()
			fill := session(t, store)
			for id := UpstreamRange + tc.freeHigh; id < Count; id++ {
				res, _ := paths.Reservation(id)
				if err := fill.CreateExclusiveEphemeral(ctx, res, []byte("filler")); err != nil {
					t.Fatal(err)
				}
			}
			r, c := takeFirstBeforeClaim(t, store, func(n int, _ string) []int {
				var ids []int
				if n == 1 {
					for id := UpstreamRange; id < UpstreamRange+tc.freeHigh; id++ {
						ids = append(ids, id)
					}
				}
				return ids
			})
			h, err := Acquire(ctx, r, session(t, r), "node", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if h.WorkerID >= UpstreamRange {
				t.Fatalf("claimed %d; every id from UpstreamRange up was taken", h.WorkerID)
			}
			if got := c.Counts()["commit-first"]; got != tc.wantClaims {
				t.Fatalf("%d claims, want %d", got, tc.wantClaims)
			}
		})
	}
}

// TestMassStartSpread: 1024 nodes start at once on one registry; every id
// is taken exactly once, and the registry calls per node stay within the
// benchmark's target (the memory registry serialises the claims, so this
// is the protocol's count without network timing).
func TestMassStartSpread(t *testing.T) {
	ctx := testenv.Context(t)
	store := memory.New()
	ids := make([]int, Count)
	var total int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, Count)
	for i := range Count {
		c := fault.Count(store)
		s := session(t, c)
		c.Reset()
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			h, err := Acquire(ctx, c, s, fmt.Sprintf("n%04d", i), Options{})
			if err != nil {
				errs <- err
				return
			}
			ids[i] = h.WorkerID
			mu.Lock()
			total += c.Total()
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("worker id %d taken twice", id)
		}
		seen[id] = true
	}
	if mean := float64(total) / Count; mean > 4 {
		t.Fatalf("%.2f registry calls per node, want <= 4", mean)
	}
	t.Logf("%.2f registry calls per node", float64(total)/Count)
}
