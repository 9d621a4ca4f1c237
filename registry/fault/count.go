package fault

import (
	"context"
	"sync/atomic"

	"github.com/shardkeeper/shardkeeper/registry"
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
	*Repo
	n []atomic.Int64 // by OpIndex
}

// Count returns inner wrapped in a fresh Counter.
func Count(inner registry.Repository) *Counter {
	c := &Counter{n: make([]atomic.Int64, len(ops))}
	c.Repo = Observe(inner, HookFunc(func(_ context.Context, op, _ string) (func(error) error, error) {
		c.n[OpIndex(op)].Add(1)
		return nil, nil
	}))
	return c
}

// Counts returns the number of calls per operation name (see Ops), zero
// counts included.
func (c *Counter) Counts() map[string]int64 {
	m := make(map[string]int64, len(ops))
	for i, name := range ops {
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
