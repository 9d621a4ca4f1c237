package registrytest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// shortTTL is the session TTL used where the suite waits for an expiry.
const shortTTL = 2 * time.Second

func testEphemeral(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r1, r2 := e.open(), e.open()
	s := e.session(r1, 0)
	c := testenv.Context(t)
	if s.ID() == "" {
		t.Fatal("session ID is empty")
	}
	if s.Err() != nil || closed(s.Done()) {
		t.Fatalf("new session already done: %v", s.Err())
	}
	if err := s.PutEphemeral(c, "/nodes/compute_nodes/online/proxy/i1", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEphemeral(c, "/nodes/compute_nodes/online/proxy/i1", []byte("b")); err != nil {
		t.Fatalf("PutEphemeral overwrite: %v", err)
	}
	if got := mustGet(t, r2, "/nodes/compute_nodes/online/proxy/i1"); string(got.Value) != "b" {
		t.Fatalf("second client sees %q, want b", got.Value)
	}
	kids, err := r2.Children(c, "/nodes/compute_nodes/online/proxy")
	if err != nil || len(kids) != 1 || kids[0] != "i1" {
		t.Fatalf("Children = %v, %v", kids, err)
	}
	if err := s.CreateExclusiveEphemeral(c, "/reservation/worker_id/7", []byte("i1")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "CreateExclusiveEphemeral by the holder again",
		s.CreateExclusiveEphemeral(c, "/reservation/worker_id/7", []byte("i1")), registry.ErrExists)
	// A persistent key blocks an exclusive create too.
	mustPut(t, r1, "/reservation/worker_id/8", "persistent")
	wantErr(t, "CreateExclusiveEphemeral over a persistent key",
		s.CreateExclusiveEphemeral(c, "/reservation/worker_id/8", []byte("i1")), registry.ErrExists)
}

func testSessionClose(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r1, r2 := e.open(), e.open()
	s := e.session(r1, 0)
	c := testenv.Context(t)
	mustPut(t, r1, "/persistent", "stays")
	for _, k := range []string{"/eph/a", "/eph/b/c"} {
		if err := s.PutEphemeral(c, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateExclusiveEphemeral(c, "/eph/excl", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(c); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-s.Done():
	case <-time.After(Timeout):
		t.Fatal("Done not closed after Close")
	}
	if err := s.Err(); !errors.Is(err, registry.ErrClosed) {
		t.Fatalf("Err after Close = %v, want ErrClosed", err)
	}
	// Close returns once the ephemerals are gone: no polling needed.
	for _, k := range []string{"/eph/a", "/eph/b/c", "/eph/excl"} {
		if exists(t, r2, k) {
			t.Fatalf("ephemeral %s survived session Close", k)
		}
	}
	if !exists(t, r2, "/persistent") {
		t.Fatal("session Close removed a persistent key")
	}
	if err := s.Close(c); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.PutEphemeral(c, "/eph/late", []byte("x")); err == nil {
		t.Fatal("PutEphemeral on a closed session succeeded")
	}
	if exists(t, r2, "/eph/late") {
		t.Fatal("a closed session wrote an ephemeral")
	}
}

// Closing a client ends the sessions still open on it as the caller's own
// close, never as an expiry: an owner watching Done must not take its own
// shutdown for a lost lease and try to register again.
func testRepoCloseEndsSessions(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r1, r2 := e.open(), e.open()
	s := e.session(r1, 0)
	c := testenv.Context(t)
	if err := s.PutEphemeral(c, "/eph/a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := r1.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !closed(s.Done()) {
		t.Fatal("session Done still open after its client's Close returned")
	}
	if err := s.Err(); !errors.Is(err, registry.ErrClosed) || errors.Is(err, registry.ErrSessionExpired) {
		t.Fatalf("session Err after its client's Close = %v, want ErrClosed", err)
	}
	wantErr(t, "PutEphemeral after the client's Close",
		s.PutEphemeral(c, "/eph/late", []byte("x")), registry.ErrClosed)
	if exists(t, r2, "/eph/late") {
		t.Fatal("a session of a closed client wrote an ephemeral")
	}
	if err := s.Close(c); err != nil {
		t.Fatalf("session Close after its client's Close: %v", err)
	}
}

func testSessionExpiry(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r1, r2 := e.open(), e.open()
	s := e.session(r1, shortTTL)
	other := e.session(r2, 0)
	c := testenv.Context(t)
	if err := s.PutEphemeral(c, "/nodes/compute_nodes/status/i1", []byte("OK")); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateExclusiveEphemeral(c, "/reservation/worker_id/3", []byte("i1")); err != nil {
		t.Fatal(err)
	}
	if err := other.PutEphemeral(c, "/nodes/compute_nodes/status/i2", []byte("OK")); err != nil {
		t.Fatal(err)
	}
	h.ExpireSession(t, s)
	select {
	case <-s.Done():
	case <-time.After(Timeout):
		t.Fatalf("Done not closed %v after the registry expired the session", Timeout)
	}
	if err := s.Err(); !errors.Is(err, registry.ErrSessionExpired) {
		t.Fatalf("Err after expiry = %v, want ErrSessionExpired", err)
	}
	testenv.Eventually(t, "ephemerals of the expired session to vanish", func() bool {
		return !exists(t, r2, "/nodes/compute_nodes/status/i1") && !exists(t, r2, "/reservation/worker_id/3")
	})
	if !exists(t, r2, "/nodes/compute_nodes/status/i2") {
		t.Fatal("expiring one session removed another session's ephemeral")
	}
	// The expired session stays dead: no silent reconnect that writes again.
	if err := s.PutEphemeral(c, "/nodes/compute_nodes/status/i1", []byte("OK")); err == nil {
		t.Fatal("PutEphemeral on an expired session succeeded")
	}
	if exists(t, r2, "/nodes/compute_nodes/status/i1") {
		t.Fatal("an expired session wrote an ephemeral")
	}
	// The id is free for someone else now.
	if err := other.CreateExclusiveEphemeral(c, "/reservation/worker_id/3", []byte("i2")); err != nil {
		t.Fatalf("reservation not free after expiry: %v", err)
	}
	// A new session on the same client works.
	s2 := e.session(r1, 0)
	if err := s2.PutEphemeral(c, "/nodes/compute_nodes/status/i1", []byte("OK")); err != nil {
		t.Fatal(err)
	}
}

func testExclusiveEphemeralRace(t *testing.T, h Harness) {
	e := newEnv(t, h)
	c := testenv.Context(t)
	winner := race(t, e, 50, func(s registry.Session, me string) error {
		return s.CreateExclusiveEphemeral(c, "/reservation/worker_id/42", []byte(me))
	})
	if got := mustGet(t, e.open(), "/reservation/worker_id/42"); string(got.Value) != winner {
		t.Fatalf("stored holder %q, winner %q", got.Value, winner)
	}
}

// race runs try from perSession goroutines on each of 2 sessions at once
// and checks that exactly one succeeds and the others get ErrExists. It
// returns the winner's name ("s{session}-g{goroutine}").
func race(t *testing.T, e *env, perSession int, try func(s registry.Session, me string) error) string {
	t.Helper()
	sessions := []registry.Session{e.session(e.open(), 0), e.session(e.open(), 0)}
	var wins atomic.Int32
	var winner atomic.Value
	var wg sync.WaitGroup
	errs := make(chan error, len(sessions)*perSession)
	start := make(chan struct{})
	for i, s := range sessions {
		for g := 0; g < perSession; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				me := fmt.Sprintf("s%d-g%d", i, g)
				switch err := try(s, me); {
				case err == nil:
					wins.Add(1)
					winner.Store(me)
				case !isExists(err):
					errs <- err
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("unexpected error in race: %v", err)
	}
	if n := wins.Load(); n != 1 {
		t.Fatalf("%d winners, want exactly 1", n)
	}
	return winner.Load().(string)
}

func isExists(err error) bool {
	var op *registry.OpError
	return err != nil && errors.Is(err, registry.ErrExists) && errors.As(err, &op)
}
