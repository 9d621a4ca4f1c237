package snowflake_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shardkeeper/shardkeeper/snowflake"
)

// stoppedClock is a Clock frozen at one instant; Sleep moves it forward.
type stoppedClock struct{ ns int64 }

func (c *stoppedClock) UnixNano() int64       { return c.ns }
func (c *stoppedClock) Sleep(d time.Duration) { c.ns += int64(d) }

func Example() {
	clock := &stoppedClock{ns: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()}
	c := snowflake.DefaultConfig()
	c.WorkerID = 5
	c.MaxVibrationOffset = 3
	c.Clock = clock // omit for the system clock
	g, err := snowflake.New(c)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	key, _ := g.NextID(ctx)
	p := snowflake.Decompose(key)
	fmt.Println(key, p.Time(time.UnixMilli(snowflake.DefaultEpochMillis)), p.WorkerID, p.Sequence)

	keys, _ := g.NextIDs(ctx, 3)
	fmt.Println(keys)

	// The cluster fence reserves time up to a limit; Revoke stops issuing at once.
	now := clock.UnixNano() / 1e6
	g.SetWindow(now, now+3000)
	key, _ = g.NextID(ctx)
	fmt.Println(snowflake.Decompose(key).Millis - p.Millis)
	g.Revoke()
	_, err = g.NextID(ctx)
	fmt.Println(err)
	// Output:
	// 1081411717038100480 2025-01-02 03:04:05 +0000 UTC 5 0
	// [1081411717038100481 1081411717038100482 1081411717038100483]
	// 1
	// snowflake: no time reservation (window closed)
}
