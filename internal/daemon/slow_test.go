package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/zapslog"
)

// syncBuffer is a bytes.Buffer safe for a logger and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestReportSlow checks that the slow requests of a window make one
// warning with their number, and a window without any makes none.
func TestReportSlow(t *testing.T) {
	var slow zapslog.Slow
	var buf syncBuffer
	el := zapslog.CountingLogger(slog.New(slog.DiscardHandler), &slow)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		reportSlow(ctx, &slow, slog.New(slog.NewTextHandler(&buf, nil)), 100*time.Millisecond)
	}()
	for range 7 {
		el.Warn("apply request took too long")
	}
	time.Sleep(350 * time.Millisecond)
	cancel()
	<-done
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 1 || !strings.Contains(out, "level=WARN") || !strings.Contains(out, "slow_requests=7") {
		t.Fatalf("report:\n%s", out)
	}
}
