package testenv

import (
	"bytes"
	"strings"
	"sync"
)

// SyncBuffer collects output (a logger's, a child process's) that a test
// reads while it is still being written: Write, String and LastLines are
// safe for concurrent use. The zero value is ready.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// LastLines returns the last n lines written (for a failure report).
func (s *SyncBuffer) LastLines(n int) string {
	lines := strings.Split(strings.TrimSpace(s.String()), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
