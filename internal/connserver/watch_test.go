package connserver_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/connserver"
)

// tcpPair is both ends of one loopback TCP connection.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close(); _ = client.Close() })
	return server, client
}

// TestWatchedConn: a watch calls gone when the client closes its end, not
// when it is stopped; bytes the client sends during a watch reach the
// next reads whole and in order, and a stopped watch leaves no deadline.
func TestWatchedConn(t *testing.T) {
	t.Run("gone", func(t *testing.T) {
		server, client := tcpPair(t)
		c := &connserver.WatchedConn{Conn: server}
		gone := make(chan struct{})
		stop := c.Watch(func() { close(gone) })
		_ = client.Close()
		select {
		case <-gone:
		case <-time.After(10 * time.Second):
			t.Fatal("the client closed its end; gone was not called")
		}
		stop()
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("Read after the client left: %v, want EOF", err)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		server, client := tcpPair(t)
		c := &connserver.WatchedConn{Conn: server}
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond)) // the caller's idle deadline: cleared by Watch
		stop := c.Watch(func() { t.Error("gone called for a client that stayed") })
		time.Sleep(20 * time.Millisecond)
		if _, err := client.Write([]byte("pipelined")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		stop()
		stop2 := c.Watch(func() { t.Error("gone called while a byte waits") })
		stop2()
		got := make([]byte, len("pipelined"))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "pipelined" {
			t.Errorf("after the watch: %q, %v; want the pipelined bytes", got, err)
		}
		stop3 := c.Watch(func() { t.Error("gone called for a client that stayed") })
		stop3()
		if _, err := client.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, got[:1]); err != nil || got[0] != 'x' {
			t.Errorf("a read after a stopped watch: %q, %v", got[:1], err)
		}
	})
}
