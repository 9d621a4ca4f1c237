// Package fault wraps a registry.Repository with a Hook that runs around
// every call made through it, through the sessions it opens and the locks
// they return: one decorator for everything that watches or disturbs
// registry traffic without touching a backend. On it are built fault
// injection for simulations (Wrap and a Plan: errors, delays, lost
// responses), call counting (Count) and the node's request metrics.
// Forced session expiry is the backend's own (memory.Expire).
package fault

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/shardkeeper/shardkeeper/registry"
)

// ops are the operation names a Hook sees, in OpIndex order.
var ops = [...]string{
	"get", "children", "list", "put", "create", "update", "delete", "watch", "session",
	"put-ephemeral", "create-ephemeral", "commit", "lock", "trylock", "session-close", "unlock",
	"get-many", "commit-first",
}

// Ops returns the operation names a Hook sees, in a fixed order: the
// position of each is its OpIndex. The slice is the caller's own.
func Ops() []string { return slices.Clone(ops[:]) }

var opIndex = func() map[string]int {
	m := make(map[string]int, len(ops))
	for i, op := range ops {
		m[op] = i
	}
	return m
}()

// OpIndex returns the position of op in Ops(), or -1.
func OpIndex(op string) int {
	if i, ok := opIndex[op]; ok {
		return i
	}
	return -1
}

// Hook runs around each call. Before is called first; a non-nil error is
// returned to the caller instead of running the call. after, when not nil,
// receives the call's error and returns the error the caller gets. Hooks
// are called concurrently. Repository.Close is not hooked.
type Hook interface {
	Before(ctx context.Context, op, key string) (after func(error) error, err error)
}

// HookFunc adapts a function to Hook.
type HookFunc func(ctx context.Context, op, key string) (after func(error) error, err error)

// Before implements Hook.
func (f HookFunc) Before(ctx context.Context, op, key string) (func(error) error, error) {
	return f(ctx, op, key)
}

// EventObserver is an optional Hook method: it sees every event of every
// watch opened through the wrapper (the events still reach the caller).
type EventObserver interface {
	Event(prefix string, ev registry.Event)
}

// Repo is a Repository whose calls run through a Hook. Safe for
// concurrent use.
type Repo struct {
	inner registry.Repository
	hook  Hook
	plan  atomic.Pointer[Plan] // for repositories made by Wrap
}

var _ registry.Repository = (*Repo)(nil)

// Observe returns inner with hook around every call.
func Observe(inner registry.Repository, hook Hook) *Repo {
	return &Repo{inner: inner, hook: hook}
}

// Action is what a Plan does to one call.
type Action struct {
	// Delay is waited before the call (bounded by its ctx).
	Delay time.Duration
	// Err, when set, is returned instead of running the call.
	Err error
	// LoseResponse runs the call, then returns registry.ErrUnavailable
	// instead of its result: the caller cannot tell whether it happened.
	LoseResponse bool
}

// Plan decides the fault for a call; op is one of Ops(). A zero Action
// lets the call through. A Plan is called concurrently.
type Plan func(op, key string) Action

// Wrap returns inner with plan's faults (nil means none yet); SetPlan
// changes them at any time.
func Wrap(inner registry.Repository, plan Plan) *Repo {
	r := &Repo{inner: inner}
	r.hook = HookFunc(r.applyPlan)
	r.SetPlan(plan)
	return r
}

// SetPlan replaces the plan of a repository made by Wrap; nil turns
// faults off.
func (r *Repo) SetPlan(p Plan) {
	if p == nil {
		r.plan.Store(nil)
		return
	}
	r.plan.Store(&p)
}

func (r *Repo) applyPlan(ctx context.Context, op, key string) (func(error) error, error) {
	p := r.plan.Load()
	if p == nil {
		return nil, nil
	}
	a := (*p)(op, key)
	if a.Delay > 0 {
		t := time.NewTimer(a.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, &registry.OpError{Op: op, Key: key, Err: ctx.Err()}
		}
	}
	if a.Err != nil {
		return nil, &registry.OpError{Op: op, Key: key, Err: a.Err}
	}
	if !a.LoseResponse {
		return nil, nil
	}
	return func(err error) error {
		if err != nil {
			return err
		}
		return &registry.OpError{Op: op, Key: key, Err: fmt.Errorf("%w: response lost (injected)", registry.ErrUnavailable)}
	}, nil
}

// Unwrap returns the wrapped repository.
func (r *Repo) Unwrap() registry.Repository { return r.inner }

// ListIsRangeRead forwards registry.RangeReader.
func (r *Repo) ListIsRangeRead() bool { return registry.ListIsRangeRead(r.inner) }

// call runs fn inside the hook.
func call[T any](h Hook, ctx context.Context, op, key string, fn func() (T, error)) (T, error) {
	var zero T
	after, err := h.Before(ctx, op, key)
	if err != nil {
		return zero, err
	}
	v, err := fn()
	if after != nil {
		if err = after(err); err != nil {
			return zero, err
		}
	}
	return v, err
}

func call0(h Hook, ctx context.Context, op, key string, fn func() error) error {
	_, err := call(h, ctx, op, key, func() (struct{}, error) { return struct{}{}, fn() })
	return err
}

// Get implements registry.Repository.
func (r *Repo) Get(ctx context.Context, key string) (registry.KV, error) {
	return call(r.hook, ctx, "get", key, func() (registry.KV, error) { return r.inner.Get(ctx, key) })
}

// GetMany implements registry.MultiGetter: one call, whatever the
// wrapped Repository does underneath (see registry.GetMany). The hook sees
// the first key.
func (r *Repo) GetMany(ctx context.Context, keys []string) ([]registry.KV, error) {
	key := "/"
	if len(keys) > 0 {
		key = keys[0]
	}
	return call(r.hook, ctx, "get-many", key, func() ([]registry.KV, error) { return registry.GetMany(ctx, r.inner, keys) })
}

// Children implements registry.Repository.
func (r *Repo) Children(ctx context.Context, key string) ([]string, error) {
	return call(r.hook, ctx, "children", key, func() ([]string, error) { return r.inner.Children(ctx, key) })
}

// List implements registry.Repository.
func (r *Repo) List(ctx context.Context, prefix string) ([]registry.KV, error) {
	return call(r.hook, ctx, "list", prefix, func() ([]registry.KV, error) { return r.inner.List(ctx, prefix) })
}

// ListLimited forwards registry.LimitedLister, as one "list" call.
func (r *Repo) ListLimited(ctx context.Context, prefix string, lim registry.Limits) ([]registry.KV, bool, error) {
	type result struct {
		kvs       []registry.KV
		truncated bool
	}
	res, err := call(r.hook, ctx, "list", prefix, func() (result, error) {
		kvs, truncated, err := registry.ListLimited(ctx, r.inner, prefix, lim)
		return result{kvs, truncated}, err
	})
	return res.kvs, res.truncated, err
}

// ListChanged forwards registry.ChangeLister, as one "list" call.
func (r *Repo) ListChanged(ctx context.Context, prefix string, since registry.Version, max int) (registry.Changed, bool, error) {
	type result struct {
		c  registry.Changed
		ok bool
	}
	res, err := call(r.hook, ctx, "list", prefix, func() (result, error) {
		c, ok, err := registry.ListChanged(ctx, r.inner, prefix, since, max)
		return result{c, ok}, err
	})
	return res.c, res.ok, err
}

// Put implements registry.Repository.
func (r *Repo) Put(ctx context.Context, key string, value []byte) (registry.Version, error) {
	return call(r.hook, ctx, "put", key, func() (registry.Version, error) { return r.inner.Put(ctx, key, value) })
}

// Create implements registry.Repository.
func (r *Repo) Create(ctx context.Context, key string, value []byte) (registry.Version, error) {
	return call(r.hook, ctx, "create", key, func() (registry.Version, error) { return r.inner.Create(ctx, key, value) })
}

// Update implements registry.Repository.
func (r *Repo) Update(ctx context.Context, key string, value []byte, expect registry.Version) (registry.Version, error) {
	return call(r.hook, ctx, "update", key, func() (registry.Version, error) { return r.inner.Update(ctx, key, value, expect) })
}

// Delete implements registry.Repository.
func (r *Repo) Delete(ctx context.Context, key string) error {
	return call0(r.hook, ctx, "delete", key, func() error { return r.inner.Delete(ctx, key) })
}

type watchResult struct {
	initial []registry.KV
	ch      <-chan registry.Event
}

// Watch implements registry.Repository. The hook applies to starting the
// watch. With an EventObserver hook, a goroutine forwards the events; it
// drains the backend's channel to its end, so the backend never blocks.
func (r *Repo) Watch(ctx context.Context, prefix string) ([]registry.KV, <-chan registry.Event, error) {
	res, err := call(r.hook, ctx, "watch", prefix, func() (watchResult, error) {
		initial, ch, err := r.inner.Watch(ctx, prefix)
		return watchResult{initial, ch}, err
	})
	if err != nil {
		return nil, nil, err
	}
	obs, ok := r.hook.(EventObserver)
	if !ok {
		return res.initial, res.ch, nil
	}
	out := make(chan registry.Event, 16)
	go func() {
		defer close(out)
		for ev := range res.ch {
			obs.Event(prefix, ev)
			select {
			case out <- ev:
			case <-ctx.Done():
				for range res.ch {
				}
				return
			}
		}
	}()
	return res.initial, out, nil
}

// NewSession implements registry.Repository.
func (r *Repo) NewSession(ctx context.Context, opts registry.SessionOptions) (registry.Session, error) {
	s, err := call(r.hook, ctx, "session", "/", func() (registry.Session, error) { return r.inner.NewSession(ctx, opts) })
	if err != nil {
		return nil, err
	}
	return &Session{Session: s, hook: r.hook}, nil
}

// Close implements registry.Repository; it is not hooked.
func (r *Repo) Close() error { return r.inner.Close() }

// Session is a registry.Session whose calls run through the Repo's hook.
// Unwrap gives the backend's session (for memory.Expire).
type Session struct {
	registry.Session
	hook Hook
}

// Unwrap returns the wrapped session.
func (s *Session) Unwrap() registry.Session { return s.Session }

// PutEphemeral implements registry.Session.
func (s *Session) PutEphemeral(ctx context.Context, key string, value []byte) error {
	return call0(s.hook, ctx, "put-ephemeral", key, func() error { return s.Session.PutEphemeral(ctx, key, value) })
}

// CreateExclusiveEphemeral implements registry.Session.
func (s *Session) CreateExclusiveEphemeral(ctx context.Context, key string, value []byte) error {
	return call0(s.hook, ctx, "create-ephemeral", key, func() error { return s.Session.CreateExclusiveEphemeral(ctx, key, value) })
}

// Commit implements registry.Session. The hook sees the key of the
// transaction's first condition.
func (s *Session) Commit(ctx context.Context, txn registry.Txn) (registry.Version, error) {
	key := "/"
	if len(txn.Conds) > 0 {
		key = txn.Conds[0].Key
	}
	return call(s.hook, ctx, "commit", key, func() (registry.Version, error) { return s.Session.Commit(ctx, txn) })
}

// CommitFirst implements registry.FirstCommitter: one call, whatever the
// wrapped Session does underneath (see registry.CommitFirst). The hook
// sees the key of the first alternative's first condition.
func (s *Session) CommitFirst(ctx context.Context, alts []registry.Txn) (int, registry.Version, error) {
	key := "/"
	if len(alts) > 0 && len(alts[0].Conds) > 0 {
		key = alts[0].Conds[0].Key
	}
	var i int
	v, err := call(s.hook, ctx, "commit-first", key, func() (registry.Version, error) {
		var v registry.Version
		var err error
		i, v, err = registry.CommitFirst(ctx, s.Session, alts)
		return v, err
	})
	if err != nil {
		return -1, 0, err
	}
	return i, v, nil
}

// Lock implements registry.Session.
func (s *Session) Lock(ctx context.Context, key string) (registry.Lock, error) {
	return call(s.hook, ctx, "lock", key, func() (registry.Lock, error) { return s.lock(s.Session.Lock(ctx, key)) })
}

// TryLock implements registry.Session.
func (s *Session) TryLock(ctx context.Context, key string) (registry.Lock, error) {
	return call(s.hook, ctx, "trylock", key, func() (registry.Lock, error) { return s.lock(s.Session.TryLock(ctx, key)) })
}

func (s *Session) lock(l registry.Lock, err error) (registry.Lock, error) {
	if err != nil {
		return nil, err
	}
	return &lock{Lock: l, hook: s.hook}, nil
}

// Close implements registry.Session.
func (s *Session) Close(ctx context.Context) error {
	return call0(s.hook, ctx, "session-close", "/", func() error { return s.Session.Close(ctx) })
}

type lock struct {
	registry.Lock
	hook Hook
}

func (l *lock) Unlock(ctx context.Context) error {
	return call0(l.hook, ctx, "unlock", l.Key(), func() error { return l.Lock.Unlock(ctx) })
}

// ReplayChanges forwards registry.ChangeReplayer, as one "list" call.
func (r *Repo) ReplayChanges(ctx context.Context, prefix string, since registry.Version, upTo registry.ReplayBound, max int) (registry.Replayed, bool, error) {
	type result struct {
		c  registry.Replayed
		ok bool
	}
	res, err := call(r.hook, ctx, "list", prefix, func() (result, error) {
		c, ok, err := registry.ReplayChanges(ctx, r.inner, prefix, since, upTo, max)
		return result{c, ok}, err
	})
	return res.c, res.ok, err
}
