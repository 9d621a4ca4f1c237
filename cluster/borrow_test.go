package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/workerid"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// TestBorrowNeverPastTheReservation: a node whose MaxBorrow is longer than
// its reservation, cut off from the registry so that the reservation can
// no longer be renewed, borrows up to the committed reservation and no
// further: a burst that needs more stops with an error, and no key is
// stamped past the reservation committed in the registry.
func TestBorrowNeverPastTheReservation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store := memory.New()
	repo := fault.Wrap(store, nil)
	sf := snowflake.DefaultConfig()
	sf.MaxBorrow = 10 * time.Second
	node, err := cluster.Open(ctx, repo, cluster.Config{InstanceID: "borrower", Reservation: 300 * time.Millisecond, Snowflake: sf, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close(context.WithoutCancel(ctx))
	if _, err := node.NextID(ctx); err != nil {
		t.Fatal(err)
	}
	repo.SetPlan(func(op, key string) fault.Action {
		return fault.Action{Err: fmt.Errorf("%w: partitioned (test)", registry.ErrUnavailable)}
	})
	time.Sleep(100 * time.Millisecond) // a renewal already under way lands
	fk, err := paths.Fence(node.WorkerID())
	if err != nil {
		t.Fatal(err)
	}
	kv, err := store.Get(ctx, fk)
	if err != nil {
		t.Fatal(err)
	}
	fence, err := workerid.DecodeFence(kv.Value)
	if err != nil {
		t.Fatal(err)
	}

	// The reservation covers at most 300 ms, 1.2M keys: ask for 3M.
	var keys []int64
	for len(keys) < 3_000_000 {
		bctx, bcancel := context.WithTimeout(ctx, time.Second)
		keys, err = node.AppendIDs(bctx, keys, 10000)
		bcancel()
		if err != nil {
			break
		}
	}
	if err == nil || !(errors.Is(err, cluster.ErrNotIssuing) || errors.Is(err, snowflake.ErrReservationExpired)) {
		t.Fatalf("a burst of %d keys past the reservation: err = %v, want ErrNotIssuing or ErrReservationExpired", len(keys), err)
	}
	last := snowflake.Decompose(keys[len(keys)-1]).Millis + snowflake.DefaultEpochMillis
	if last > fence.ReservedUntil {
		t.Fatalf("key stamped %d ms, past the committed reservation %d ms", last, fence.ReservedUntil)
	}
	t.Logf("%d keys up to %d ms, %d ms before the reservation's end; then %v", len(keys), last, fence.ReservedUntil-last, err)
}
