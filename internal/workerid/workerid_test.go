package workerid

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// backend opens clients on one shared registry and expires sessions the
// way the registry would.
type backend struct {
	open   func(t *testing.T) registry.Repository
	expire func(t *testing.T, s registry.Session)
}

func memoryBackend() backend {
	store := memory.New()
	return backend{
		open:   func(t *testing.T) registry.Repository { r := store.Clone(); t.Cleanup(func() { r.Close() }); return r },
		expire: func(t *testing.T, s registry.Session) { memory.Expire(s) },
	}
}

func session(t *testing.T, r registry.Repository) registry.Session {
	s, err := r.NewSession(testenv.Context(t), registry.SessionOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func TestAcquireMemory(t *testing.T) { runAcquireSuite(t, memoryBackend) }

// namesOnly hides the memory backend's range reads, so Acquire takes the
// path it takes on ZooKeeper.
type namesOnly struct{ registry.Repository }

func TestAcquireMemoryNamesOnly(t *testing.T) {
	runAcquireSuite(t, func() backend {
		b := memoryBackend()
		open := b.open
		b.open = func(t *testing.T) registry.Repository { return namesOnly{open(t)} }
		return b
	})
}

// runAcquireSuite runs the worker-id behaviours against a backend; the
// real-backend tests call it too.
func runAcquireSuite(t *testing.T, mk func() backend) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, backend)
	}{
		{"LayoutAndFence", testLayoutAndFence},
		{"NoHintForRandomIDs", testNoHintForRandomIDs},
		{"ConcurrentDistinct", testConcurrentDistinct},
		{"RestartGetsOldID", testRestartGetsOldID},
		{"TakeoverStartsAboveFence", testTakeoverStartsAboveFence},
		{"Exhausted", testExhausted},
		{"CorruptFenceIsUnknown", testCorruptFenceIsUnknown},
		{"LedgerMakesMissingFenceUnknown", testLedgerMakesMissingFenceUnknown},
		{"LedgerCreatedOnce", testLedgerCreatedOnce},
		{"LedgerDeletedWithFences", testLedgerDeletedWithFences},
		{"AllAheadTakesEarliest", testAllAheadTakesEarliest},
		{"HintNotPreferredFarAhead", testHintNotPreferredFarAhead},
		{"WatchSeesForeignChange", testWatchSeesForeignChange},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, mk()) })
	}
}

func testNoHintForRandomIDs(t *testing.T, b backend) {
	r := b.open(t)
	ctx := testenv.Context(t)
	if _, err := Acquire(ctx, r, session(t, r), "random-1", Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(ctx, r, session(t, r), "stable-2", Options{Stable: true}); err != nil {
		t.Fatal(err)
	}
	names, err := r.Children(ctx, paths.HintRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != "stable-2" {
		t.Fatalf("hints = %v, want only the stable instance's", names)
	}
}

func testLayoutAndFence(t *testing.T, b backend) {
	r := b.open(t)
	s := session(t, r)
	ctx := testenv.Context(t)
	h, err := Acquire(ctx, r, s, "i-1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.WorkerID < 0 || h.WorkerID >= Count || h.Epoch != 1 || h.Floor != 0 {
		t.Fatalf("holding = %+v", h)
	}
	res, _ := paths.Reservation(h.WorkerID)
	node, _ := paths.WorkerID("i-1")
	fk, _ := paths.Fence(h.WorkerID)
	other := b.open(t)
	for key, want := range map[string]string{res: "i-1", node: strconv.Itoa(h.WorkerID)} {
		kv, err := other.Get(ctx, key)
		if err != nil || string(kv.Value) != want {
			t.Fatalf("%s = %q, %v; want %q", key, kv.Value, err, want)
		}
	}
	until := time.Now().UnixMilli() + 3000
	if err := h.Reserve(ctx, until); err != nil {
		t.Fatal(err)
	}
	kv, err := other.Get(ctx, fk)
	if err != nil {
		t.Fatal(err)
	}
	f, err := decodeFence(kv.Value)
	if err != nil || f != (Fence{Epoch: 1, Holder: "i-1", ReservedUntil: until}) || h.ReservedUntil() != until {
		t.Fatalf("fence = %+v, %v", f, err)
	}
	// Lowering at release, never below the floor.
	if err := h.Release(ctx, until-2000); err != nil {
		t.Fatal(err)
	}
	kv, _ = other.Get(ctx, fk)
	if f, _ := decodeFence(kv.Value); f.ReservedUntil != until-2000 {
		t.Fatalf("released fence = %+v", f)
	}
}

func testConcurrentDistinct(t *testing.T, b backend) {
	const n = 40
	ctx := testenv.Context(t)
	ids := make([]int, n)
	errs := make([]error, n)
	repos := make([]registry.Repository, n)
	sessions := make([]registry.Session, n)
	for i := range repos {
		repos[i] = b.open(t)
		sessions[i] = session(t, repos[i])
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := Acquire(ctx, repos[i], sessions[i], fmt.Sprintf("node-%d", i), Options{})
			if err == nil {
				ids[i] = h.WorkerID
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	seen := map[int]int{}
	for i, id := range ids {
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i, errs[i])
		}
		if j, dup := seen[id]; dup {
			t.Fatalf("nodes %d and %d both hold worker id %d", i, j, id)
		}
		seen[id] = i
	}
}

func testRestartGetsOldID(t *testing.T, b backend) {
	ctx := testenv.Context(t)
	r := b.open(t)
	s := session(t, r)
	h, err := Acquire(ctx, r, s, "stable-1", Options{Stable: true})
	if err != nil {
		t.Fatal(err)
	}
	// Others start meanwhile.
	for i := 0; i < 5; i++ {
		if _, err := Acquire(ctx, r, session(t, r), fmt.Sprintf("other-%d", i), Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r2 := b.open(t)
	h2, err := Acquire(ctx, r2, session(t, r2), "stable-1", Options{Stable: true})
	if err != nil {
		t.Fatal(err)
	}
	if h2.WorkerID != h.WorkerID || h2.Epoch != h.Epoch+1 {
		t.Fatalf("restart got worker id %d epoch %d, want %d epoch %d", h2.WorkerID, h2.Epoch, h.WorkerID, h.Epoch+1)
	}
}

// fill reserves every worker id except keep with persistent keys.
func fill(t *testing.T, r registry.Repository, keep int) {
	ctx := testenv.Context(t)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for id := 0; id < Count; id++ {
		if id == keep {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			key, _ := paths.Reservation(id)
			if _, err := r.Put(ctx, key, []byte("filler")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

func testTakeoverStartsAboveFence(t *testing.T, b backend) {
	ctx := testenv.Context(t)
	r := b.open(t)
	fill(t, r, 77)
	sa := session(t, r)
	a, err := Acquire(ctx, r, sa, "zombie", Options{})
	if err != nil || a.WorkerID != 77 {
		t.Fatalf("A = %+v, %v", a, err)
	}
	ra := time.Now().UnixMilli() + 5000
	if err := a.Reserve(ctx, ra); err != nil {
		t.Fatal(err)
	}
	// The registry expires A's session; B takes the id while A still
	// believes it holds it.
	b.expire(t, sa)
	rb := b.open(t)
	var h *Holding
	deadline := time.Now().Add(30 * time.Second)
	for {
		h, err = Acquire(ctx, rb, session(t, rb), "successor", Options{})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the expired ephemerals may take a moment to go
	}
	if err != nil {
		t.Fatal(err)
	}
	if h.WorkerID != 77 || h.Floor != ra || h.Epoch != a.Epoch+1 {
		t.Fatalf("successor = id %d floor %d epoch %d; want 77, %d, %d", h.WorkerID, h.Floor, h.Epoch, ra, a.Epoch+1)
	}
	// The zombie cannot extend its reservation any more.
	if err := a.Reserve(ctx, ra+10000); !errors.Is(err, ErrLost) {
		t.Fatalf("zombie Reserve = %v, want ErrLost", err)
	}
}

func testExhausted(t *testing.T, b backend) {
	ctx := testenv.Context(t)
	r := b.open(t)
	fill(t, r, -1)
	_, err := Acquire(ctx, r, session(t, r), "late", Options{})
	if !errors.Is(err, ErrExhausted) || err.Error() != "Worker ID assigned failed, which should be in [0, 1024)." {
		t.Fatalf("err = %v", err)
	}
	var coded *sqlerr.Error
	if !errors.As(err, &coded) || coded.Code != 17001 || coded.SQLState != "HY000" {
		t.Fatalf("err = %#v, want code 17001", err)
	}
}

func testCorruptFenceIsUnknown(t *testing.T, b backend) {
	ctx := testenv.Context(t)
	r := b.open(t)
	fill(t, r, 5)
	fk, _ := paths.Fence(5)
	if _, err := r.Put(ctx, fk, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	h, err := Acquire(ctx, r, session(t, r), "x", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.WorkerID != 5 || h.Floor < before+unknownFloorAhead.Milliseconds() || h.Epoch < before {
		t.Fatalf("holding = %+v, want id 5 with an unknown floor (>= %d) and a fresh epoch", h, before+unknownFloorAhead.Milliseconds())
	}
}

// An unknown outcome (lost response) keeps the old limit, and the next
// Reserve adopts the write that landed.
func TestReserveAdoptsLostResponse(t *testing.T) {
	ctx := testenv.Context(t)
	inner := memory.New()
	r := fault.Wrap(inner, nil)
	s, err := r.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Acquire(ctx, r, s, "i", Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	r.SetPlan(func(op, key string) fault.Action {
		if op == "commit" {
			return fault.Action{LoseResponse: true}
		}
		return fault.Action{}
	})
	if err := h.Reserve(ctx, 1000); err == nil || errors.Is(err, ErrLost) {
		t.Fatalf("lost response: %v", err)
	}
	if h.ReservedUntil() != 0 {
		t.Fatalf("limit moved on an unknown outcome: %d", h.ReservedUntil())
	}
	r.SetPlan(nil)
	if err := h.Reserve(ctx, 2000); err != nil {
		t.Fatalf("Reserve after a landed lost write: %v", err)
	}
	if h.ReservedUntil() != 2000 {
		t.Fatalf("limit = %d", h.ReservedUntil())
	}
}

// TestUpstreamRangeComesLast: Acquire leaves the ids ShardingSphere nodes
// take (the lowest, below UpstreamRange) while any other id is free, a
// restart hint below the range included; once every id from UpstreamRange
// up is reserved it takes them, the hint first.
func TestUpstreamRangeComesLast(t *testing.T) {
	ctx := testenv.Context(t)
	r := memory.New()
	for i := 0; i < 200; i++ {
		h, err := Acquire(ctx, r, session(t, r), fmt.Sprintf("node-%d", i), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if h.WorkerID < UpstreamRange {
			t.Fatalf("node %d took worker id %d below UpstreamRange (%d) while ids above were free", i, h.WorkerID, UpstreamRange)
		}
	}
	setHint := func(inst string, id int) {
		key, _ := paths.WorkerIDHint(inst)
		if _, err := r.Put(ctx, key, []byte(strconv.Itoa(id))); err != nil {
			t.Fatal(err)
		}
	}
	setHint("stable-1", 5)
	h, err := Acquire(ctx, r, session(t, r), "stable-1", Options{Stable: true})
	if err != nil {
		t.Fatal(err)
	}
	if h.WorkerID < UpstreamRange {
		t.Fatalf("stable instance took its hinted id %d below UpstreamRange while ids above were free", h.WorkerID)
	}
	for id := UpstreamRange; id < Count; id++ {
		key, _ := paths.Reservation(id)
		if _, err := r.Put(ctx, key, []byte("filler")); err != nil {
			t.Fatal(err)
		}
	}
	setHint("stable-2", 5)
	if h, err := Acquire(ctx, r, session(t, r), "stable-2", Options{Stable: true}); err != nil || h.WorkerID != 5 {
		t.Fatalf("with every id from UpstreamRange up reserved, stable instance got %+v, %v; want its hinted id 5", h, err)
	}
	if h, err := Acquire(ctx, r, session(t, r), "late", Options{}); err != nil || h.WorkerID >= UpstreamRange {
		t.Fatalf("with every id from UpstreamRange up reserved, got %+v, %v; want an id below %d", h, err, UpstreamRange)
	}
}
