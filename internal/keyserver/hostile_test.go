package keyserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/keyclient"
)

// Tests of what a hostile or careless client sends to the key ports.

// countingSource issues 1, 2, 3, ... and counts the keys it issued.
type countingSource struct{ issued atomic.Int64 }

func (s *countingSource) AppendIDs(_ context.Context, dst []int64, n int) ([]int64, error) {
	last := s.issued.Add(int64(n))
	for k := last - int64(n) + 1; k <= last; k++ {
		dst = append(dst, k)
	}
	return dst, nil
}

func (s *countingSource) WorkerID() int { return 1 }

// settled waits until s issues no key for 300 ms (at most a minute) and
// returns how many it issued.
func (s *countingSource) settled(t *testing.T) int64 {
	t.Helper()
	last := s.issued.Load()
	for start := time.Now(); time.Since(start) < time.Minute; {
		time.Sleep(300 * time.Millisecond)
		n := s.issued.Load()
		if n == last {
			return n
		}
		last = n
	}
	t.Errorf("still issuing keys after a minute: %d so far", last)
	return last
}

// heapInUse is the heap in use after a collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// pingWithin checks that another client is served: PING answered within
// d (a liveness bound, far above a normal round trip).
func pingWithin(t *testing.T, addr string, d time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "+PONG\r\n" {
		t.Errorf("another client's PING: %q, %v: want +PONG within %v", line, err, d)
	}
}

// TestHostileRESPOutputCap: a client pipelines 300 NEXTID 100000 (4.5 KB,
// 630 MB of replies) and reads nothing. The server runs only the commands
// whose replies fit the connection's output limit and the socket buffers,
// and keeps serving other clients.
func TestHostileRESPOutputCap(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			src := &countingSource{}
			addr := startWith(t, src, m.serve)
			before := heapInUse()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const commands, count = 300, 100_000
			req := strings.Repeat("NEXTID 100000\r\n", commands) + "PING\r\nQUIT\r\n"
			if _, err := io.WriteString(c, req); err != nil {
				t.Fatal(err)
			}
			pingWithin(t, addr, 10*time.Second)
			issued := src.settled(t)
			grown := heapInUse() - before
			t.Logf("client not reading: %d of %d commands run, heap +%d MB", issued/count, commands, grown>>20)
			// The socket buffers hold a few replies; the server holds
			// at most its output limit and one reply.
			if issued >= 50*count {
				t.Errorf("%d keys issued for a client that reads nothing: want fewer than %d commands run", issued, 50)
			}
			if grown > 64<<20 {
				t.Errorf("heap grew %d MB for a client that reads nothing: want under 64 MB", grown>>20)
			}
			pingWithin(t, addr, 10*time.Second)
			// TestSlowReader checks that a client that reads late gets
			// every reply.
		})
	}
}

// TestHostileRESPInputCap: a client leaves three NEXTID 100000 unread and
// then streams PING commands. The server stops reading the connection
// while its replies wait: the client's writes block once the socket
// buffers are full, and the server's buffers stay bounded. Once the client
// reads, every command is answered.
func TestHostileRESPInputCap(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			src := &countingSource{}
			addr := startWith(t, src, m.serve)
			before := heapInUse()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, strings.Repeat("NEXTID 100000\r\n", 3)); err != nil {
				t.Fatal(err)
			}
			const limit = 256 << 20
			var written atomic.Int64
			done := make(chan struct{})
			go func() {
				defer close(done)
				chunk := []byte(strings.Repeat("PING\r\n", 64<<10/6))
				for written.Load() < limit {
					n, err := c.Write(chunk)
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
			// Wait until the writer is blocked (or done).
			last := int64(-1)
			for start := time.Now(); time.Since(start) < time.Minute; {
				time.Sleep(500 * time.Millisecond)
				if n := written.Load(); n == last {
					break
				} else {
					last = n
				}
			}
			grown := heapInUse() - before
			t.Logf("replies unread: server took %d MB of input, heap +%d MB", written.Load()>>20, grown>>20)
			if n := written.Load(); n > 64<<20 {
				t.Errorf("the server took %d MB of input while its replies waited: want under 64 MB (the socket buffers and one request)", n>>20)
			}
			if grown > 64<<20 {
				t.Errorf("heap grew %d MB: want under 64 MB", grown>>20)
			}
			pingWithin(t, addr, 10*time.Second)

			// Stop the writer; then every whole PING is answered.
			_ = c.SetWriteDeadline(time.Now())
			<-done
			pings := written.Load() / 6
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
			r := bufio.NewReaderSize(c, 1<<20)
			for range 3 {
				if arr, ok := reply(t, r).([]any); !ok || len(arr) != 100_000 {
					t.Fatalf("NEXTID 100000: %d keys", len(arr))
				}
			}
			for i := range pings {
				line, err := r.ReadSlice('\n')
				if err != nil || string(line) != "+PONG\r\n" {
					t.Fatalf("PING %d of %d: %q, %v", i, pings, line, err)
				}
			}
		})
	}
}

// TestHostileRESPHTTP: an HTTP request sent to the RESP port (a browser
// page posting to localhost) is closed at its first line: no line of it
// runs as a command.
func TestHostileRESPHTTP(t *testing.T) {
	body := "INCR a\r\nNEXTID 5\r\n"
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			src := &countingSource{}
			addr := startWith(t, src, m.serve)
			for _, tc := range []struct{ send, want string }{
				{"POST / HTTP/1.1\r\nHost: 127.0.0.1:6380\r\nContent-Type: text/plain\r\nContent-Length: 18\r\n\r\n" + body, ""},
				{"GET /INCR HTTP/1.1\r\nHost: 127.0.0.1:6380\r\n\r\n", ""},
				{"PUT /x HTTP/1.0\r\n\r\n" + body, ""},
				{"post /\r\n" + body, ""},
				// A proxy or a client that starts with headers.
				{"PING\r\nHost: example.com\r\n" + body, "+PONG\r\n"},
				{command("HOST:", "x") + body, ""},
			} {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				_, _ = io.WriteString(c, tc.send)
				got, err := io.ReadAll(c)
				c.Close()
				if err != nil || string(got) != tc.want {
					t.Errorf("sent %q: got %q, %v; want %q and the connection closed", tc.send, got, err, tc.want)
				}
			}
			if n := src.issued.Load(); n != 0 {
				t.Errorf("%d keys issued to HTTP requests", n)
			}
			// A Redis client's GET is an unknown command, not HTTP.
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r := bufio.NewReader(c)
			_, _ = io.WriteString(c, command("GET", "key")+"GET key\r\nINCR a\r\n")
			for range 2 {
				if err, ok := reply(t, r).(error); !ok || !strings.Contains(err.Error(), "unknown command 'GET'") {
					t.Fatalf("GET: %v, want unknown command", err)
				}
			}
			if k := reply(t, r); k != int64(1) {
				t.Fatalf("INCR after GET = %v", k)
			}
		})
	}
}

// TestHostileRESPBulkWithoutCRLF: bulk data longer than its length (no
// CRLF right after it) is a protocol error; the rest is not run.
func TestHostileRESPBulkWithoutCRLF(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			src := &countingSource{}
			addr := startWith(t, src, m.serve)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.WriteString(c, "*2\r\n$4\r\nECHO\r\n$1\r\nXY\r\nINCR a\r\n")
			got, _ := io.ReadAll(c)
			if !strings.HasPrefix(string(got), "-ERR Protocol error: expected CRLF after bulk data") || strings.Count(string(got), "\n") != 1 {
				t.Errorf("reply %q: want one protocol error and the connection closed", got)
			}
			if n := src.issued.Load(); n != 0 {
				t.Errorf("%d keys issued after a malformed bulk string", n)
			}
		})
	}
}

// TestHostileRESPProcessBounded: the protocol handler itself stops at the
// output limit when handed a whole pipeline at once.
func TestHostileRESPProcessBounded(t *testing.T) {
	c := newConn(&countingSource{})
	in := []byte(strings.Repeat("NEXTID 100000\r\n", 300) + strings.Repeat("INCR a\r\n", 1<<17))
	used, quit := c.process(context.Background(), in)
	if quit || used == 0 || used >= len(in) || len(c.out) > 4<<20 {
		t.Fatalf("process: used %d of %d bytes, quit %v, %d bytes of output: want some commands run and at most 4 MB of output", used, len(in), quit, len(c.out))
	}
	// The same with single-key commands only: they are answered in
	// batches, bounded the same way.
	c = newConn(&countingSource{})
	in = []byte(strings.Repeat("INCR a\r\n", 1<<20))
	used, _ = c.process(context.Background(), in)
	if used == 0 || used >= len(in) || len(c.out) > 4<<20 {
		t.Fatalf("process INCR x %d: used %d of %d bytes, %d bytes of output", 1<<20, used, len(in), len(c.out))
	}
}

// TestHostileUDPReplyIsNotARequest: a reply, keys or error, sent back to
// the server (its source address forged to be the server's own, or
// another key port's) is dropped: a reply is never a request.
func TestHostileUDPReplyIsNotARequest(t *testing.T) {
	src := &countingSource{}
	b := newUDPBatch(src)
	ctx := context.Background()
	out := make([][]byte, 3)
	b.answer(ctx, [][]byte{keyclient.AppendUDPRequest(nil, 1, 1), keyclient.AppendUDPRequest(nil, 2, 5), keyclient.AppendUDPRequest(nil, 3, MaxUDPCount+1)}, out)
	if out[0] == nil || out[1] == nil || out[2] == nil || src.issued.Load() != 6 {
		t.Fatalf("requests answered %q with %d keys", out, src.issued.Load())
	}
	replies := [][]byte{bytes.Clone(out[0]), bytes.Clone(out[1]), bytes.Clone(out[2])}
	for range 3 {
		b.answer(ctx, replies, out)
		for i, r := range out {
			if r != nil {
				t.Fatalf("reply %q answered with %q", replies[i], r)
			}
		}
	}
	if n := src.issued.Load(); n != 6 {
		t.Fatalf("%d keys issued, want 6: replies were answered", n)
	}
}

// dialServed opens a connection and checks that it is served: PING
// answered +PONG. It returns the connection, or nil and the reply or error
// it got instead.
func dialServed(t *testing.T, addr string) (net.Conn, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		c.Close()
		return nil, err.Error()
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if line != "+PONG\r\n" {
		c.Close()
		return nil, fmt.Sprintf("%q, %v", line, err)
	}
	return c, ""
}

// TestHostileRESPMaxClients: with MaxClients 3, three connections are
// served; one more is answered "-ERR max number of clients reached" and
// closed without running what it sent; once a served connection closes,
// a new one takes its slot, and the next is refused again.
func TestHostileRESPMaxClients(t *testing.T) {
	const maxClients = 3
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			src := &countingSource{}
			addr := startWith(t, src, func(ctx context.Context, ln net.Listener, src Source) error {
				return ServeConfig(ctx, ln, src, Config{MaxClients: maxClients})
			})
			var served []net.Conn
			defer func() {
				for _, c := range served {
					c.Close()
				}
			}()
			for i := range maxClients {
				c, got := dialServed(t, addr)
				if c == nil {
					t.Fatalf("connection %d of %d: PING got %s, want +PONG", i+1, maxClients, got)
				}
				served = append(served, c)
			}
			refused := func(send string) {
				t.Helper()
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				if send != "" {
					_, _ = io.WriteString(c, send)
				}
				got, err := io.ReadAll(c)
				if send != "" && errors.Is(err, syscall.ECONNRESET) {
					// Closing a socket with unread input resets it,
					// after the reply.
					err = nil
				}
				if string(got) != maxClientsReply || err != nil {
					t.Errorf("connection over the cap (sent %q): got %q, %v; want %q and the connection closed", send, got, err, maxClientsReply)
				}
			}
			refused("")
			refused("INCR a\r\nNEXTID 5\r\n")
			for i, c := range served {
				if _, err := io.WriteString(c, "PING\r\n"); err != nil {
					t.Fatal(err)
				}
				if line, err := bufio.NewReader(c).ReadString('\n'); line != "+PONG\r\n" {
					t.Errorf("served connection %d after the refusals: PING got %q, %v", i+1, line, err)
				}
			}

			// Closing a served connection frees its slot once the server
			// sees the close.
			served[0].Close()
			served = served[1:]
			var again net.Conn
			for start := time.Now(); again == nil; {
				c, got := dialServed(t, addr)
				if c != nil {
					again = c
					break
				}
				if time.Since(start) > 10*time.Second {
					t.Fatalf("10 s after a served connection closed, a new one still gets %s", got)
				}
				time.Sleep(10 * time.Millisecond)
			}
			served = append(served, again)
			refused("")
			if n := src.issued.Load(); n != 0 {
				t.Errorf("%d keys issued: the connections over the cap ran commands", n)
			}
		})
	}
}
