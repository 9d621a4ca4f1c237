package fault

import (
	"context"
	"sync/atomic"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Ops are the operation names a Counter reports, in order: the Plan's names
// plus "session-close" (Session.Close) and "unlock" (Lock.Unlock).
var Ops = []string{
	"get", "children", "list", "put", "create", "update", "delete", "watch", "session",
	"put-ephemeral", "create-ephemeral", "commit", "lock", "trylock", "session-close", "unlock",
}

const (
	opGet = iota
	opChildren
	opList
	opPut
	opCreate
	opUpdate
	opDelete
	opWatch
	opSession
	opPutEphemeral
	opCreateEphemeral
	opCommit
	opLock
	opTryLock
	opSessionClose
	opUnlock
	numOps
)

// Counter is a Repository that counts the calls made through it, per
// operation: every call of the contract is one registry round trip as the
// caller sees it, whatever it costs the backend underneath (a ZooKeeper List
// is one call here but a walk of children and reads on the wire). Calls are
// counted when they start, successful or not. Sessions opened through it
// count into the same Counter, and so do the Locks they return. Safe for
// concurrent use. Several Counters may wrap one Repository (to count per
// caller); Close closes the wrapped Repository.
type Counter struct {
	inner registry.Repository
	n     [numOps]atomic.Int64
}

var _ registry.Repository = (*Counter)(nil)

// Count returns inner wrapped in a fresh Counter.
func Count(inner registry.Repository) *Counter { return &Counter{inner: inner} }

// Unwrap returns the wrapped repository.
func (c *Counter) Unwrap() registry.Repository { return c.inner }

// Counts returns the number of calls per operation name (see Ops), zero
// counts included.
func (c *Counter) Counts() map[string]int64 {
	m := make(map[string]int64, numOps)
	for i, name := range Ops {
		m[name] = c.n[i].Load()
	}
	return m
}

// Total returns the number of calls of every operation.
func (c *Counter) Total() int64 {
	var t int64
	for i := range c.n {
		t += c.n[i].Load()
	}
	return t
}

// Reset sets every count to zero.
func (c *Counter) Reset() {
	for i := range c.n {
		c.n[i].Store(0)
	}
}

func (c *Counter) inc(op int) { c.n[op].Add(1) }

// Get implements registry.Repository.
func (c *Counter) Get(ctx context.Context, key string) (registry.KV, error) {
	c.inc(opGet)
	return c.inner.Get(ctx, key)
}

// Children implements registry.Repository.
func (c *Counter) Children(ctx context.Context, key string) ([]string, error) {
	c.inc(opChildren)
	return c.inner.Children(ctx, key)
}

// List implements registry.Repository.
func (c *Counter) List(ctx context.Context, prefix string) ([]registry.KV, error) {
	c.inc(opList)
	return c.inner.List(ctx, prefix)
}

// Put implements registry.Repository.
func (c *Counter) Put(ctx context.Context, key string, value []byte) (registry.Version, error) {
	c.inc(opPut)
	return c.inner.Put(ctx, key, value)
}

// Create implements registry.Repository.
func (c *Counter) Create(ctx context.Context, key string, value []byte) (registry.Version, error) {
	c.inc(opCreate)
	return c.inner.Create(ctx, key, value)
}

// Update implements registry.Repository.
func (c *Counter) Update(ctx context.Context, key string, value []byte, expect registry.Version) (registry.Version, error) {
	c.inc(opUpdate)
	return c.inner.Update(ctx, key, value, expect)
}

// Delete implements registry.Repository.
func (c *Counter) Delete(ctx context.Context, key string) error {
	c.inc(opDelete)
	return c.inner.Delete(ctx, key)
}

// Watch implements registry.Repository. Only the start of the watch counts.
func (c *Counter) Watch(ctx context.Context, prefix string) ([]registry.KV, <-chan registry.Event, error) {
	c.inc(opWatch)
	return c.inner.Watch(ctx, prefix)
}

// NewSession implements registry.Repository.
func (c *Counter) NewSession(ctx context.Context, opts registry.SessionOptions) (registry.Session, error) {
	c.inc(opSession)
	s, err := c.inner.NewSession(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &CountedSession{Session: s, c: c}, nil
}

// Close implements registry.Repository; it is not counted.
func (c *Counter) Close() error { return c.inner.Close() }

// CountedSession is a registry.Session whose calls count into its Counter.
type CountedSession struct {
	registry.Session
	c *Counter
}

// Unwrap returns the wrapped session.
func (s *CountedSession) Unwrap() registry.Session { return s.Session }

// PutEphemeral implements registry.Session.
func (s *CountedSession) PutEphemeral(ctx context.Context, key string, value []byte) error {
	s.c.inc(opPutEphemeral)
	return s.Session.PutEphemeral(ctx, key, value)
}

// CreateExclusiveEphemeral implements registry.Session.
func (s *CountedSession) CreateExclusiveEphemeral(ctx context.Context, key string, value []byte) error {
	s.c.inc(opCreateEphemeral)
	return s.Session.CreateExclusiveEphemeral(ctx, key, value)
}

// Commit implements registry.Session.
func (s *CountedSession) Commit(ctx context.Context, txn registry.Txn) (registry.Version, error) {
	s.c.inc(opCommit)
	return s.Session.Commit(ctx, txn)
}

// Lock implements registry.Session.
func (s *CountedSession) Lock(ctx context.Context, key string) (registry.Lock, error) {
	s.c.inc(opLock)
	l, err := s.Session.Lock(ctx, key)
	if err != nil {
		return nil, err
	}
	return &countedLock{Lock: l, c: s.c}, nil
}

// TryLock implements registry.Session.
func (s *CountedSession) TryLock(ctx context.Context, key string) (registry.Lock, error) {
	s.c.inc(opTryLock)
	l, err := s.Session.TryLock(ctx, key)
	if err != nil {
		return nil, err
	}
	return &countedLock{Lock: l, c: s.c}, nil
}

// Close implements registry.Session.
func (s *CountedSession) Close(ctx context.Context) error {
	s.c.inc(opSessionClose)
	return s.Session.Close(ctx)
}

type countedLock struct {
	registry.Lock
	c *Counter
}

func (l *countedLock) Unlock(ctx context.Context) error {
	l.c.inc(opUnlock)
	return l.Lock.Unlock(ctx)
}

// ListIsRangeRead forwards registry.RangeReader.
func (c *Counter) ListIsRangeRead() bool { return registry.ListIsRangeRead(c.inner) }
