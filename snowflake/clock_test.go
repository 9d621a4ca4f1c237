package snowflake

import (
	"sync/atomic"
	"time"
)

// fakeClock is a deterministic Clock: every UnixNano read advances it by step
// nanoseconds (after returning), and Sleep advances it by d instead of waiting.
type fakeClock struct {
	ns     atomic.Int64
	step   int64
	sleeps atomic.Int64
	slept  atomic.Int64 // total ns
}

func newFakeClock(unixMs, step int64) *fakeClock {
	c := &fakeClock{step: step}
	c.ns.Store(unixMs * 1e6)
	return c
}

func (c *fakeClock) UnixNano() int64 {
	if c.step == 0 {
		return c.ns.Load()
	}
	return c.ns.Add(c.step) - c.step
}

func (c *fakeClock) Sleep(d time.Duration) {
	c.sleeps.Add(1)
	c.slept.Add(int64(d))
	c.ns.Add(int64(d))
}

func (c *fakeClock) setMs(ms int64) { c.ns.Store(ms * 1e6) }
func (c *fakeClock) ms() int64      { return floorDiv(c.ns.Load(), 1e6) }
