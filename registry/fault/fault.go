// Package fault wraps a registry.Repository to inject faults into
// simulations: errors before an operation, delays, and lost responses (the
// operation happens but the caller sees an error, as after a timeout). It
// keeps the wrapped backend free of test hooks. Forced session expiry is the
// backend's own (memory.Expire); sessions opened through the wrapper are
// wrapped too, so their operations see the same faults.
package fault

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Action is what happens to one operation.
type Action struct {
	// Delay is waited before the operation (bounded by its ctx).
	Delay time.Duration
	// Err, when set, is returned instead of running the operation.
	Err error
	// LoseResponse runs the operation, then returns registry.ErrUnavailable
	// instead of its result: the caller cannot tell whether it happened.
	LoseResponse bool
}

// Plan decides the fault for an operation. op is one of "get",
// "children", "list", "put", "create", "update", "delete", "watch", "session",
// "put-ephemeral", "create-ephemeral", "commit", "lock", "trylock". A zero Action
// lets the operation through. A Plan is called concurrently.
type Plan func(op, key string) Action

// Repo is a Repository with faults injected by a Plan. Safe for concurrent
// use; the plan can be swapped at any time.
type Repo struct {
	inner registry.Repository
	mu    sync.RWMutex
	plan  Plan
}

var _ registry.Repository = (*Repo)(nil)

// Wrap returns inner with plan's faults (nil means none yet).
func Wrap(inner registry.Repository, plan Plan) *Repo {
	return &Repo{inner: inner, plan: plan}
}

// SetPlan replaces the plan; nil turns faults off.
func (r *Repo) SetPlan(p Plan) {
	r.mu.Lock()
	r.plan = p
	r.mu.Unlock()
}

// Unwrap returns the wrapped repository.
func (r *Repo) Unwrap() registry.Repository { return r.inner }

// before applies the plan's delay and error; it returns the action so the
// caller can lose the response afterwards.
func (r *Repo) before(ctx context.Context, op, key string) (Action, error) {
	r.mu.RLock()
	p := r.plan
	r.mu.RUnlock()
	if p == nil {
		return Action{}, nil
	}
	a := p(op, key)
	if a.Delay > 0 {
		t := time.NewTimer(a.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return a, &registry.OpError{Op: op, Key: key, Err: ctx.Err()}
		}
	}
	if a.Err != nil {
		return a, &registry.OpError{Op: op, Key: key, Err: a.Err}
	}
	return a, nil
}

func lost(op, key string) error {
	return &registry.OpError{Op: op, Key: key, Err: fmt.Errorf("%w: response lost (injected)", registry.ErrUnavailable)}
}

// run applies the plan around fn.
func run[T any](r *Repo, ctx context.Context, op, key string, fn func() (T, error)) (T, error) {
	var zero T
	a, err := r.before(ctx, op, key)
	if err != nil {
		return zero, err
	}
	v, err := fn()
	if err == nil && a.LoseResponse {
		return zero, lost(op, key)
	}
	return v, err
}

// Get implements registry.Repository.
func (r *Repo) Get(ctx context.Context, key string) (registry.KV, error) {
	return run(r, ctx, "get", key, func() (registry.KV, error) { return r.inner.Get(ctx, key) })
}

// Children implements registry.Repository.
func (r *Repo) Children(ctx context.Context, key string) ([]string, error) {
	return run(r, ctx, "children", key, func() ([]string, error) { return r.inner.Children(ctx, key) })
}

// List implements registry.Repository.
func (r *Repo) List(ctx context.Context, prefix string) ([]registry.KV, error) {
	return run(r, ctx, "list", prefix, func() ([]registry.KV, error) { return r.inner.List(ctx, prefix) })
}

// Put implements registry.Repository.
func (r *Repo) Put(ctx context.Context, key string, value []byte) (registry.Version, error) {
	return run(r, ctx, "put", key, func() (registry.Version, error) { return r.inner.Put(ctx, key, value) })
}

// Create implements registry.Repository.
func (r *Repo) Create(ctx context.Context, key string, value []byte) (registry.Version, error) {
	return run(r, ctx, "create", key, func() (registry.Version, error) { return r.inner.Create(ctx, key, value) })
}

// Update implements registry.Repository.
func (r *Repo) Update(ctx context.Context, key string, value []byte, expect registry.Version) (registry.Version, error) {
	return run(r, ctx, "update", key, func() (registry.Version, error) { return r.inner.Update(ctx, key, value, expect) })
}

// Delete implements registry.Repository.
func (r *Repo) Delete(ctx context.Context, key string) error {
	_, err := run(r, ctx, "delete", key, func() (struct{}, error) { return struct{}{}, r.inner.Delete(ctx, key) })
	return err
}

// Watch implements registry.Repository. Faults apply to starting the watch.
func (r *Repo) Watch(ctx context.Context, prefix string) ([]registry.KV, <-chan registry.Event, error) {
	if _, err := r.before(ctx, "watch", prefix); err != nil {
		return nil, nil, err
	}
	return r.inner.Watch(ctx, prefix)
}

// NewSession implements registry.Repository.
func (r *Repo) NewSession(ctx context.Context, opts registry.SessionOptions) (registry.Session, error) {
	s, err := run(r, ctx, "session", "/", func() (registry.Session, error) { return r.inner.NewSession(ctx, opts) })
	if err != nil {
		return nil, err
	}
	return &Session{Session: s, r: r}, nil
}

// Close implements registry.Repository.
func (r *Repo) Close() error { return r.inner.Close() }

// Session is a registry.Session whose operations go through the Repo's
// plan. Unwrap gives the backend's session (for memory.Expire).
type Session struct {
	registry.Session
	r *Repo
}

// Unwrap returns the wrapped session.
func (s *Session) Unwrap() registry.Session { return s.Session }

// PutEphemeral implements registry.Session.
func (s *Session) PutEphemeral(ctx context.Context, key string, value []byte) error {
	_, err := run(s.r, ctx, "put-ephemeral", key, func() (struct{}, error) {
		return struct{}{}, s.Session.PutEphemeral(ctx, key, value)
	})
	return err
}

// CreateExclusiveEphemeral implements registry.Session.
func (s *Session) CreateExclusiveEphemeral(ctx context.Context, key string, value []byte) error {
	_, err := run(s.r, ctx, "create-ephemeral", key, func() (struct{}, error) {
		return struct{}{}, s.Session.CreateExclusiveEphemeral(ctx, key, value)
	})
	return err
}

// Commit implements registry.Session. The plan sees op "commit" and the
// key of the transaction's first condition.
func (s *Session) Commit(ctx context.Context, txn registry.Txn) (registry.Version, error) {
	key := "/"
	if len(txn.Conds) > 0 {
		key = txn.Conds[0].Key
	}
	return run(s.r, ctx, "commit", key, func() (registry.Version, error) { return s.Session.Commit(ctx, txn) })
}

// Lock implements registry.Session.
func (s *Session) Lock(ctx context.Context, key string) (registry.Lock, error) {
	return run(s.r, ctx, "lock", key, func() (registry.Lock, error) { return s.Session.Lock(ctx, key) })
}

// TryLock implements registry.Session.
func (s *Session) TryLock(ctx context.Context, key string) (registry.Lock, error) {
	return run(s.r, ctx, "trylock", key, func() (registry.Lock, error) { return s.Session.TryLock(ctx, key) })
}

// ListIsRangeRead forwards registry.RangeReader.
func (r *Repo) ListIsRangeRead() bool { return registry.ListIsRangeRead(r.inner) }
