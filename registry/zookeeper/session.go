package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/registry"
)

// session is a registry.Session on its own ZooKeeper connection: ZooKeeper
// ties ephemeral znodes to the session of the connection that created them.
type session struct {
	r    *Repo
	conn *zk.Conn
	id   int64

	refuse      atomic.Bool   // no more dials: the session is over
	expired     chan struct{} // closed by the client's callback at StateExpired
	expiredOnce sync.Once
	done        chan struct{}
	endOnce     sync.Once
	err         atomic.Pointer[error]
}

var _ registry.Session = (*session)(nil)

// NewSession implements registry.Repository. ZooKeeper: the session is a new
// connection whose session timeout is opts.TTL (registry.DefaultSessionTTL
// when zero), negotiated by the server into [2, 20] * tickTime. When the
// server expires it, Done is closed (Err wraps ErrSessionExpired) and the
// connection is closed rather than continued under a new session. A client
// that cannot reach the ensemble learns of the expiry only when it
// reconnects, as in every ZooKeeper client.
func (r *Repo) NewSession(ctx context.Context, opts registry.SessionOptions) (registry.Session, error) {
	if err := r.check(ctx, "session", "/"); err != nil {
		return nil, err
	}
	ttl := opts.TTL
	if ttl <= 0 {
		ttl = registry.DefaultSessionTTL
	}
	s := &session{r: r, done: make(chan struct{}), expired: make(chan struct{})}
	conn, err := r.connect(ctx, "session", ttl, gatedDialer(r.cfg.Dialer, &s.refuse), s.done, s.onEvent)
	if err != nil {
		return nil, err
	}
	s.conn = conn
	s.id = conn.SessionID()
	r.mu.Lock()
	if r.closed.Load() {
		r.mu.Unlock()
		conn.Close()
		return nil, &registry.OpError{Op: "session", Err: registry.ErrClosed}
	}
	r.sessions[s] = struct{}{}
	r.mu.Unlock()
	go s.monitor()
	return s, nil
}

// monitor ends the session at the first expiry. It returns when the session
// is over.
func (s *session) monitor() {
	select {
	case <-s.expired:
		s.end(registry.ErrSessionExpired, false)
	case <-s.done:
	}
}

// onEvent runs on the client's loop; it must not block or call the
// connection.
func (s *session) onEvent(ev zk.Event) {
	if ev.Type == zk.EventSession && ev.State == zk.StateExpired {
		// Stop the client from opening a new session before Close lands.
		s.refuse.Store(true)
		s.expiredOnce.Do(func() { close(s.expired) })
	}
}

// end records why the session is over, closes Done and the connection. For
// Close, the connection is closed first so that Close returns after the
// server removed the ephemerals.
func (s *session) end(cause error, closing bool) {
	s.endOnce.Do(func() {
		s.refuse.Store(true)
		var err error = &registry.OpError{Op: "session", Key: s.ID(), Err: cause}
		if cause == registry.ErrSessionExpired {
			err = &registry.OpError{Op: "session", Key: s.ID(),
				Err: fmt.Errorf("%w: ZooKeeper expired session %s; its ephemeral keys and locks are gone", cause, s.ID())}
		}
		s.err.Store(&err)
		if !closing {
			close(s.done)
		}
		s.conn.Close()
		if closing {
			close(s.done)
		}
		s.r.mu.Lock()
		delete(s.r.sessions, s)
		s.r.mu.Unlock()
	})
}

// ID implements registry.Session: the ZooKeeper session id in hex, as the
// server logs it.
func (s *session) ID() string { return fmt.Sprintf("0x%x", s.id) }

// Done implements registry.Session.
func (s *session) Done() <-chan struct{} { return s.done }

// Err implements registry.Session.
func (s *session) Err() error {
	select {
	case <-s.done:
		return *s.err.Load()
	default:
		return nil
	}
}

// Close implements registry.Session: it closes the ZooKeeper session, which
// deletes its ephemerals and lock nodes before Close returns. The client
// bounds the wait for the server's reply (about a second); ctx is not used.
func (s *session) Close(ctx context.Context) error {
	s.end(registry.ErrClosed, true)
	return nil
}

// check validates key and refuses work on an ended session.
func (s *session) check(ctx context.Context, op, key string) error {
	if err := s.r.checkWrite(ctx, op, key); err != nil {
		return err
	}
	select {
	case <-s.done:
		return s.Err()
	default:
	}
	if s.refuse.Load() {
		return &registry.OpError{Op: op, Key: key, Err: registry.ErrSessionExpired}
	}
	return nil
}

// convert is convertError for the session's connection: once the session is
// over, every failure reports why.
func (s *session) convert(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if s.refuse.Load() {
		cause := registry.ErrSessionExpired
		if e := s.Err(); errors.Is(e, registry.ErrClosed) {
			cause = registry.ErrClosed
		}
		return &registry.OpError{Op: op, Key: key, Err: fmt.Errorf("%w: %w", cause, err)}
	}
	return convertError(op, key, err)
}

// PutEphemeral implements registry.Session. ZooKeeper: a key this session
// already holds is set in place; a key held by another session, or a
// persistent leaf, is taken over (deleted and re-created as this session's
// ephemeral in one multi), which is what ShardingSphere's persistEphemeral
// does in two steps. A key with children is refused.
func (s *session) PutEphemeral(ctx context.Context, key string, value []byte) error {
	if err := s.check(ctx, "put ephemeral", key); err != nil {
		return err
	}
	if err := s.r.checkSize("put ephemeral", key, 1, len(key), len(value)); err != nil {
		return err
	}
	p := s.r.full(key)
	for attempt := 0; ; attempt++ {
		err := withParents(s.conn, s.r.acl, p, func() error {
			_, _, err := s.r.guardedMulti(s.conn, 1,
				&zk.CreateRequest{Path: p, Data: data(value), Acl: s.r.acl, Flags: zk.FlagEphemeral}, s.r.bump(key))
			return err
		})
		if !errors.Is(err, zk.ErrNodeExists) || attempt == 20 {
			return s.convert("put ephemeral", key, err)
		}
		ok, stat, err := s.conn.Exists(p)
		if err != nil {
			return s.convert("put ephemeral", key, err)
		}
		if !ok {
			continue
		}
		if stat.EphemeralOwner == s.id {
			_, err = s.conn.Set(p, data(value), stat.Version)
		} else {
			_, _, err = s.r.guardedMulti(s.conn, 2,
				&zk.DeleteRequest{Path: p, Version: stat.Version},
				&zk.CreateRequest{Path: p, Data: data(value), Acl: s.r.acl, Flags: zk.FlagEphemeral},
				s.r.bump(key),
			)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNodeExists):
			continue // changed meanwhile
		default:
			return s.convert("put ephemeral", key, err)
		}
	}
}

// CreateExclusiveEphemeral implements registry.Session with one create
// (and the key's deletion guard moved on, guardBuckets): ZooKeeper lets
// exactly one of any number of racing creators win.
func (s *session) CreateExclusiveEphemeral(ctx context.Context, key string, value []byte) error {
	if err := s.check(ctx, "create ephemeral", key); err != nil {
		return err
	}
	if err := s.r.checkSize("create ephemeral", key, 1, len(key), len(value)); err != nil {
		return err
	}
	p := s.r.full(key)
	err := withParents(s.conn, s.r.acl, p, func() error {
		_, _, err := s.r.guardedMulti(s.conn, 1,
			&zk.CreateRequest{Path: p, Data: data(value), Acl: s.r.acl, Flags: zk.FlagEphemeral}, s.r.bump(key))
		return err
	})
	return s.convert("create ephemeral", key, err)
}
