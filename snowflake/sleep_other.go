//go:build !linux

package snowflake

import "time"

// sleep blocks for about d, ending early where time.Sleep is coarse: the caller
// yields for the rest.
func sleep(d time.Duration) {
	if d > 2*time.Millisecond {
		time.Sleep(d - 2*time.Millisecond)
	}
}
