package keyclient_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/keyserver"
	"github.com/shardkeeper/shardkeeper/keyclient"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// generator is the node's key source as the key server sees it: a real
// Snowflake generator for worker 7, or a refusal.
type generator struct {
	g   *snowflake.Generator
	err error
}

func (s *generator) AppendIDs(ctx context.Context, dst []int64, n int) ([]int64, error) {
	if s.err != nil {
		return dst, s.err
	}
	return s.g.AppendIDs(ctx, dst, n)
}

func (s *generator) WorkerID() int { return 7 }

func newGenerator(t *testing.T) *generator {
	t.Helper()
	c := snowflake.DefaultConfig()
	c.WorkerID = 7
	g, err := snowflake.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return &generator{g: g}
}

// serveUDP runs the node's datagram server on a loopback port.
func serveUDP(t *testing.T, src keyserver.Source) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- keyserver.ServeUDP(ctx, pc, src) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeUDP: %v", err)
		}
	})
	return pc.LocalAddr().String()
}

// serveRESP runs the node's Redis-protocol server on a loopback port.
func serveRESP(t *testing.T, src keyserver.Source) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- keyserver.Serve(ctx, ln, src) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func context10s(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// replyKeys returns the keys of a UDP reply datagram (none for an error).
func replyKeys(b []byte) []int64 {
	var keys []int64
	for i := keyclient.UDPHeaderSize; i+8 <= len(b); i += 8 {
		keys = append(keys, int64(binary.BigEndian.Uint64(b[i:])))
	}
	return keys
}

// lossyUDP is a proxy in front of the server at srv that drops, or holds
// back by late, the first reply to each request id, and remembers the
// keys of every reply it did not pass on in time.
type lossyUDP struct {
	pc   net.PacketConn
	mu   sync.Mutex
	lost map[int64]bool
}

func newLossyUDP(t *testing.T, srv string, late time.Duration) *lossyUDP {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	p := &lossyUDP{pc: pc, lost: map[int64]bool{}}
	srvAddr, err := net.ResolveUDPAddr("udp", srv)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		var client net.Addr
		answered := map[uint64]bool{}
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if from.String() != srv {
				client = from
				_, _ = pc.WriteTo(buf[:n], srvAddr)
				continue
			}
			reply := append([]byte(nil), buf[:n]...)
			id := binary.BigEndian.Uint64(reply[4:12])
			if answered[id] {
				_, _ = pc.WriteTo(reply, client)
				continue
			}
			answered[id] = true
			p.mu.Lock()
			for _, k := range replyKeys(reply) {
				p.lost[k] = true
			}
			p.mu.Unlock()
			if late > 0 {
				to := client
				time.AfterFunc(late, func() { _, _ = pc.WriteTo(reply, to) })
			}
		}
	}()
	return p
}

// TestUDPLostReplyNeverReused: the first reply to every request is lost,
// or comes back late (after the client sent the request again and took
// the second reply, while it waits for its next request): the client
// returns the keys of the reply it took, never those of the lost or late
// one, and no key twice.
func TestUDPLostReplyNeverReused(t *testing.T) {
	for _, tc := range []struct {
		name string
		late time.Duration
	}{{"lost", 0}, {"late", 30 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newLossyUDP(t, serveUDP(t, newGenerator(t)), tc.late)
			c, err := keyclient.DialUDP(p.pc.LocalAddr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Timeout = 10 * time.Millisecond
			ctx := context10s(t)
			seen := map[int64]bool{}
			for i := range 30 {
				keys, err := c.AppendIDs(ctx, nil, 1+i%3)
				if err != nil {
					t.Fatal(err)
				}
				p.mu.Lock()
				for _, k := range keys {
					if p.lost[k] {
						t.Fatalf("key %d of a %s reply returned", k, tc.name)
					}
					if seen[k] {
						t.Fatalf("key %d returned twice", k)
					}
					seen[k] = true
				}
				p.mu.Unlock()
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if len(p.lost) < 30 {
				t.Fatalf("%d keys held back by the proxy, want every request's first reply", len(p.lost))
			}
		})
	}
}

// TestUDPNoReply: with nothing answering, a call fails after Retries
// resends, with an error matching os.ErrDeadlineExceeded, in about the
// doubling timeouts' sum; a ctx that ends first ends it with ctx's error.
func TestUDPNoReply(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0") // reads nothing
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	c, err := keyclient.DialUDP(pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Timeout, c.Retries = 5*time.Millisecond, 3
	start := time.Now()
	if _, err := c.NextID(context.Background()); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("no server: %v, want os.ErrDeadlineExceeded", err)
	}
	if took := time.Since(start); took < 75*time.Millisecond || took > 5*time.Second {
		t.Fatalf("gave up after %v, want about 5+10+20+40 ms", took)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	c.Timeout, c.Retries = time.Second, 5
	if _, err := c.NextID(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx ended: %v, want context.DeadlineExceeded", err)
	}
}

// TestNotIssuing: on both ports a node that is not issuing answers an
// error matching ErrNotIssuing with its reason, and a count out of range
// is refused by the client before sending.
func TestNotIssuing(t *testing.T) {
	src := &generator{err: errors.New("cluster: not issuing keys")}
	ctx := context10s(t)
	u, err := keyclient.DialUDP(serveUDP(t, src))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if _, err := u.NextID(ctx); !errors.Is(err, keyclient.ErrNotIssuing) {
		t.Fatalf("UDP: %v, want ErrNotIssuing", err)
	}
	if _, err := u.AppendIDs(ctx, nil, keyclient.MaxUDPCount+1); err == nil {
		t.Fatal("UDP: a count past MaxUDPCount accepted")
	}
	r, err := keyclient.DialRESP(ctx, serveRESP(t, src))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.NextID(ctx); !errors.Is(err, keyclient.ErrNotIssuing) || err.Error() != "node is not issuing keys: cluster: not issuing keys" {
		t.Fatalf("RESP: %v, want ErrNotIssuing with the node's reason", err)
	}
	if _, err := r.AppendIDs(ctx, nil, 0); err == nil {
		t.Fatal("RESP: count 0 accepted")
	}
}

// TestRESP fetches keys over the Redis protocol: single keys and a batch
// of MaxRESPBatch, all distinct and increasing, of the node's worker id.
func TestRESP(t *testing.T) {
	ctx := context10s(t)
	c, err := keyclient.DialRESP(ctx, serveRESP(t, newGenerator(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if id, err := c.WorkerID(ctx); err != nil || id != 7 {
		t.Fatalf("WorkerID = %d, %v", id, err)
	}
	var last int64
	check := func(keys []int64) {
		t.Helper()
		for _, k := range keys {
			if k <= last || snowflake.Decompose(k).WorkerID != 7 {
				t.Fatalf("key %d after %d, worker %d", k, last, snowflake.Decompose(k).WorkerID)
			}
			last = k
		}
	}
	for range 10 {
		k, err := c.NextID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		check([]int64{k})
	}
	keys, err := c.AppendIDs(ctx, []int64{-1}, keyclient.MaxRESPBatch)
	if err != nil || len(keys) != 1+keyclient.MaxRESPBatch || keys[0] != -1 {
		t.Fatalf("AppendIDs: %d keys, %v", len(keys), err)
	}
	check(keys[1:])
}

// TestRESPStalledConnection: the first connection's replies never come
// back (a proxy swallows them): the try times out, the client drops that
// connection and sends the command again on a new one, and never returns
// the swallowed reply's keys, even once they could be read.
func TestRESPStalledConnection(t *testing.T) {
	srv := serveRESP(t, newGenerator(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var (
		mu       sync.Mutex
		swallow  []byte
		accepted int
	)
	go func() {
		for {
			cc, err := ln.Accept()
			if err != nil {
				return
			}
			sc, err := net.Dial("tcp", srv)
			if err != nil {
				cc.Close()
				return
			}
			mu.Lock()
			accepted++
			first := accepted == 1
			mu.Unlock()
			go func() { _, _ = io.Copy(sc, cc); sc.Close() }()
			go func() {
				defer cc.Close()
				if !first {
					_, _ = io.Copy(cc, sc)
					return
				}
				buf := make([]byte, 4096)
				for {
					n, err := sc.Read(buf)
					mu.Lock()
					swallow = append(swallow, buf[:n]...)
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	ctx := context10s(t)
	c, err := keyclient.DialRESP(ctx, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Timeout = 200 * time.Millisecond
	keys, err := c.AppendIDs(ctx, nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	// The swallowed reply may still be on its way under load.
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(swallow)
		mu.Unlock()
		if n >= 5+24+2 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if accepted != 2 {
		t.Fatalf("%d connections, want the stalled one and one more", accepted)
	}
	// The swallowed reply: "$24\r\n" and three 8-byte keys.
	if len(swallow) != 5+24+2 {
		t.Fatalf("swallowed %q, want one NEXTIDB 3 reply", swallow)
	}
	for i := range 3 {
		lost := int64(binary.BigEndian.Uint64(swallow[5+8*i:]))
		for _, k := range keys {
			if k == lost {
				t.Fatalf("key %d of the swallowed reply returned", k)
			}
		}
	}
}
