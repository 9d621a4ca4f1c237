package node

import (
	"testing"
	"time"
)

// fixedClock is a base clock that moves only when told.
type fixedClock struct{ now int64 }

func (c *fixedClock) UnixNano() int64       { return c.now }
func (c *fixedClock) Sleep(d time.Duration) { c.now += int64(d) }

func TestClockStepAndRate(t *testing.T) {
	base := &fixedClock{now: 1_000 * int64(time.Second)}
	c := NewClock(base)
	if got := c.UnixNano(); got != base.now {
		t.Fatalf("fresh clock = %d, want the base %d", got, base.now)
	}
	c.Step(-time.Hour)
	if got := c.Offset(); got != -int64(time.Hour) {
		t.Fatalf("offset after a step back of 1h = %v", time.Duration(got))
	}
	c.Step(time.Hour + 5*time.Millisecond)
	if got := c.Offset(); got != int64(5*time.Millisecond) {
		t.Fatalf("offset = %v, want 5ms", time.Duration(got))
	}
	// 8% fast for 10 s of base time gains 800 ms.
	c.SetRate(80000)
	base.now += int64(10 * time.Second)
	if got, want := c.Offset(), int64(805*time.Millisecond); got != want {
		t.Fatalf("offset after 10 s at +8%% = %v, want %v", time.Duration(got), time.Duration(want))
	}
	// Back to the right rate: the drift so far stays, no more is added.
	c.SetRate(0)
	base.now += int64(10 * time.Second)
	if got, want := c.Offset(), int64(805*time.Millisecond); got != want {
		t.Fatalf("offset after the rate is reset = %v, want %v", time.Duration(got), time.Duration(want))
	}
	c.Sleep(time.Second)
	if got := c.UnixNano() - base.now; got != int64(805*time.Millisecond) {
		t.Fatalf("Sleep moved the offset: %v", time.Duration(got))
	}
}
