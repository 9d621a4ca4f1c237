package cluster

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// steppedClock is the real clock plus an offset a test can step.
type steppedClock struct{ offset atomic.Int64 }

func (c *steppedClock) UnixNano() int64       { return time.Now().UnixNano() + c.offset.Load() }
func (c *steppedClock) Sleep(d time.Duration) { time.Sleep(d) }

// TestClockStepBackCounted checks what the clock-step alert relies on: a
// node whose wall clock only moves forward counts no step back over many
// renewal periods, and one step back of 50 ms is counted once, while the
// node keeps issuing.
func TestClockStepBackCounted(t *testing.T) {
	clock := &steppedClock{}
	sf := snowflake.DefaultConfig()
	sf.Clock = clock
	n := openNode(t, memory.New(), Config{InstanceID: "stepped", Reservation: 150 * time.Millisecond, Snowflake: sf})
	testenv.Eventually(t, "10 renewals", func() bool { return n.Stats().Renewals >= 10 })
	if got := n.Stats().ClockStepsBack; got != 0 {
		t.Fatalf("ClockStepsBack = %d with a clock that only moves forward", got)
	}
	clock.offset.Add(-int64(50 * time.Millisecond))
	testenv.Eventually(t, "the step back to be counted", func() bool { return n.Stats().ClockStepsBack == 1 })
	renewals := n.Stats().Renewals
	testenv.Eventually(t, "5 more renewals", func() bool { return n.Stats().Renewals >= renewals+5 })
	if got := n.Stats().ClockStepsBack; got != 1 {
		t.Fatalf("ClockStepsBack = %d after one step back, want 1", got)
	}
	if _, err := n.NextID(testenv.Context(t)); err != nil {
		t.Fatalf("NextID after a 50 ms step back: %v", err)
	}
}
