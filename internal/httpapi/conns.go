package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Bounds of the HTTP port.
const (
	// DefaultMaxConnections is Config.MaxConnections' default: the
	// connections the port holds at once.
	DefaultMaxConnections = 512
	// HeaderTimeout bounds reading a request's line and headers.
	HeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout is Config.BodyTimeout's default.
	DefaultBodyTimeout = 30 * time.Second
)

// connLimit is the listener of Server.Serve: it holds at most max
// connections at once. A connection waiting for its client (before or
// between requests, or while a request's body arrives) can be closed to
// make room: when a new connection finds every slot taken, the
// connection that has waited longest is closed; when none waits (every
// slot serves a request), the new connection is closed at once, unread.
// So clients that open connections and send nothing, or declare a body
// and never send it, cannot keep others (a probe of /readyz) out.
type connLimit struct {
	net.Listener
	max int
	log *slog.Logger

	mu      sync.Mutex
	conns   map[net.Conn]*heldConn
	logged  time.Time // last eviction or refusal logged
	evicted int       // since logged
	refused int       // since logged
}

// heldConn is one admitted connection.
type heldConn struct {
	waiting bool      // waiting for the client: may be closed for a new connection
	since   time.Time // when it started waiting
}

func newConnLimit(ln net.Listener, maxConns int, log *slog.Logger) *connLimit {
	return &connLimit{Listener: ln, max: maxConns, log: log, conns: map[net.Conn]*heldConn{}}
}

// Accept returns the next connection admitted (see connLimit).
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit(c) {
			return c, nil
		}
		_ = c.Close()
	}
}

// admit records c when there is room, after closing the connection that
// has waited longest when every slot is taken.
func (l *connLimit) admit(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if len(l.conns) >= l.max {
		var oldest net.Conn
		var since time.Time
		for oc, h := range l.conns {
			if h.waiting && (oldest == nil || h.since.Before(since)) {
				oldest, since = oc, h.since
			}
		}
		if oldest == nil {
			l.refused++
			l.logLocked(now)
			return false
		}
		delete(l.conns, oldest)
		_ = oldest.Close()
		l.evicted++
		l.logLocked(now)
	}
	l.conns[c] = &heldConn{waiting: true, since: now}
	return true
}

// logLocked logs the evictions and refusals at most once a second.
func (l *connLimit) logLocked(now time.Time) {
	if now.Sub(l.logged) < time.Second {
		return
	}
	l.log.Warn("http: every connection slot was taken: closed the connections waiting for their clients longest, refused new ones while every slot served a request (logged at most once a second)",
		"closed_waiting", l.evicted, "refused", l.refused, "max_connections", l.max)
	l.logged, l.evicted, l.refused = now, 0, 0
}

// wait marks c as waiting for its client (true) or served (false).
func (l *connLimit) wait(c net.Conn, waiting bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.conns[c]; h != nil && h.waiting != waiting {
		h.waiting, h.since = waiting, time.Now()
	}
}

// connState is http.Server.ConnState: a new or idle connection waits for
// its client, an active one is served (until its body is awaited, see
// boundBody), a closed or hijacked one frees its slot.
func (l *connLimit) connState(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew, http.StateIdle:
		l.wait(c, true)
	case http.StateActive:
		l.wait(c, false)
	case http.StateClosed, http.StateHijacked:
		l.mu.Lock()
		delete(l.conns, c)
		l.mu.Unlock()
	}
}

// held is the number of connections held now.
func (l *connLimit) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

type connKey struct{}

// connContext is http.Server.ConnContext: it keeps the connection in the
// requests' context for boundBody.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// boundBody bounds the reading of a request's body: it must arrive
// within Config.BodyTimeout, the connection counts as waiting for its
// client meanwhile (connLimit may close it for a new one), and a request
// whose handler did not read its body to the end (refused before it: 401, 421, 404, ...) has
// its connection closed after the answer instead of the server reading
// the rest of the body first.
func (s *Server) boundBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		limit := s.connLimit()
		b := &awaitedBody{ReadCloser: r.Body}
		if limit != nil && c != nil {
			limit.wait(c, true)
			b.done = func() { limit.wait(c, false) }
		}
		r.Body = b
		next.ServeHTTP(w, r)
		if !b.eof {
			// Whatever is left of the body is not read: the deadline
			// passed makes the server close the connection after the
			// answer (Connection: close) instead of draining it.
			_ = rc.SetReadDeadline(time.Now())
		}
		if b.done != nil {
			b.done()
		}
	})
}

// awaitedBody is a request body that records when it was read to its end.
type awaitedBody struct {
	io.ReadCloser
	eof  bool
	done func() // called once the body ended (or failed)
}

func (b *awaitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		if err == io.EOF {
			b.eof = true
		}
		if b.done != nil {
			b.done()
			b.done = nil
		}
	}
	return n, err
}
