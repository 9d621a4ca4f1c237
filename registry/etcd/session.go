package etcd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/shardkeeper/shardkeeper/registry"
)

// NewSession implements registry.Repository. The session is an etcd lease
// of opts.TTL rounded up to whole seconds (at least 1 s; the server may
// raise it to its minimum, 2 s with default election settings) kept alive by
// a concurrency.Session. ctx bounds the lease grant only.
//
// Done is closed when the keep-alive learns that the lease is gone (a
// revoke, or an expiry the server reports as TTL <= 0), when the client's
// own deadline for the lease passes without a renewal, when an operation of
// the session finds its lease gone, or on Close. The client learns of a
// server-side revoke at the next keep-alive, up to TTL/3 later.
func (r *Repo) NewSession(ctx context.Context, opts registry.SessionOptions) (registry.Session, error) {
	if r.isClosed() {
		return nil, &registry.OpError{Op: "new session", Err: registry.ErrClosed}
	}
	ttl := opts.TTL
	if ttl <= 0 {
		ttl = registry.DefaultSessionTTL
	}
	secs := int64(math.Ceil(ttl.Seconds()))
	secs = max(secs, 1)
	c, cancel := context.WithTimeout(ctx, r.requestTimeout)
	defer cancel()
	grant, err := r.client.Grant(c, secs)
	if err != nil {
		return nil, r.convertError(ctx, "new session", "", err)
	}
	// The keep-alive runs under the Repo's context, not ctx: ctx bounds only
	// the creation.
	cs, err := concurrency.NewSession(r.client,
		concurrency.WithLease(grant.ID),
		concurrency.WithTTL(int(secs)),
		concurrency.WithContext(r.ctx))
	if err != nil {
		rctx, rcancel := context.WithTimeout(context.Background(), r.requestTimeout)
		_, _ = r.client.Revoke(rctx, grant.ID)
		rcancel()
		return nil, r.convertError(ctx, "new session", "", err)
	}
	s := &session{repo: r, cs: cs, done: make(chan struct{}), held: map[string]chan struct{}{}}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		cs.Orphan()
		return nil, &registry.OpError{Op: "new session", Err: registry.ErrClosed}
	}
	r.sessions[s] = struct{}{}
	r.mu.Unlock()
	go s.monitor()
	return s, nil
}

// session is a registry.Session on a concurrency.Session.
type session struct {
	repo *Repo
	cs   *concurrency.Session
	done chan struct{}

	mu     sync.Mutex
	err    error                    // why done was closed; nil while alive
	closed bool                     // Close was called
	held   map[string]chan struct{} // lock keys held through this session; closed on unlock
}

var _ registry.Session = (*session)(nil)

// ID implements registry.Session: the lease ID in hex, as etcdctl prints it.
func (s *session) ID() string { return strconv.FormatInt(int64(s.cs.Lease()), 16) }

// Done implements registry.Session.
func (s *session) Done() <-chan struct{} { return s.done }

// Err implements registry.Session.
func (s *session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// monitor closes done once the keep-alive ends for any reason.
func (s *session) monitor() {
	<-s.cs.Done()
	s.end(registry.ErrSessionExpired)
}

// end records why the session ended (the first reason wins) and closes done.
func (s *session) end(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if errors.Is(cause, registry.ErrSessionExpired) {
		s.err = &registry.OpError{Op: "session", Key: "", Err: fmt.Errorf("%w: lease %s is gone", registry.ErrSessionExpired, s.ID())}
	} else {
		s.err = &registry.OpError{Op: "session", Err: cause}
	}
	close(s.done)
}

// orphan stops the keep-alive without revoking the lease.
func (s *session) orphan(cause error) {
	s.end(cause)
	s.cs.Orphan()
}

// expired notes a lease found gone by an operation.
func (s *session) expired() {
	s.end(registry.ErrSessionExpired)
	s.cs.Orphan()
	s.forget()
}

func (s *session) forget() {
	r := s.repo
	r.mu.Lock()
	delete(r.sessions, s)
	r.mu.Unlock()
}

// begin checks key and the session's state.
func (s *session) begin(ctx context.Context, op, key string) (context.Context, context.CancelFunc, error) {
	c, cancel, err := s.repo.begin(ctx, op, key)
	if err != nil {
		return nil, nil, err
	}
	if err := s.Err(); err != nil {
		cancel()
		return nil, nil, &registry.OpError{Op: op, Key: key, Err: errors.Unwrap(err)}
	}
	return c, cancel, nil
}

// convertError is the Repo's convertError, noting a lost lease.
func (s *session) convertError(ctx context.Context, op, key string, err error) error {
	err = s.repo.convertError(ctx, op, key, err)
	if errors.Is(err, registry.ErrSessionExpired) {
		s.expired()
	}
	return err
}

// PutEphemeral implements registry.Session: a put with the session's lease.
func (s *session) PutEphemeral(ctx context.Context, key string, value []byte) error {
	if err := s.repo.checkSize("put ephemeral", key, 1, len(key)+len(value)+registry.RequestOverhead); err != nil {
		return err
	}
	c, cancel, err := s.begin(ctx, "put ephemeral", key)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = s.repo.client.Put(c, s.repo.full(key), string(value), clientv3.WithLease(s.cs.Lease()))
	return s.convertError(ctx, "put ephemeral", key, err)
}

// CreateExclusiveEphemeral implements registry.Session: a Txn on
// CreateRevision == 0 that puts key with the session's lease.
func (s *session) CreateExclusiveEphemeral(ctx context.Context, key string, value []byte) error {
	if err := s.repo.checkSize("create ephemeral", key, 1, len(key)+len(value)+registry.RequestOverhead); err != nil {
		return err
	}
	c, cancel, err := s.begin(ctx, "create ephemeral", key)
	if err != nil {
		return err
	}
	defer cancel()
	k := s.repo.full(key)
	resp, err := s.repo.client.Txn(c).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(value), clientv3.WithLease(s.cs.Lease()))).
		Commit()
	if err != nil {
		return s.convertError(ctx, "create ephemeral", key, err)
	}
	if !resp.Succeeded {
		return &registry.OpError{Op: "create ephemeral", Key: key, Err: registry.ErrExists}
	}
	return nil
}

// Close implements registry.Session: it stops the keep-alive and revokes the
// lease, which deletes the session's ephemerals and releases its locks at
// once. ctx bounds the revoke; if it fails, the keys go when the TTL runs
// out. Closing twice, or closing an expired session, returns nil.
func (s *session) Close(ctx context.Context) error {
	s.orphan(registry.ErrClosed)
	s.forget()
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	s.mu.Unlock()
	if !first || s.repo.isClosed() {
		return nil
	}
	c, cancel := context.WithTimeout(ctx, s.repo.requestTimeout)
	defer cancel()
	_, err := s.repo.client.Revoke(c, s.cs.Lease())
	if err != nil {
		err = s.repo.convertError(ctx, "close session", "", err)
		if errors.Is(err, registry.ErrSessionExpired) {
			return nil // the lease is gone already: that is what Close wants
		}
		return err
	}
	return nil
}
