//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/keyserver"
	"github.com/shardkeeper/shardkeeper/keyclient"
)

func TestFormatAndMedian(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{
		{4096000, "keys/s", "4,096,000"},
		{999, "req/s", "999"},
		{1000, "req/s", "1,000"},
		{0.3514, "p99 ms", "0.351"},
	} {
		if got := format(c.v, c.unit); got != c.want {
			t.Errorf("format(%v, %s) = %s, want %s", c.v, c.unit, got, c.want)
		}
	}
	r := &row{}
	for _, v := range []float64{3, 1, 2} {
		r.add(v, "")
	}
	if r.median() != 2 {
		t.Fatalf("median = %v", r.median())
	}
	r.add(10, "")
	if r.median() != 2.5 {
		t.Fatalf("median of 4 = %v", r.median())
	}
	if got := pgArgs("host=127.0.0.1 port=5432 dbname=test"); got != "-h 127.0.0.1 -p 5432 test" {
		t.Fatalf("pgArgs = %q", got)
	}
}

func TestPrintTable(t *testing.T) {
	var b strings.Builder
	a := &row{name: "a", unit: "req/s"}
	a.add(1000, "")
	a.add(3000, "")
	printTable(&b, []*row{a})
	want := "| measurement | unit | round 1 | round 2 | median |"
	if !strings.Contains(b.String(), want) || !strings.Contains(b.String(), "| a | req/s | 1,000 | 3,000 | 2,000 |") {
		t.Fatalf("table:\n%s", b.String())
	}
}

// TestOpenLoopString keeps the figures the README quotes in the summary.
func TestOpenLoopString(t *testing.T) {
	l := latency{Proto: "udp", Retries: 3, Lost: 1, Rate: 1000, Achieved: 999, P99: 0.5, P99Sent: 0.2, MaxLag: time.Millisecond.Seconds()}
	if s := l.String(); !strings.Contains(s, "p99 0.500") || !strings.Contains(s, "p99 from the actual send 0.200 ms") || !strings.Contains(s, "3 retries, 1 lost") {
		t.Fatalf("String() = %s", s)
	}
}

// counter is a keyserver.Source that issues 1, 2, 3, ...
type counter struct {
	mu   sync.Mutex
	next int64
}

func (c *counter) AppendIDs(_ context.Context, dst []int64, n int) ([]int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range n {
		c.next++
		dst = append(dst, c.next)
	}
	return dst, nil
}

func (c *counter) WorkerID() int { return 0 }

// TestOpenLoopUDP runs the UDP open-loop generator against the node's
// datagram server, sending each datagram on its own and sending what is
// due at one time as one run: every scheduled request is answered once,
// nothing is retried on an idle loopback, and the rate is the one asked
// for.
func TestOpenLoopUDP(t *testing.T) {
	for _, runs := range []bool{false, true} {
		t.Run(fmt.Sprintf("runs=%v", runs), func(t *testing.T) {
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- keyserver.ServeUDP(ctx, pc, &counter{}) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("ServeUDP: %v", err)
				}
			}()
			l, err := runOpenLoop(openLoopConfig{proto: "udp", addr: pc.LocalAddr().String(), rate: 4000, d: 500 * time.Millisecond,
				conns: 2, tick: 2 * time.Millisecond, warm: 100 * time.Millisecond, drain: time.Second, runs: runs})
			if err != nil {
				t.Fatal(err)
			}
			if l.Errors != 0 || l.Lost != 0 {
				t.Fatalf("errors or lost: %s", l)
			}
			if l.Count < 1900 || l.Count > 2100 {
				t.Fatalf("%d requests measured, want 2000 (4000/s for 0.5 s): %s", l.Count, l)
			}
			if l.Achieved < 3000 || l.Achieved > 5000 {
				t.Fatalf("achieved %.0f req/s, asked 4000: %s", l.Achieved, l)
			}
			if !(l.P50 > 0 && l.P50 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
				t.Fatalf("percentiles out of order: %s", l)
			}
			if l.P99Lag < 0 || l.P99Lag > l.Max {
				t.Fatalf("send lag p99 %.3f ms out of [0, max %.3f]: %s", l.P99Lag, l.Max, l)
			}
		})
	}
}

// lossyServer answers one-key datagram requests like keyserver.ServeUDP
// but drops the first try of every request whose number is divisible by
// 50, and every try of connection 0's request numbered forever; tries
// returns how often that one was sent.
func lossyServer(t *testing.T, forever int) (addr string, tries func() int64) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	// Room for what arrives while the machine does not run this reader.
	_ = pc.(*net.UDPConn).SetReadBuffer(4 << 20)
	var forevers atomic.Int64
	go func() {
		seen := map[uint64]bool{}
		buf := make([]byte, 64)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n != 16 || string(buf[:4]) != keyclient.UDPRequestMagic || binary.BigEndian.Uint32(buf[12:16]) != 1 {
				t.Errorf("request %x: not one 16-byte request for one key", buf[:n])
				continue
			}
			id := binary.BigEndian.Uint64(buf[4:12])
			seq := int(id & (1<<40 - 1))
			first := !seen[id]
			seen[id] = true
			if id>>40 == 0 && seq == forever {
				forevers.Add(1)
				continue
			}
			if seq%50 == 0 && first {
				continue
			}
			reply := append([]byte(keyclient.UDPReplyMagic), buf[4:16]...)
			reply = binary.BigEndian.AppendUint64(reply, 42)
			_, _ = pc.WriteTo(reply, addr)
		}
	}()
	return pc.LocalAddr().String(), forevers.Load
}

// TestOpenLoopUDPRetries checks that a lost datagram is sent again with
// the same id and counts once, with its full latency from its scheduled
// time (at least the 20 ms retry timeout), that the timeout doubles per
// retry, and that a request never answered counts as lost with the time it
// waited. No bound depends on how fast the machine runs the generator and
// the server: lateness adds latency and delays retries, which keeps the
// lower bounds true and the tries under the ceiling the doubling sets. The
// drain gives a server the machine starves of CPU time (and the retries
// it provokes) two seconds to answer the rest.
func TestOpenLoopUDPRetries(t *testing.T) {
	cfg := openLoopConfig{proto: "udp", rate: 2000, d: 500 * time.Millisecond, conns: 2,
		tick: 200 * time.Microsecond, warm: 100 * time.Millisecond, retryAfter: 20 * time.Millisecond, drain: 2 * time.Second}
	// 600 requests per connection (100 ms warm-up and 500 ms at 1000/s):
	// numbers 0, 50, ..., 550 lose their first try, 12 per connection, 10
	// of them in the measured window; connection 0's request 310 (in the
	// measured window) is never answered.
	var tries func() int64
	cfg.addr, tries = lossyServer(t, 310)
	l, err := runOpenLoop(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if l.Errors != 0 {
		t.Fatalf("errors: %s", l)
	}
	if l.Count < 950 || l.Count > 1050 {
		t.Fatalf("%d requests measured, want 1000 (each once): %s", l.Count, l)
	}
	if l.Lost != 1 {
		t.Fatalf("lost %d, want 1: %s", l.Lost, l)
	}
	// Request 310 is scheduled 310 ms after the start and sent again
	// 20, 60, 140, 300, 620, 1260 and 1900 ms after its first try at the
	// earliest (the timeout doubles up to 640 ms); the ninth try would be
	// due 2540 ms after the first, past the end of the drain (2600 ms
	// after the start). A late sender sends its retries later, never more
	// of them; with a fixed 20 ms timeout there would be over 100.
	n := tries()
	if n < 2 || n > 8 {
		t.Fatalf("the unanswered request was sent %d times, want 2 to 8 (retried, the timeout doubling per retry)", n)
	}
	// 24 first tries dropped, plus the retries of the request that is
	// never answered (the server may not have read the last of them yet).
	if l.Retries < 24+int(n-1) {
		t.Fatalf("%d retries, want at least %d: %s", l.Retries, 24+n-1, l)
	}
	// 21 of the 1000 measured requests (2%) waited at least the retry
	// timeout: the p99 includes the wait.
	if l.P99 < 20 {
		t.Fatalf("p99 %.3f ms: want at least the 20 ms retry timeout: %s", l.P99, l)
	}
	// The lost request waited from 310 ms after the start to at least
	// the end of the drain (2600 ms).
	if l.Max < 2000 {
		t.Fatalf("max %.3f ms: the lost request must count with the time it waited: %s", l.Max, l)
	}
}

// TestOpenLoopRESP runs the RESP generator against a server that answers
// every line with an integer.
func TestOpenLoopRESP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					// *2 $4 INCR $7 counter: five lines per request.
					for range 5 {
						if _, err := r.ReadSlice('\n'); err != nil {
							return
						}
					}
					if _, err := c.Write([]byte(":1\r\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	l, err := runOpenLoop(openLoopConfig{proto: "resp", addr: ln.Addr().String(), rate: 4000, d: 500 * time.Millisecond,
		conns: 2, tick: 200 * time.Microsecond, warm: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if l.Errors != 0 || l.Count < 1900 || l.Count > 2100 || l.Retries != 0 {
		t.Fatalf("want 2000 requests without errors: %s", l)
	}
}
