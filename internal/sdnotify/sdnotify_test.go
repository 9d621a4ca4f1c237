package sdnotify

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestNotify sends messages to a path socket and to an abstract socket, as
// systemd names them in $NOTIFY_SOCKET, and reads them back one datagram
// per call.
func TestNotify(t *testing.T) {
	for kind, name := range map[string]string{
		"path":     filepath.Join(t.TempDir(), "notify"),
		"abstract": "@" + testenv.Namespace("shardkeeper-sdnotify-"),
	} {
		t.Run(kind, func(t *testing.T) {
			conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, msg := range []string{Ready + "\nSTATUS=worker id 7", Stopping} {
				if err := Notify(name, msg); err != nil {
					t.Fatal(err)
				}
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				buf := make([]byte, 4096)
				n, err := conn.Read(buf)
				if err != nil || string(buf[:n]) != msg {
					t.Fatalf("received %q, %v; want %q", buf[:n], err, msg)
				}
			}
		})
	}
}

// TestNotifyWithoutSocket: without $NOTIFY_SOCKET Notify does nothing; a
// socket nobody listens on or a relative name is an error naming it.
func TestNotifyWithoutSocket(t *testing.T) {
	if err := Notify("", Ready); err != nil {
		t.Fatalf("Notify without a socket: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nobody")
	if err := Notify(missing, Ready); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Notify to %s: %v; want an error naming it", missing, err)
	}
	if err := Notify("notify.sock", Ready); err == nil || !strings.Contains(err.Error(), "want an absolute path") {
		t.Fatalf("Notify to a relative name: %v", err)
	}
}
