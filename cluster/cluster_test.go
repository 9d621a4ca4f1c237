package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/workerid"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// TestExhausted fills every worker id: Open then fails with
// ShardingSphere's WorkerIdAssignedException (code 17001, SQL state HY000,
// same text), which matches ErrExhausted.
func TestExhausted(t *testing.T) {
	ctx := context.Background()
	repo := memory.New()
	defer repo.Close()
	for id := 0; id <= paths.MaxWorkerID; id++ {
		key, _ := paths.Reservation(id)
		if _, err := repo.Put(ctx, key, []byte("filler")); err != nil {
			t.Fatal(err)
		}
	}
	n, err := Open(ctx, repo, Config{InstanceID: "late"})
	if err == nil {
		n.Close(ctx)
		t.Fatal("Open on a full cluster succeeded")
	}
	if !errors.Is(err, ErrExhausted) {
		t.Errorf("errors.Is(%v, ErrExhausted) = false", err)
	}
	var ex *ExhaustedError
	if !errors.As(err, &ex) {
		t.Fatalf("Open's error %T is not an *ExhaustedError", err)
	}
	if ex.Code != 17001 || ex.SQLState != "HY000" || ex.Error() != "Worker ID assigned failed, which should be in [0, 1024)." {
		t.Errorf("ExhaustedError = %+v, want ShardingSphere's code 17001, HY000 and message", ex)
	}
	var refused *sqlerr.Error // what the consoles and the HTTP API answer with its code
	if !errors.As(err, &refused) || refused.Code != 17001 {
		t.Errorf("Open's error %#v is not the coded refusal the front ends map", err)
	}
	ex.Message = "changed by the caller"
	if again := exhausted(); again.Message == ex.Message || workerid.ErrExhausted.Message == ex.Message {
		t.Errorf("a caller's change to Open's error changed ErrExhausted")
	}
	if wrapped := fmt.Errorf("start: %w", err); !errors.Is(wrapped, ErrExhausted) {
		t.Errorf("a wrapped ExhaustedError does not match ErrExhausted")
	}
	if errors.Is(ErrNotIssuing, ErrExhausted) {
		t.Errorf("ErrNotIssuing matches ErrExhausted")
	}
}

// TestEventsAndInstances checks what a caller sees of a node: the audit
// trail through OnEvent, the membership and the counters.
func TestEventsAndInstances(t *testing.T) {
	ctx := context.Background()
	repo := memory.New()
	defer repo.Close()
	events := make(chan Event, 64)
	n, err := Open(ctx, repo, Config{InstanceID: "wrapped", Port: 3307, OnEvent: func(e Event) {
		select {
		case events <- e:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ks, err := n.NextIDs(ctx, 10)
	if err != nil || len(ks) != 10 {
		t.Fatalf("NextIDs = %d keys, %v", len(ks), err)
	}
	for {
		list, changed := n.InstancesChanged()
		if len(list) == 1 {
			if in := list[0]; in.ID != "wrapped" || in.Type != TypeProxy || in.Port != 3307 || in.WorkerID != n.WorkerID() {
				t.Fatalf("instance = %+v", in)
			}
			break
		}
		<-changed
	}
	if s := n.Stats(); s.Keys != 10 || s.WorkerID != n.WorkerID() || !s.Issuing {
		t.Errorf("Stats = %+v", s)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	close(events)
	var kinds []EventKind
	for e := range events {
		if e.WorkerID != int(snowflake.Decompose(ks[0]).WorkerID) {
			t.Errorf("event %+v for another worker id than the keys'", e)
		}
		kinds = append(kinds, e.Kind)
	}
	if len(kinds) < 3 || kinds[0] != EventAcquired || kinds[1] != EventReserved || kinds[len(kinds)-1] != EventReleased {
		t.Errorf("events = %v, want acquired, reserved, ..., released", kinds)
	}
}
