package node

import (
	"sync/atomic"
	"time"

	"github.com/shardkeeper/shardkeeper/snowflake"
)

// Clock is a node's injectable key clock: the system clock plus an offset
// that can be stepped and a rate error that can be set, for clock faults
// (libfaketime cannot move a Go program's clock: Go reads time through the
// vDSO). It implements snowflake.Clock and is safe for concurrent use.
type Clock struct {
	base  snowflake.Clock
	state atomic.Pointer[clockState]
}

// clockState is immutable: time = base + offset + (base - since) * ppm/1e6.
type clockState struct {
	offset int64 // ns
	since  int64 // base ns at which the rate error started
	ppm    float64
}

// NewClock returns a Clock that reads base (snowflake.SystemClock() when
// nil) with no offset and no rate error.
func NewClock(base snowflake.Clock) *Clock {
	if base == nil {
		base = snowflake.SystemClock()
	}
	c := &Clock{base: base}
	c.state.Store(&clockState{})
	return c
}

func (s *clockState) at(base int64) int64 {
	t := base + s.offset
	if s.ppm != 0 {
		t += int64(float64(base-s.since) * s.ppm / 1e6)
	}
	return t
}

// UnixNano is the injected time.
func (c *Clock) UnixNano() int64 { return c.state.Load().at(c.base.UnixNano()) }

// Sleep sleeps on the base clock.
func (c *Clock) Sleep(d time.Duration) { c.base.Sleep(d) }

// Step moves the clock by d (negative: back) at once.
func (c *Clock) Step(d time.Duration) {
	for {
		old := c.state.Load()
		next := *old
		next.offset += int64(d)
		if c.state.CompareAndSwap(old, &next) {
			return
		}
	}
}

// SetRate makes the clock run ppm parts per million fast (negative: slow)
// from now on; the drift so far is kept.
func (c *Clock) SetRate(ppm float64) {
	for {
		old := c.state.Load()
		now := c.base.UnixNano()
		next := clockState{offset: old.at(now) - now, since: now, ppm: ppm}
		if c.state.CompareAndSwap(old, &next) {
			return
		}
	}
}

// Offset is how far the clock is from the base clock now, in ns.
func (c *Clock) Offset() int64 {
	now := c.base.UnixNano()
	return c.state.Load().at(now) - now
}
