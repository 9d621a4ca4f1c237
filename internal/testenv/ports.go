package testenv

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// TCPRefused fails the test unless a TCP connect to each addr is refused:
// nothing listens there any more.
func TCPRefused(t testing.TB, addrs ...string) {
	t.Helper()
	for _, addr := range addrs {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err == nil {
			conn.Close()
			t.Fatalf("connect to %s succeeded, want it refused", addr)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("connect to %s: %v, want connection refused", addr, err)
		}
	}
}
