//go:build linux

package console_test

import (
	"syscall"
	"time"
)

// sleepUntil blocks the calling goroutine's thread in nanosleep(2) until
// t: time.Sleep wakes up to a millisecond late when the process is
// otherwise idle (the runtime's poller waits in whole milliseconds), which
// would be the sender's lateness rather than the server's.
func sleepUntil(t time.Time) {
	for d := time.Until(t); d > 0; d = time.Until(t) {
		ts := syscall.NsecToTimespec(d.Nanoseconds())
		_ = syscall.Nanosleep(&ts, nil) // EINTR: the loop sleeps the rest
	}
}
