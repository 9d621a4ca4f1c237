package clusterlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

func state(t testing.TB, repo registry.Repository) string {
	t.Helper()
	s, err := State(testenv.Context(t), repo)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLockUnlock(t *testing.T) {
	realtest.Each(t, "sk_clusterlock_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo := open(t)
		if err := Unlock(ctx, repo, Op{}); err != ErrNotLocked {
			t.Fatalf("UNLOCK of an unlocked cluster: %v, want 15031", err)
		}
		if _, err := repo.Get(ctx, paths.ClusterState); !errors.Is(err, registry.ErrNotFound) {
			t.Fatalf("a refused UNLOCK wrote the state: %v", err)
		}
		if _, err := Lock(ctx, repo, "SHARED", Op{}); err == nil {
			t.Fatal("LOCK with an unknown strategy succeeded")
		}
		got, err := Lock(ctx, repo, "write", Op{})
		if err != nil || got != StateReadOnly || state(t, repo) != StateReadOnly {
			t.Fatalf("LOCK WRITE = %q, %v; state %q", got, err, state(t, repo))
		}
		if _, err := Lock(ctx, repo, "READ_WRITE", Op{}); err != ErrLocked {
			t.Fatalf("LOCK of a locked cluster: %v, want 15030", err)
		}
		if state(t, repo) != StateReadOnly {
			t.Fatal("a refused LOCK changed the state")
		}
		if err := Unlock(ctx, repo, Op{}); err != nil || state(t, repo) != StateOK {
			t.Fatalf("UNLOCK: %v, state %q", err, state(t, repo))
		}
		if got, err := Lock(ctx, repo, "READ_WRITE", Op{Layout: paths.Layout552}); err != nil || got != StateUnavailable {
			t.Fatalf("LOCK READ_WRITE (5.5.2 layout) = %q, %v", got, err)
		}
	})
}

// Concurrent LOCKs from many clients: exactly one wins, the others are
// told the cluster is locked.
func TestLockRace(t *testing.T) {
	realtest.Each(t, "sk_clusterlock_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		const n = 6
		repos := make([]registry.Repository, n)
		for i := range repos {
			repos[i] = open(t)
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = Lock(ctx, repos[i], "WRITE", Op{Timeout: 20 * time.Second})
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch err {
			case nil:
				won++
			case ErrLocked:
			default:
				t.Errorf("LOCK: %v", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d LOCKs succeeded, want exactly 1 (%v)", won, errs)
		}
	})
}

// A lock held elsewhere for longer than the timeout: LOCK gives up with a
// BusyError and writes nothing.
func TestLockBusy(t *testing.T) {
	realtest.Each(t, "sk_clusterlock_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		holder := open(t)
		sess, err := holder.NewSession(ctx, registry.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close(context.Background())
		l, err := sess.Lock(ctx, paths.DefaultLayout.ClusterLock())
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(context.Background())
		repo := open(t)
		_, err = Lock(ctx, repo, "WRITE", Op{Timeout: 300 * time.Millisecond})
		var busy *BusyError
		if !errors.As(err, &busy) {
			t.Fatalf("LOCK while the lock is held: %v, want BusyError", err)
		}
		if state(t, repo) != StateOK {
			t.Fatal("a LOCK that did not get the lock changed the state")
		}
	})
}
