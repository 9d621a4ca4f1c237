package snowflake

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Clock is the time source of a Generator. Tests inject a fake whose Sleep
// advances its own time, so that every wait is deterministic.
type Clock interface {
	// UnixNano returns the current time in nanoseconds since the Unix epoch.
	UnixNano() int64
	// Sleep blocks the calling goroutine for at least d (d > 0).
	Sleep(d time.Duration)
}

// SystemClock returns the default Clock: the wall clock read once at the call,
// then advanced by Go's monotonic clock, so a step of the wall clock (NTP, an
// operator) does not move it. Its Sleep wakes within a few microseconds of the
// requested time: it sleeps in the kernel until shortly before (a margin that
// adapts to how late the kernel wakes it), then yields the processor until the
// time has come, so waiting for a millisecond boundary costs little CPU. It is
// safe for concurrent use.
func SystemClock() Clock {
	now := time.Now()
	c := &systemClock{base: now, baseNano: now.UnixNano()}
	c.margin.Store(int64(initialMargin))
	return c
}

type systemClock struct {
	base     time.Time // carries the monotonic reading
	baseNano int64
	margin   atomic.Int64 // ns before the deadline at which the kernel sleep ends
}

func (c *systemClock) UnixNano() int64 { return c.baseNano + int64(time.Since(c.base)) }

// Linux wakes a nanosleep about 60 µs late (the 50 µs default timer slack plus
// the wake-up), rarely more than 100 µs; more on a loaded machine. The margin
// grows quickly after a late wake-up and shrinks slowly after early ones.
const (
	initialMargin = 100 * time.Microsecond
	minMargin     = 70 * time.Microsecond
	maxMargin     = 500 * time.Microsecond
)

func (c *systemClock) Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	now := c.UnixNano()
	end := now + int64(d)
	if m := c.margin.Load(); int64(d) > m {
		sleep(d - time.Duration(m))
		now = c.UnixNano()
		switch early := end - now; {
		case early < int64(10*time.Microsecond):
			c.margin.Store(min(m+int64(25*time.Microsecond), int64(maxMargin)))
		case early > int64(40*time.Microsecond):
			c.margin.Store(max(m-int64(time.Microsecond), int64(minMargin)))
		}
	}
	for now < end {
		runtime.Gosched()
		now = c.UnixNano()
	}
}
