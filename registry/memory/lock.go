package memory

import (
	"context"
	"sort"
	"sync"

	"github.com/shardkeeper/shardkeeper/registry"
)

// lockState is one mutex of the store; guarded by store.mu.
type lockState struct {
	holder   *session
	released chan struct{} // closed when the current holder lets go
}

func (l *lockState) release() {
	l.holder = nil
	close(l.released)
}

type lock struct {
	s    *session
	key  string
	mu   sync.Mutex
	held bool
}

// Lock implements registry.Session.
func (s *session) Lock(ctx context.Context, key string) (registry.Lock, error) {
	for {
		l, wait, err := s.tryLock(ctx, "lock", key)
		if err != nil || l != nil {
			return l, err
		}
		select {
		case <-wait:
		case <-s.done:
			return nil, &registry.OpError{Op: "lock", Key: key, Err: s.err}
		case <-ctx.Done():
			return nil, &registry.OpError{Op: "lock", Key: key, Err: ctx.Err()}
		}
	}
}

// TryLock implements registry.Session.
func (s *session) TryLock(ctx context.Context, key string) (registry.Lock, error) {
	l, _, err := s.tryLock(ctx, "trylock", key)
	if err == nil && l == nil {
		err = &registry.OpError{Op: "trylock", Key: key, Err: registry.ErrLocked}
	}
	return l, err
}

// tryLock takes the lock if it is free; otherwise it returns a channel
// closed when the holder lets go.
func (s *session) tryLock(ctx context.Context, op, key string) (registry.Lock, <-chan struct{}, error) {
	if err := s.repo.check(ctx, op, key); err != nil {
		return nil, nil, err
	}
	st := s.repo.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := s.alive(op, key); err != nil {
		return nil, nil, err
	}
	l, ok := st.locks[key]
	if ok && l.holder != nil {
		return nil, l.released, nil
	}
	st.locks[key] = &lockState{holder: s, released: make(chan struct{})}
	return &lock{s: s, key: key, held: true}, nil, nil
}

// Key implements registry.Lock.
func (l *lock) Key() string { return l.key }

// Unlock implements registry.Lock.
func (l *lock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held {
		return &registry.OpError{Op: "unlock", Key: l.key, Err: registry.ErrLockNotHeld}
	}
	l.held = false
	st := l.s.repo.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if ls, ok := st.locks[l.key]; ok && ls.holder == l.s {
		ls.release()
		delete(st.locks, l.key)
		return nil
	}
	return &registry.OpError{Op: "unlock", Key: l.key, Err: registry.ErrLockNotHeld}
}

func sortStrings(s []string) { sort.Strings(s) }
