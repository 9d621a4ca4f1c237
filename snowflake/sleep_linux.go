//go:build linux

package snowflake

import (
	"syscall"
	"time"
)

// sleep blocks for about d with the kernel's timer resolution. time.Sleep rounds
// a sub-millisecond wait up to a whole millisecond on Linux (the runtime's poller
// waits in milliseconds), which would skip the next millisecond of keys.
func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
