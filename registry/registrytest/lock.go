package registrytest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

func testLock(t *testing.T, h Harness) {
	e := newEnv(t, h)
	s1, s2 := e.session(e.open(), 0), e.session(e.open(), 0)
	c := testenv.Context(t)
	const key = "/lock/exclusive/metadata"

	l1, err := s1.Lock(c, key)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if l1.Key() != key {
		t.Fatalf("Key() = %q", l1.Key())
	}

	// A second locker times out with the context's error.
	short, cancel := context.WithTimeout(c, 200*time.Millisecond)
	_, err = s2.Lock(short, key)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock while held: got %v, want context.DeadlineExceeded", err)
	}
	// A cancelled context gives context.Canceled.
	cc, cancel := context.WithCancel(c)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err = s2.Lock(cc, key)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with cancelled ctx: got %v, want context.Canceled", err)
	}

	// Unlock lets a waiter through.
	got := make(chan error, 1)
	var l2 registry.Lock
	go func() {
		var err error
		l2, err = s2.Lock(c, key)
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("waiter acquired a held lock (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := l1.Unlock(c); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(Timeout):
		t.Fatal("waiter not let through after Unlock")
	}
	wantErr(t, "second Unlock", l1.Unlock(c), registry.ErrLockNotHeld)
	if err := l2.Unlock(c); err != nil {
		t.Fatal(err)
	}

	// Locks on different keys are independent, including name-prefix siblings.
	a, err := s1.Lock(c, "/lock/db1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s2.TryLock(c, "/lock/db10")
	if err != nil {
		t.Fatalf("TryLock on a sibling key: %v", err)
	}
	_ = a.Unlock(c)
	_ = b.Unlock(c)
}

func testTryLock(t *testing.T, h Harness) {
	e := newEnv(t, h)
	s1, s2 := e.session(e.open(), 0), e.session(e.open(), 0)
	c := testenv.Context(t)
	const key = "/lock/try"
	l, err := s1.TryLock(c, key)
	if err != nil {
		t.Fatalf("TryLock on a free lock: %v", err)
	}
	_, err = s2.TryLock(c, key)
	wantErr(t, "TryLock while held", err, registry.ErrLocked)
	_, err = s1.TryLock(c, key)
	wantErr(t, "TryLock by the holder's session", err, registry.ErrLocked)
	if err := l.Unlock(c); err != nil {
		t.Fatal(err)
	}
	l2, err := s2.TryLock(c, key)
	if err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
	_ = l2.Unlock(c)
}

func testLockReleasedByExpiry(t *testing.T, h Harness) {
	e := newEnv(t, h)
	s1 := e.session(e.open(), shortTTL)
	s2 := e.session(e.open(), 0)
	c := testenv.Context(t)
	const key = "/lock/expiry"
	if _, err := s1.Lock(c, key); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := s2.Lock(c, key)
		if err == nil {
			defer l.Unlock(context.Background())
		}
		got <- err
	}()
	h.ExpireSession(t, s1)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter after holder expiry: %v", err)
		}
	case <-time.After(Timeout):
		t.Fatal("lock not released by the holder's session expiry")
	}
	select {
	case <-s1.Done():
	case <-time.After(Timeout):
		t.Fatal("expired holder's Done not closed")
	}
}
