package memory

import (
	"context"
	"fmt"
	"sync"

	"github.com/shardkeeper/shardkeeper/registry"
)

type session struct {
	repo *Repo
	id   int64
	keys map[string]struct{} // ephemeral keys held, guarded by store.mu
	done chan struct{}
	once sync.Once
	err  error // set before done is closed
}

var _ registry.Session = (*session)(nil)

// NewSession implements registry.Repository. The TTL is recorded but not
// enforced: call Expire to end the session the way a registry would.
func (r *Repo) NewSession(ctx context.Context, opts registry.SessionOptions) (registry.Session, error) {
	if err := r.check(ctx, "session", "/"); err != nil {
		return nil, err
	}
	r.st.mu.Lock()
	r.st.nextSess++
	s := &session{repo: r, id: r.st.nextSess, keys: map[string]struct{}{}, done: make(chan struct{})}
	r.st.mu.Unlock()
	// Close swaps closed before it collects the sessions under mu, so a
	// session added here is either seen by Close or refused.
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return nil, &registry.OpError{Op: "session", Err: registry.ErrClosed}
	}
	r.sessions[s] = struct{}{}
	return s, nil
}

// Expire ends sess as a registry-side expiry would: its ephemerals are
// deleted, its locks released, Done closed and Err wraps
// registry.ErrSessionExpired. It reports false if sess is not a session of
// this package or already ended.
func Expire(sess registry.Session) bool {
	s, ok := sess.(*session)
	if !ok {
		return false
	}
	return s.end(fmt.Errorf("memory session %d: %w", s.id, registry.ErrSessionExpired))
}

// end removes the session's ephemerals and locks and closes done, once.
func (s *session) end(err error) bool {
	ended := false
	s.once.Do(func() {
		ended = true
		st := s.repo.st
		st.mu.Lock()
		s.err = err
		for _, k := range sortedKeys(s.keys) {
			st.remove(k)
		}
		for _, l := range st.locks {
			if l.holder == s {
				l.release()
			}
		}
		close(s.done)
		st.mu.Unlock()
		s.repo.mu.Lock()
		delete(s.repo.sessions, s)
		s.repo.mu.Unlock()
	})
	return ended
}

// ID implements registry.Session.
func (s *session) ID() string { return fmt.Sprintf("memory-%d", s.id) }

// Done implements registry.Session.
func (s *session) Done() <-chan struct{} { return s.done }

// Err implements registry.Session.
func (s *session) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Close implements registry.Session.
func (s *session) Close(ctx context.Context) error {
	s.end(fmt.Errorf("memory session %d: %w", s.id, registry.ErrClosed))
	return nil
}

// alive checks the key and that the session is usable; call with st.mu held
// for the session part to be atomic with the write that follows.
func (s *session) alive(op, key string) error {
	select {
	case <-s.done:
		return &registry.OpError{Op: op, Key: key, Err: s.err}
	default:
		return nil
	}
}

// PutEphemeral implements registry.Session.
func (s *session) PutEphemeral(ctx context.Context, key string, value []byte) error {
	if err := s.repo.check(ctx, "put-ephemeral", key); err != nil {
		return err
	}
	if err := s.repo.checkSize("put-ephemeral", key, len(key)+len(value)); err != nil {
		return err
	}
	st := s.repo.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := s.alive("put-ephemeral", key); err != nil {
		return err
	}
	st.write(key, value, s)
	return nil
}

// CreateExclusiveEphemeral implements registry.Session.
func (s *session) CreateExclusiveEphemeral(ctx context.Context, key string, value []byte) error {
	if err := s.repo.check(ctx, "create-ephemeral", key); err != nil {
		return err
	}
	if err := s.repo.checkSize("create-ephemeral", key, len(key)+len(value)); err != nil {
		return err
	}
	st := s.repo.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := s.alive("create-ephemeral", key); err != nil {
		return err
	}
	if _, ok := st.kv[key]; ok {
		return &registry.OpError{Op: "create-ephemeral", Key: key, Err: registry.ErrExists}
	}
	st.write(key, value, s)
	return nil
}

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}
