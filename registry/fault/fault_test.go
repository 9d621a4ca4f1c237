package fault_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
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

func TestCounterCountsEveryCall(t *testing.T) {
	ctx := context.Background()
	c := fault.Count(memory.New())
	if !registry.ListIsRangeRead(c) {
		t.Fatal("the counter hides the backend's range reads")
	}
	c.Put(ctx, "/a", []byte("1"))
	c.Get(ctx, "/a")
	c.Get(ctx, "/missing")
	s, _ := c.NewSession(ctx, registry.SessionOptions{})
	s.PutEphemeral(ctx, "/e", nil)
	l, _ := s.Lock(ctx, "/l")
	l.Unlock(ctx)
	s.Close(ctx)
	want := map[string]int64{"put": 1, "get": 2, "session": 1, "put-ephemeral": 1, "lock": 1, "unlock": 1, "session-close": 1}
	for op, n := range c.Counts() {
		if n != want[op] {
			t.Errorf("%s counted %d, want %d", op, n, want[op])
		}
	}
	if c.Total() != 8 {
		t.Errorf("total %d, want 8", c.Total())
	}
}

type eventCounter struct {
	fault.HookFunc
	n atomic.Int64
}

func (e *eventCounter) Event(string, registry.Event) { e.n.Add(1) }

func TestObserverSeesWatchEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inner := memory.New()
	obs := &eventCounter{HookFunc: func(context.Context, string, string) (func(error) error, error) { return nil, nil }}
	r := fault.Observe(inner, obs)
	_, ch, err := r.Watch(ctx, "/w")
	if err != nil {
		t.Fatal(err)
	}
	inner.Put(ctx, "/w/x", []byte("1"))
	if ev := <-ch; ev.KV.Key != "/w/x" {
		t.Fatalf("event %+v", ev)
	}
	if obs.n.Load() != 1 {
		t.Fatalf("observer saw %d events", obs.n.Load())
	}
}
