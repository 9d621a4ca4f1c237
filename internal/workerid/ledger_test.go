package workerid

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

func testLedgerMakesMissingFenceUnknown(t *testing.T, b backend) {
	ctx := testenv.Context(t)
	r := b.open(t)
	s := session(t, r)
	h, err := Acquire(ctx, r, s, "first", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Floor != 0 || h.Epoch != 1 {
		t.Fatalf("first holding on a fresh cluster = %+v, want floor 0, epoch 1", h)
	}
	if ok, err := EnsureLedger(ctx, r, s, "first", Options{}); err != nil || !ok {
		t.Fatalf("EnsureLedger = %v, %v; want true", ok, err)
	}
	names, err := r.Children(ctx, paths.FenceRoot)
	if err != nil || len(names) != Count {
		t.Fatalf("fences after the ledger: %d (%v), want %d", len(names), err, Count)
	}
	if _, err := r.Get(ctx, paths.Ledger); err != nil {
		t.Fatalf("ledger: %v", err)
	}
	// A never-claimed id has a fence at epoch 0 and floor 0: fast.
	fill(t, r, 9)
	h9, err := Acquire(ctx, r, session(t, r), "second", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h9.WorkerID != 9 || h9.Floor != 0 || h9.Epoch != 1 {
		t.Fatalf("claim of a pre-created fence = %+v, want id 9, floor 0, epoch 1", h9)
	}
	// A deleted fence is unknown, not unused.
	res9, _ := paths.Reservation(9)
	fk9, _ := paths.Fence(9)
	if err := r.Delete(ctx, res9); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, fk9); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	h, err = Acquire(ctx, r, session(t, r), "third", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.WorkerID != 9 || h.Floor < before+unknownFloorAhead.Milliseconds() {
		t.Fatalf("claim of a deleted fence = %+v, want id 9 with floor >= %d", h, before+unknownFloorAhead.Milliseconds())
	}
}

func testLedgerCreatedOnce(t *testing.T, b backend) {
	ctx := testenv.Context(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		r := b.open(t)
		s := session(t, r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst := "n" + strconv.Itoa(i)
			if _, err := Acquire(ctx, r, s, inst, Options{}); err != nil {
				errs[i] = err
				return
			}
			_, errs[i] = EnsureLedger(ctx, r, s, inst, Options{})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	r := b.open(t)
	// Whoever held the lock may still be finishing: wait for the ledger.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := r.Get(ctx, paths.Ledger); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no ledger")
		}
		time.Sleep(20 * time.Millisecond)
	}
	kvs, err := r.List(ctx, paths.FenceRoot)
	if err != nil {
		t.Fatal(err)
	}
	claimed := 0
	for _, kv := range kvs {
		f, err := decodeFence(kv.Value)
		if err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
		if f.Epoch == 1 {
			claimed++
		} else if f.Epoch != 0 || f.ReservedUntil != 0 {
			t.Fatalf("%s = %+v, want a blank fence at floor 0 on a fresh cluster", kv.Key, f)
		}
	}
	if len(kvs) != Count || claimed != len(errs) {
		t.Fatalf("%d fences, %d claimed; want %d and %d", len(kvs), claimed, Count, len(errs))
	}
}

func testHintNotPreferredFarAhead(t *testing.T, b backend) {
	ctx := testenv.Context(t)
	r := b.open(t)
	s := session(t, r)
	h, err := Acquire(ctx, r, s, "stable", Options{Stable: true})
	if err != nil {
		t.Fatal(err)
	}
	// The holder reserved a minute ahead, then its session ended.
	if err := h.Reserve(ctx, time.Now().UnixMilli()+60_000); err != nil {
		t.Fatal(err)
	}
	b.expire(t, s)
	waitGone(t, r, h.WorkerID)
	h2, err := Acquire(ctx, r, session(t, r), "stable", Options{Stable: true})
	if err != nil {
		t.Fatal(err)
	}
	if h2.WorkerID == h.WorkerID {
		t.Fatalf("took the hinted id %d whose floor is a minute ahead while other ids were free", h.WorkerID)
	}
}

func waitGone(t *testing.T, r registry.Repository, id int) {
	t.Helper()
	res, _ := paths.Reservation(id)
	testenv.Eventually(t, fmt.Sprintf("reservation %d to go", id), func() bool {
		_, err := r.Get(testenv.Context(t), res)
		return errors.Is(err, registry.ErrNotFound)
	})
}

func testWatchSeesForeignChange(t *testing.T, b backend) {
	for _, change := range []string{"fence overwritten", "fence deleted", "reservation deleted", "own renewals only"} {
		t.Run(change, func(t *testing.T) {
			ctx := testenv.Context(t)
			r := b.open(t)
			h, err := Acquire(ctx, r, session(t, r), "w", Options{})
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- h.Watch(wctx) }()
			time.Sleep(100 * time.Millisecond) // let the watch start
			for i := 1; i <= 3; i++ {
				if err := h.Reserve(ctx, int64(i)*1000); err != nil {
					t.Fatal(err)
				}
			}
			other := b.open(t)
			fk, _ := paths.Fence(h.WorkerID)
			res, _ := paths.Reservation(h.WorkerID)
			switch change {
			case "fence overwritten":
				_, err = other.Put(ctx, fk, Fence{Epoch: h.Epoch + 1, Holder: "other"}.encode())
			case "fence deleted":
				err = other.Delete(ctx, fk)
			case "reservation deleted":
				err = other.Delete(ctx, res)
			}
			if err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if change == "own renewals only" || !errors.Is(err, ErrLost) {
					t.Fatalf("Watch = %v after %s", err, change)
				}
			case <-time.After(3 * time.Second):
				if change != "own renewals only" {
					t.Fatalf("Watch did not report %s", change)
				}
			}
		})
	}
}

// TestHostileAbsurdFenceIsCorrupt: a fence reserved past 2086 or days
// ahead, or with an epoch that would wrap, is corrupt: the id is claimed
// with an unknown floor (a minute and some ahead, not years) and a sane
// epoch, and nothing panics.
func TestHostileAbsurdFenceIsCorrupt(t *testing.T) {
	backends := map[string]func() backend{
		"memory": memoryBackend,
		"namesOnly": func() backend {
			b := memoryBackend()
			o := b.open
			b.open = func(t *testing.T) registry.Repository { return namesOnly{o(t)} }
			return b
		},
		"etcd":      etcdBackend(t),
		"zookeeper": zookeeperBackend(t),
	}
	now := time.Now().UnixMilli()
	cases := map[string]string{
		"past 2086":    fmt.Sprintf(`{"epoch":3,"holder":"h","reservedUntil":%d}`, time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()),
		"two days":     fmt.Sprintf(`{"epoch":3,"holder":"h","reservedUntil":%d}`, now+48*3600*1000),
		"epoch MaxInt": fmt.Sprintf(`{"epoch":%d,"holder":"h","reservedUntil":%d}`, int64(math.MaxInt64), now-1000),
		"epoch -5":     fmt.Sprintf(`{"epoch":-5,"holder":"h","reservedUntil":%d}`, now-1000),
		"until MaxInt": fmt.Sprintf(`{"epoch":3,"holder":"h","reservedUntil":%d}`, int64(math.MaxInt64)),
		"not json":     `{"epoch":`,
	}
	for bn, mk := range backends {
		for cn, value := range cases {
			t.Run(bn+"/"+cn, func(t *testing.T) {
				b := mk()
				ctx := testenv.Context(t)
				r := b.open(t)
				fill(t, r, 5)
				fk, _ := paths.Fence(5)
				if _, err := r.Put(ctx, fk, []byte(value)); err != nil {
					t.Fatal(err)
				}
				before := time.Now().UnixMilli()
				h, err := Acquire(ctx, r, session(t, r), "x", Options{})
				if err != nil {
					t.Fatalf("Acquire: %v", err)
				}
				low, high := before+unknownFloorAhead.Milliseconds(), time.Now().UnixMilli()+unknownFloorAhead.Milliseconds()
				if h.WorkerID != 5 || h.Floor < low || h.Floor > high || h.Epoch <= 0 || h.Epoch > maxEpoch {
					t.Fatalf("holding = %+v, want id 5, floor in [%d, %d], epoch in [1, 2^62]", h, low, high)
				}
				if err := h.Reserve(ctx, h.Floor+1000); err != nil {
					t.Fatalf("Reserve: %v", err)
				}
			})
		}
	}
}

// testLedgerDeletedWithFences: `registry rm /reservation --force` while a
// node runs: the node saw the ledger, so it reads the missing fences as
// unknown, and the ledger it creates again gives every fence the unknown
// floor.
func testLedgerDeletedWithFences(t *testing.T, b backend) {
	ctx := testenv.Context(t)
	r := b.open(t)
	s := session(t, r)
	if _, err := Acquire(ctx, r, s, "n", Options{}); err != nil {
		t.Fatal(err)
	}
	if ok, err := EnsureLedger(ctx, r, s, "n", Options{}); err != nil || !ok {
		t.Fatalf("EnsureLedger = %v, %v", ok, err)
	}
	if err := r.Delete(ctx, paths.ReservationTop); err != nil {
		t.Fatal(err)
	}
	s2 := session(t, r)
	before := time.Now().UnixMilli()
	h, err := Acquire(ctx, r, s2, "n", Options{LedgerSeen: true})
	if err != nil {
		t.Fatal(err)
	}
	if h.Floor < before+unknownFloorAhead.Milliseconds() {
		t.Fatalf("after the ledger and fences were deleted: %+v, want an unknown floor", h)
	}
	if ok, err := EnsureLedger(ctx, r, s2, "n", Options{LedgerSeen: true}); err != nil || !ok {
		t.Fatalf("EnsureLedger again = %v, %v", ok, err)
	}
	fk, _ := paths.Fence((h.WorkerID + 1) % Count)
	kv, err := r.Get(ctx, fk)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := decodeFence(kv.Value); err != nil || f.ReservedUntil < before+unknownFloorAhead.Milliseconds() {
		t.Fatalf("fence created again = %+v, %v; want the unknown floor", f, err)
	}
}

// testAllAheadTakesEarliest: when every free id is reserved ahead, Acquire
// reads a bounded number of fences and takes the one that ends first of
// them, rather than giving up.
func testAllAheadTakesEarliest(t *testing.T, b backend) {
	ctx := testenv.Context(t)
	r := b.open(t)
	now := time.Now().UnixMilli()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for id := 0; id < Count; id++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var key, value string
			if id < 40 {
				key, _ = paths.Fence(id)
				value = fmt.Sprintf(`{"epoch":1,"holder":"old","reservedUntil":%d}`, now+20_000+int64(id)*100)
			} else {
				key, _ = paths.Reservation(id)
				value = "filler"
			}
			if _, err := r.Put(ctx, key, []byte(value)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	h, err := Acquire(ctx, r, session(t, r), "late", Options{})
	if err != nil {
		t.Fatalf("Acquire with every free id reserved ahead: %v", err)
	}
	if h.WorkerID >= 40 || h.Floor < now+20_000 {
		t.Fatalf("holding = %+v", h)
	}
}
