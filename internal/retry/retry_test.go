package retry

import (
	"context"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{
		{-1, 50 * time.Millisecond},
		{0, 50 * time.Millisecond},
		{1, 100 * time.Millisecond},
		{6, 3 * time.Second},
		{7, 3 * time.Second},
		{1000, 3 * time.Second},
	} {
		if got := Backoff(tc.attempt, 50*time.Millisecond, 3*time.Second); got != tc.want {
			t.Errorf("Backoff(%d) = %v, want %v", tc.attempt, got, tc.want)
		}
	}
}

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep with a live context reported an early end")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep with an ended context reported the full wait")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Sleep with an ended context took %v", d)
	}
}
