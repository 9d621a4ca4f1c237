//go:build !linux

package console_test

import "time"

// sleepUntil sleeps until t; off Linux time.Sleep's own precision, so the
// benchmarks' lateness figures include up to the runtime's timer slack.
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }
