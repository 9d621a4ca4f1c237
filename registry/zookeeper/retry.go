package zookeeper

import (
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Backoff is the connection retry policy of ShardingSphere's ZooKeeper
// repository, which gives Curator an ExponentialBackoffRetry(Interval,
// MaxRetries, Interval*MaxRetries): after the n-th failed connection
// attempt in a row (n from 1) the client waits Interval times a random
// factor in [1, 2^n) (Curator: max(1, random(2^n))), at most
// Interval*MaxRetries, before the next one.
// A connection that has never had a session (Open, NewSession) gives up
// after 1+MaxRetries failed attempts; one that had a session keeps
// retrying with the same waits until it reconnects or its session expires.
type Backoff struct {
	Interval   time.Duration
	MaxRetries int
}

// wait returns the pause after the n-th failed attempt in a row (n >= 1).
func (b Backoff) wait(n int) time.Duration {
	shift := min(n, 30)
	d := b.Interval * time.Duration(max(1, rand.Int64N(int64(1)<<shift)))
	if limit := b.Interval * time.Duration(max(b.MaxRetries, 1)); d > limit {
		d = limit
	}
	return d
}

// dialPolicy paces the connection attempts of one zk.Conn: each dial is
// bounded by attemptTimeout (when set), follows a failed one after the
// backoff's wait, and, until the connection has had a session, the
// attempt after the last allowed one is not made: gaveUp is closed
// instead. Once the connection is being closed (quit or stop closed,
// abandon called, or given up), its host provider reports the end of a
// round, so that go-zookeeper's loop sees the close and ends.
type dialPolicy struct {
	dial           zk.Dialer
	backoff        Backoff
	attemptTimeout time.Duration
	quit           <-chan struct{} // the Repo's done
	stop           <-chan struct{} // the owner's done (a session's); nil for none
	abandoned      chan struct{}   // closed by abandon
	abandonOnce    sync.Once

	mu       sync.Mutex
	failures int   // failed attempts in a row
	lastErr  error // of the last failed attempt
	had      bool  // the connection has had a session
	gaveUp   chan struct{}
	stopped  bool
}

func newDialPolicy(dial zk.Dialer, b Backoff, attemptTimeout time.Duration, quit, stop <-chan struct{}) *dialPolicy {
	if dial == nil {
		dial = net.DialTimeout
	}
	return &dialPolicy{dial: dial, backoff: b, attemptTimeout: attemptTimeout, quit: quit, stop: stop,
		abandoned: make(chan struct{}), gaveUp: make(chan struct{})}
}

// abandon marks the connection as being closed by its opener.
func (p *dialPolicy) abandon() { p.abandonOnce.Do(func() { close(p.abandoned) }) }

// ending reports whether the connection is being closed or gave up.
func (p *dialPolicy) ending() bool {
	for _, c := range []<-chan struct{}{p.quit, p.stop, p.abandoned, p.gaveUp} {
		select {
		case <-c:
			return true
		default:
		}
	}
	return false
}

// Dial is the zk.Dialer of the connection.
func (p *dialPolicy) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	p.mu.Lock()
	n, stopped := p.failures, p.stopped
	p.mu.Unlock()
	if stopped {
		return nil, p.lastError()
	}
	if n > 0 && p.backoff.Interval > 0 {
		t := time.NewTimer(p.backoff.wait(n))
		select {
		case <-t.C:
		case <-p.quit:
			t.Stop()
			return nil, net.ErrClosed
		case <-p.stop:
			t.Stop()
			return nil, net.ErrClosed
		case <-p.abandoned:
			t.Stop()
			return nil, net.ErrClosed
		case <-p.gaveUp:
			t.Stop()
			return nil, p.lastError()
		}
	}
	if p.attemptTimeout > 0 {
		timeout = p.attemptTimeout
	}
	c, err := p.dial(network, addr, timeout)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.failures = 0
		return c, nil
	}
	p.failures++
	p.lastErr = err
	if !p.had && p.backoff.Interval > 0 && p.failures > p.backoff.MaxRetries && !p.stopped {
		p.stopped = true
		close(p.gaveUp)
	}
	return nil, err
}

// connected records that the connection has a session: from now on it
// retries without limit.
func (p *dialPolicy) connected() {
	p.mu.Lock()
	p.had = true
	p.mu.Unlock()
}

func (p *dialPolicy) lastError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastErr == nil {
		return net.ErrClosed
	}
	return p.lastErr
}

// attempts returns the failed attempts in a row and the last error.
func (p *dialPolicy) attempts() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failures, p.lastErr
}

// roundRobin is a zk.HostProvider that reports a finished round only
// when its connection is ending: go-zookeeper then adds no pause of its
// own (1 s after each round of servers) while the dialPolicy paces the
// attempts, and still sees its close.
type roundRobin struct {
	policy  *dialPolicy
	servers []string
	next    int
}

func (h *roundRobin) Init(servers []string) error { h.servers = servers; return nil }
func (h *roundRobin) Len() int                    { return len(h.servers) }
func (h *roundRobin) Connected()                  {}

func (h *roundRobin) Next() (string, bool) {
	s := h.servers[h.next%len(h.servers)]
	h.next++
	return s, h.policy.ending()
}
