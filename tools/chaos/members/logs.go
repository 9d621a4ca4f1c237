package members

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"sync"
)

// lineWriter copies a member's output line by line to the ensemble's log
// writer, prefixed, and into the member's tail.
type lineWriter struct {
	prefix string
	c      *Set
	tail   *tail

	mu  sync.Mutex
	buf []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.tail.write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i+1])
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(append(w.buf, '\n'))
		w.buf = nil
	}
}

func (w *lineWriter) emit(line []byte) {
	w.c.logMu.Lock()
	defer w.c.logMu.Unlock()
	_, _ = io.WriteString(w.c.logs, w.prefix)
	_, _ = w.c.logs.Write(line)
}

// tail keeps the last 64 KiB of a member's output for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 64 << 10

func (t *tail) write(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*tailSize {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailSize:]...)
	}
}

// last returns the last n lines.
func (t *tail) last(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(t.buf))
	sc.Buffer(make([]byte, 0, 64<<10), 2*tailSize)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
