// Package retry paces loops that wait and try again: a sleep that ends
// with its context and an exponential backoff.
package retry

import (
	"context"
	"time"
)

// Sleep waits for d or until ctx ends, whichever comes first. It reports
// true when the full d passed and false when ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Backoff returns the pause before retry number attempt (0 for the first
// retry): base doubled once per attempt, never more than limit.
func Backoff(attempt int, base, limit time.Duration) time.Duration {
	if attempt < 0 {
		attempt = 0
	}
	d := base
	for range attempt {
		if d >= limit {
			break
		}
		d *= 2
	}
	return min(d, limit)
}
