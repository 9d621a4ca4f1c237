package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestServeMaxBorrowBounded: `serve --max-borrow` below 0 or above
// --reservation is a usage error before anything starts.
func TestServeMaxBorrowBounded(t *testing.T) {
	for _, args := range [][]string{
		{"--max-borrow", "-1ms"},
		{"--max-borrow", "4s"}, // the default reservation is 3s
		{"--max-borrow", "2s", "--reservation", "1s"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a serve that starts runs until then
		out, err := run(t, ctx, append([]string{"serve", "--data-dir", t.TempDir(), "--http", "off"}, args...)...)
		cancel()
		if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--max-borrow") || !strings.Contains(err.Error(), "--reservation") {
			t.Errorf("serve %s: err = %v (exit %d), want a usage error naming the --reservation bound\n%s", strings.Join(args, " "), err, exitCode(err), out)
		}
	}
}
