package etcd

import (
	"context"
	"errors"
	"sync"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Lock implements registry.Session with a concurrency.Mutex on the etcd
// prefix "{ns}{key}/": each waiter puts "{ns}{key}/{lease}" with the
// session's lease, and the oldest one holds the lock, so waiters are served
// in order. Two Lock calls on one session exclude each other too (etcd's
// mutex alone is re-entrant per lease). It returns ctx's error when ctx ends
// first and an error wrapping ErrSessionExpired or ErrClosed when the
// session ends while waiting.
func (s *session) Lock(ctx context.Context, key string) (registry.Lock, error) {
	const op = "lock"
	if err := s.lockable(ctx, op, key); err != nil {
		return nil, err
	}
	// Wait for any holder of key on this session.
	for {
		slot, ok := s.reserve(key)
		if ok {
			break
		}
		select {
		case <-slot:
		case <-ctx.Done():
			return nil, &registry.OpError{Op: op, Key: key, Err: ctx.Err()}
		case <-s.done:
			return nil, &registry.OpError{Op: op, Key: key, Err: errors.Unwrap(s.Err())}
		}
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.cs.Ctx(), cancel) // the session ends: stop waiting
	defer stop()
	m := concurrency.NewMutex(s.cs, s.repo.full(key))
	if err := m.Lock(lctx); err != nil {
		s.release(key)
		switch {
		case ctx.Err() != nil:
			return nil, &registry.OpError{Op: op, Key: key, Err: ctx.Err()}
		case s.cs.Ctx().Err() != nil:
			<-s.done
			return nil, &registry.OpError{Op: op, Key: key, Err: errors.Unwrap(s.Err())}
		}
		return nil, s.convertError(ctx, op, key, err)
	}
	return &lock{s: s, key: key, m: m}, nil
}

// TryLock implements registry.Session: one Txn that either takes the lock or
// finds another holder (ErrLocked), in which case its waiter key is removed.
func (s *session) TryLock(ctx context.Context, key string) (registry.Lock, error) {
	const op = "try lock"
	if err := s.lockable(ctx, op, key); err != nil {
		return nil, err
	}
	if _, ok := s.reserve(key); !ok {
		return nil, &registry.OpError{Op: op, Key: key, Err: registry.ErrLocked}
	}
	c, cancel := context.WithTimeout(ctx, s.repo.requestTimeout)
	defer cancel()
	m := concurrency.NewMutex(s.cs, s.repo.full(key))
	if err := m.TryLock(c); err != nil {
		s.release(key)
		if errors.Is(err, concurrency.ErrLocked) {
			return nil, &registry.OpError{Op: op, Key: key, Err: registry.ErrLocked}
		}
		return nil, s.convertError(ctx, op, key, err)
	}
	return &lock{s: s, key: key, m: m}, nil
}

func (s *session) lockable(ctx context.Context, op, key string) error {
	if err := registry.ValidateKey(key); err != nil {
		return &registry.OpError{Op: op, Key: key, Err: err}
	}
	if s.repo.isClosed() {
		return &registry.OpError{Op: op, Key: key, Err: registry.ErrClosed}
	}
	if err := s.Err(); err != nil {
		return &registry.OpError{Op: op, Key: key, Err: errors.Unwrap(err)}
	}
	if err := ctx.Err(); err != nil {
		return &registry.OpError{Op: op, Key: key, Err: err}
	}
	return nil
}

// reserve claims key for one lock holder on this session. When another one
// holds it, it returns the channel closed on its release, and false.
func (s *session) reserve(key string) (<-chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.held[key]; ok {
		return ch, false
	}
	s.held[key] = make(chan struct{})
	return nil, true
}

func (s *session) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.held[key]; ok {
		close(ch)
		delete(s.held, key)
	}
}

// lock is a registry.Lock held through a session.
type lock struct {
	s   *session
	key string

	mu       sync.Mutex
	m        *concurrency.Mutex
	released bool
}

var _ registry.Lock = (*lock)(nil)

// Key implements registry.Lock.
func (l *lock) Key() string { return l.key }

// Unlock implements registry.Lock: it deletes the holder's key. After the
// session ended the lock is gone already and Unlock returns nil. A failed
// delete leaves the lock held, so Unlock can be retried.
func (l *lock) Unlock(ctx context.Context) error {
	const op = "unlock"
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return &registry.OpError{Op: op, Key: l.key, Err: registry.ErrLockNotHeld}
	}
	if l.s.Err() != nil || l.s.repo.isClosed() {
		l.released = true
		l.s.release(l.key)
		return nil
	}
	c, cancel := context.WithTimeout(ctx, l.s.repo.requestTimeout)
	defer cancel()
	if err := l.m.Unlock(c); err != nil {
		if errors.Is(err, concurrency.ErrLockReleased) {
			l.released = true
			l.s.release(l.key)
			return &registry.OpError{Op: op, Key: l.key, Err: registry.ErrLockNotHeld}
		}
		return l.s.repo.convertError(ctx, op, l.key, err)
	}
	l.released = true
	l.s.release(l.key)
	return nil
}
