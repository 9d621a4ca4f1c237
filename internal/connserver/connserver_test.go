package connserver_test

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/connserver"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestCapCloseAndDrain: connections past Max are refused, the admitted
// ones are served until Close cancels them, and Serve returns
// ErrServerClosed.
func TestCapCloseAndDrain(t *testing.T) {
	served := make(chan struct{}, 2)
	s := connserver.New(connserver.Config{
		Name: "test", Max: 2,
		Serve: func(ctx context.Context, nc net.Conn) {
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
