package connserver_test

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/connserver"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestCapCloseAndDrain: connections past Max are refused, the admitted
// ones are served until Close cancels them, and Serve returns
// ErrServerClosed.
func TestCapCloseAndDrain(t *testing.T) {
	served := make(chan struct{}, 2)
	var s *connserver.Server
	s = connserver.New(connserver.Config{
		Name: "test", Max: 2,
		Serve: func(ctx context.Context, nc net.Conn) {
			s.LoggedIn(nc)
			served <- struct{}{}
			<-ctx.Done()
		},
		Refuse: func(_ context.Context, nc net.Conn) { _, _ = nc.Write([]byte("full")) },
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		<-served
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(c); string(b) != "full" {
		t.Errorf("third connection got %q, want the refusal", b)
	}
	testenv.Eventually(t, "two connections served", func() bool { return s.Connections() == 2 })
	if err := s.Close(testenv.Context(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, connserver.ErrServerClosed) {
		t.Errorf("Serve returned %v, want ErrServerClosed", err)
	}
	if n := s.Connections(); n != 0 {
		t.Errorf("Connections after Close = %d, want 0", n)
	}
	if err := s.Serve(ln); !errors.Is(err, connserver.ErrServerClosed) {
		t.Errorf("Serve after Close returned %v, want ErrServerClosed", err)
	}
}

// flakyListener fails its first Accept calls with errs, then accepts from
// the wrapped listener.
type flakyListener struct {
	net.Listener
	errs []error
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		return nil, err
	}
	return l.Listener.Accept()
}

// TestAcceptRetriesWhatPasses: EMFILE and ENFILE are retried, another
// accept error ends Serve with it.
func TestAcceptRetriesWhatPasses(t *testing.T) {
	served := make(chan struct{}, 1)
	s := connserver.New(connserver.Config{
		Name: "test", Max: 1,
		Serve:  func(context.Context, net.Conn) { served <- struct{}{} },
		Refuse: func(context.Context, net.Conn) {},
	})
	defer s.Close(context.Background())
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &flakyListener{inner, []error{syscall.EMFILE, syscall.ENFILE}}
	go func() { _ = s.Serve(ln) }()
	c, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-served

	other := &flakyListener{inner, []error{syscall.EINVAL}}
	if err := s.Serve(other); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Serve returned %v, want EINVAL", err)
	}
}

// TestHostilePendingShare: connections that do not log in hold at most
// MaxPending slots, and the oldest of them is closed for a new
// connection, so that idle connections (100 of them locked every login
// out with 1040) never keep a client from logging in.
func TestHostilePendingShare(t *testing.T) {
	var s *connserver.Server
	s = connserver.New(connserver.Config{
		Name: "test", Max: 4, MaxPending: 2,
		Serve: func(ctx context.Context, nc net.Conn) {
			b := make([]byte, 5)
			if _, err := io.ReadFull(nc, b); err != nil || string(b) != "login" {
				return // an idle connection: served until evicted
			}
			if s.LoggedIn(nc) {
				_, _ = nc.Write([]byte("welcome"))
				<-ctx.Done()
			}
		},
		Refuse: func(_ context.Context, nc net.Conn) { _, _ = nc.Write([]byte("full")) },
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	defer s.Close(context.Background())
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	login := func() string {
		c := dial()
		if _, err := c.Write([]byte("login")); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 7)
		n, _ := io.ReadFull(c, b)
		return string(b[:n])
	}
	var idle []net.Conn
	for range 100 {
		idle = append(idle, dial())
	}
	for i := range 4 {
		if got := login(); got != "welcome" {
			t.Fatalf("login %d with 100 idle connections: %q, want welcome", i+1, got)
		}
	}
	testenv.Eventually(t, "four logged-in connections", func() bool { return s.Connections() == 4 })
	// Every slot is logged in: a new connection is refused.
	if b, _ := io.ReadAll(dial()); string(b) != "full" {
		t.Errorf("a connection with every slot logged in got %q, want the refusal", b)
	}
	// The idle connections were closed to make room.
	closed := 0
	for _, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
			closed++
		}
	}
	if closed != len(idle) {
		t.Errorf("%d of %d idle connections closed, want all", closed, len(idle))
	}
}
