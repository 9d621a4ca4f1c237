package fault_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/registry/registrytest"
)

// The wrapper with no plan is a faithful registry: it passes the suite.
func TestConformanceWithoutFaults(t *testing.T) {
	stores := map[string]*memory.Repo{}
	registrytest.Run(t, registrytest.Harness{
		New: func(t *testing.T, ns string) registry.Repository {
			if _, ok := stores[ns]; !ok {
				stores[ns] = memory.New()
			}
			return fault.Wrap(stores[ns].Clone(), nil)
		},
		ExpireSession: func(t *testing.T, s registry.Session) {
			if !memory.Expire(s.(*fault.Session).Unwrap()) {
				t.Fatal("not a live memory session")
			}
		},
		LoseWatches: func(t *testing.T, r registry.Repository) {
			r.(*fault.Repo).Unwrap().(*memory.Repo).DropWatches()
		},
	})
}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	inner := memory.New()
	boom := errors.New("boom")
	r := fault.Wrap(inner, func(op, key string) fault.Action {
		switch {
		case op == "put" && strings.HasPrefix(key, "/fail"):
			return fault.Action{Err: boom}
		case op == "put" && strings.HasPrefix(key, "/lost"):
			return fault.Action{LoseResponse: true}
		case op == "get" && key == "/slow":
			return fault.Action{Delay: time.Hour}
		}
		return fault.Action{}
	})
	if _, err := r.Put(ctx, "/fail/x", []byte("v")); !errors.Is(err, boom) {
		t.Fatalf("injected error: %v", err)
	}
	if ok, _ := registry.Exists(ctx, inner, "/fail/x"); ok {
		t.Fatal("a failed put was written")
	}
	if _, err := r.Put(ctx, "/lost/x", []byte("v")); !errors.Is(err, registry.ErrUnavailable) {
		t.Fatalf("lost response: %v", err)
	}
	if ok, _ := registry.Exists(ctx, inner, "/lost/x"); !ok {
		t.Fatal("a put with a lost response was not written")
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := r.Get(short, "/slow"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("delay bounded by ctx: %v", err)
	}
	s, err := r.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.SetPlan(func(op, key string) fault.Action {
		if op == "create-ephemeral" {
			return fault.Action{Err: registry.ErrUnavailable}
		}
		return fault.Action{}
	})
	if err := s.CreateExclusiveEphemeral(ctx, "/reservation/worker_id/1", nil); !errors.Is(err, registry.ErrUnavailable) {
		t.Fatalf("session fault: %v", err)
	}
}
