package workerid

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestAmbiguousRenewalIsReadAgainWithItsOwnDeadline: a renewal whose
// commit landed but whose answer was lost, followed by one whose failed
// condition (the landed write) answers only after its context's deadline,
// is resolved by a re-read with a deadline of its own: the holder adopts
// its write and is not lost. When the fence was taken meanwhile the
// re-read says lost; when the re-read itself fails the outcome stays
// unknown and the limit stays the last committed one.
func TestAmbiguousRenewalIsReadAgainWithItsOwnDeadline(t *testing.T) {
	ctx := testenv.Context(t)
	const (
		pass = iota
		landLoseAnswer
		failAfterDeadline
		failReads
	)
	var phase atomic.Int32
	r := fault.Observe(memory.New(), fault.HookFunc(func(ctx context.Context, op, key string) (func(error) error, error) {
		switch {
		case op == "commit" && phase.Load() == landLoseAnswer:
			return func(err error) error {
				if err == nil {
					return &registry.OpError{Op: op, Key: key, Err: context.DeadlineExceeded}
				}
				return err
			}, nil
		case op == "commit" && phase.Load() == failAfterDeadline:
			return func(err error) error {
				<-ctx.Done()
				return err
			}, nil
		case op == "get" && phase.Load() == failReads:
			return nil, &registry.OpError{Op: op, Key: key, Err: registry.ErrUnavailable}
		}
		return nil, nil
	}))
	acquire := func(inst string) *Holding {
		t.Helper()
		s, err := r.NewSession(ctx, registry.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		h, err := Acquire(ctx, r, s, inst, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// reserveAmbiguously commits until with a lost answer, then renews
	// to next with a condition that fails after the period's deadline.
	reserveAmbiguously := func(h *Holding, until, next int64) error {
		t.Helper()
		phase.Store(landLoseAnswer)
		if err := h.Reserve(ctx, until); err == nil || errors.Is(err, ErrLost) {
			t.Fatalf("a renewal whose answer was lost: %v, want an unknown outcome", err)
		}
		phase.Store(failAfterDeadline)
		period, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		defer phase.Store(pass)
		return h.Reserve(period, next)
	}

	h := acquire("i")
	if err := reserveAmbiguously(h, 1000, 2000); errors.Is(err, ErrLost) {
		t.Fatalf("the renewal after a landed one, answered after its deadline: %v; the holder's own write was not adopted", err)
	}
	if got := h.ReservedUntil(); got < 1000 {
		t.Fatalf("limit %d after adopting the landed 1000", got)
	}
	if err := h.Reserve(ctx, 3000); err != nil || h.ReservedUntil() != 3000 {
		t.Fatalf("the next renewal: %v, limit %d", err, h.ReservedUntil())
	}

	// The fence is someone else's now: the re-read says lost.
	fk, _ := paths.Fence(h.WorkerID)
	phase.Store(landLoseAnswer)
	if err := h.Reserve(ctx, 4000); err == nil || errors.Is(err, ErrLost) {
		t.Fatalf("a renewal whose answer was lost: %v", err)
	}
	phase.Store(pass)
	if _, err := r.Put(ctx, fk, Fence{Epoch: h.Epoch + 1, Holder: "other", ReservedUntil: 9000}.encode()); err != nil {
		t.Fatal(err)
	}
	if err := h.Reserve(ctx, 5000); !errors.Is(err, ErrLost) {
		t.Fatalf("a renewal after another holder took the fence: %v, want ErrLost", err)
	}

	// The re-read cannot answer: unknown, the last committed limit kept.
	h2 := acquire("j")
	if err := h2.Reserve(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	phase.Store(landLoseAnswer)
	if err := h2.Reserve(ctx, 2000); err == nil || errors.Is(err, ErrLost) {
		t.Fatalf("a renewal whose answer was lost: %v", err)
	}
	phase.Store(failReads)
	err := h2.Reserve(ctx, 3000)
	phase.Store(pass)
	if err == nil || errors.Is(err, ErrLost) || h2.ReservedUntil() != 1000 {
		t.Fatalf("a renewal whose re-read failed: %v, limit %d; want an unknown outcome and the limit 1000", err, h2.ReservedUntil())
	}
	if err := h2.Reserve(ctx, 3000); err != nil || h2.ReservedUntil() != 3000 {
		t.Fatalf("the next renewal: %v, limit %d", err, h2.ReservedUntil())
	}
}
