// Package connserver is the accept loop shared by the node's console front
// ends (internal/mysqlfront, internal/pgfront): it tracks listeners and
// connections, paces accept while the process is out of file descriptors,
// caps the connections served at once and closes and drains everything on
// Close. The wire protocol is the caller's: a Server hands each accepted
// connection to a function on a goroutine of its own.
//
// Connections that have not logged in yet (the caller says when one has,
// with LoggedIn) share at most Config.MaxPending of the Max slots: when a
// new connection finds them all taken, or finds every slot taken while
// some connection is still logging in, the connection that has been
// logging in longest is closed to make room. Idle connections that never
// log in therefore cannot lock logged-in users out: they hold at most
// MaxPending slots, each only until a newer connection needs it (and the
// caller's handshake deadline).
package connserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/retry"
)

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("server closed")

// Config configures a Server.
type Config struct {
	// Name prefixes the errors and logs of the server, e.g. "mysqlfront".
	Name string
	// Max caps the connections served at once (> 0).
	Max int
	// MaxPending caps, within Max, the connections that have not logged
	// in yet (see LoggedIn); 0 means DefaultPending(Max).
	MaxPending int
	// Serve serves one admitted connection until it ends; ctx is
	// cancelled by Close. The connection is closed after it returns.
	Serve func(ctx context.Context, nc net.Conn)
	// Refuse answers a connection that finds every slot held by a
	// logged-in connection (an error in the protocol, or whatever the
	// protocol lets through a full server); the connection is closed after
	// it returns. It does not count towards Max.
	Refuse func(ctx context.Context, nc net.Conn)
	// Logger receives the accept retries; nil means slog.Default().
	Logger *slog.Logger
}

// Server accepts connections on any number of listeners. Create it with
// New. It is safe for concurrent use.
type Server struct {
	c      Config
	log    *slog.Logger
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	closed      bool
	admitted    int        // connections served (pending ones included), within Max
	pending     []net.Conn // admitted connections not logged in yet, oldest first
	evictLogged time.Time
	lns         map[net.Listener]struct{}
	conns       map[net.Conn]connState
}

// connState is what a tracked connection counts as.
type connState uint8

const (
	statePending  connState = iota + 1 // admitted, logging in
	stateLoggedIn                      // admitted, logged in
	stateOut                           // refused or evicted: counts nowhere
)

// DefaultPending is Config.MaxPending's default for max slots: a quarter,
// at least 1.
func DefaultPending(slots int) int { return max(1, slots/4) }

// New returns a Server for c; it does no I/O. c.Max must be positive,
// c.MaxPending within [0, Max] and c.Serve and c.Refuse set.
func New(c Config) *Server {
	if c.Max <= 0 || c.MaxPending < 0 || c.MaxPending > c.Max || c.Serve == nil || c.Refuse == nil {
		panic(fmt.Sprintf("connserver: %s: Max %d must be positive, MaxPending %d within [0, Max] and Serve and Refuse set", c.Name, c.Max, c.MaxPending))
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultPending(c.Max)
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{c: c, log: log, ctx: ctx, cancel: cancel,
		lns: map[net.Listener]struct{}{}, conns: map[net.Conn]connState{}}
}

// Serve accepts connections on ln and serves each on a goroutine of its
// own until Close, then returns ErrServerClosed. An accept error that
// passes (out of file descriptors or buffers, a timeout) is retried after
// a pause of 5 ms doubling up to 1 s; any other is returned. ln is closed
// when Serve returns.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ln.Close()
		return ErrServerClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.lns, ln)
		s.mu.Unlock()
		_ = ln.Close()
	}()
	var backoff Backoff
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			if backoff.Retry(s.ctx, err) {
				s.log.Warn(s.c.Name+": accept failed; retrying", "err", err, "after", backoff.pause)
				continue
			}
			if s.isClosed() {
				return ErrServerClosed
			}
			return fmt.Errorf("%s: accept: %w", s.c.Name, err)
		}
		backoff.Accepted()
		admitted, ok := s.track(nc)
		if !ok {
			_ = nc.Close()
			return ErrServerClosed
		}
		go func() {
			defer s.wg.Done()
			defer s.untrack(nc)
			if admitted {
				s.c.Serve(s.ctx, nc)
			} else {
				s.c.Refuse(s.ctx, nc)
			}
		}()
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// track records nc so that Close closes it and reports whether it is
// admitted (pending, within Max), after evicting the oldest pending
// connection when the pending share or every slot is taken; ok is false
// after Close.
func (s *Server) track(nc net.Conn) (admitted, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, false
	}
	if len(s.pending) > 0 && (len(s.pending) >= s.c.MaxPending || s.admitted >= s.c.Max) {
		old := s.pending[0]
		s.pending = s.pending[1:]
		s.conns[old] = stateOut
		s.admitted--
		_ = old.Close()
		if now := time.Now(); now.Sub(s.evictLogged) >= time.Second {
			s.evictLogged = now
			s.log.Warn(s.c.Name+": closed the connection logging in longest to make room for a new one (logged at most once a second)",
				"client", old.RemoteAddr().String(), "max_pending", s.c.MaxPending)
		}
	}
	admitted = s.admitted < s.c.Max
	s.conns[nc] = stateOut
	if admitted {
		s.admitted++
		s.conns[nc] = statePending
		s.pending = append(s.pending, nc)
	}
	s.wg.Add(1)
	return admitted, true
}

// LoggedIn marks nc, a connection given to Config.Serve, as logged in: it
// no longer counts towards MaxPending and is never evicted. It reports
// false when nc was evicted (closed) meanwhile, true for a connection s
// does not serve. Safe for concurrent use.
func (s *Server) LoggedIn(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st, tracked := s.conns[nc]; {
	case !tracked:
		return true // not served by s: nothing to account
	case st != statePending:
		return st == stateLoggedIn
	}
	s.conns[nc] = stateLoggedIn
	s.dropPending(nc)
	return true
}

func (s *Server) dropPending(nc net.Conn) {
	for i, c := range s.pending {
		if c == nc {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			return
		}
	}
}

func (s *Server) untrack(nc net.Conn) {
	_ = nc.Close()
	s.mu.Lock()
	switch s.conns[nc] {
	case statePending:
		s.dropPending(nc)
		s.admitted--
	case stateLoggedIn:
		s.admitted--
	}
	delete(s.conns, nc)
	s.mu.Unlock()
}

// Connections returns the number of connections served within Max,
// logged in or logging in.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admitted
}

// Close closes every listener, cancels the ctx of every connection,
// closes the connections and waits, bounded by ctx, until their
// goroutines returned. Idempotent.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for ln := range s.lns {
		_ = ln.Close()
	}
	s.cancel()
	for nc := range s.conns {
		_ = nc.Close()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: connections still open: %w", s.c.Name, ctx.Err())
	}
}

// Backoff paces an accept loop while accept fails for a reason that
// passes. The zero value is ready.
type Backoff struct{ pause time.Duration }

// Retry reports whether err, from Accept, passes: EMFILE, ENFILE, ENOBUFS,
// ENOMEM or a timeout. Then it waits first (5 ms, doubling to 1 s, as
// net/http does), and reports false if ctx ends meanwhile. Other errors
// end serving.
func (b *Backoff) Retry(ctx context.Context, err error) bool {
	var ne net.Error
	if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) &&
		!errors.Is(err, syscall.ENOBUFS) && !errors.Is(err, syscall.ENOMEM) &&
		!(errors.As(err, &ne) && ne.Timeout()) {
		return false
	}
	b.pause = min(max(2*b.pause, 5*time.Millisecond), time.Second)
	return retry.Sleep(ctx, b.pause)
}

// Accepted resets the pause after a successful Accept.
func (b *Backoff) Accepted() { b.pause = 0 }
