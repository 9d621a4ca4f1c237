package keyserver

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/snowflake"
)

type genSource struct {
	g   *snowflake.Generator
	err error // when set, every call fails
}

func (s *genSource) AppendIDs(ctx context.Context, dst []int64, n int) ([]int64, error) {
	if s.err != nil {
		return dst, s.err
	}
	return s.g.AppendIDs(ctx, dst, n)
}

func (s *genSource) WorkerID() int { return 7 }

func start(t *testing.T, src Source) string { return startWith(t, src, Serve) }

type serveMode struct {
	name  string
	serve func(context.Context, net.Listener, Source) error
}

// modes are the ways of serving a test runs in: Serve, the zero Config.
var modes = []serveMode{{"Serve", Serve}}

func startWith(t *testing.T, src Source, serve func(context.Context, net.Listener, Source) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, src) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func newSource(t *testing.T) *genSource {
	cfg := snowflake.DefaultConfig()
	cfg.WorkerID = 7
	g, err := snowflake.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &genSource{g: g}
}

// reply reads one RESP reply as a Go value: string, int64, error, []any or
// nil.
func reply(t *testing.T, r *bufio.Reader) any {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read reply: %v", err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '+':
		return line[1:]
	case '-':
		return errors.New(line[1:])
	case ':':
		n, err := strconv.ParseInt(line[1:], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	case '$':
		n, _ := strconv.Atoi(line[1:])
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			t.Fatal(err)
		}
		return string(b[:n])
	case '*':
		n, _ := strconv.Atoi(line[1:])
		out := make([]any, n)
		for i := range out {
			out[i] = reply(t, r)
		}
		return out
	}
	t.Fatalf("bad reply %q", line)
	return nil
}

func command(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func TestCommands(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { testCommands(t, startWith(t, newSource(t), m.serve)) })
	}
}

func testCommands(t *testing.T, addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	// Everything pipelined in one write: replies come back in order.
	_, err = io.WriteString(c, command("PING")+command("INCR", "counter:000000000001")+command("incr", "x")+
		command("NEXTID")+command("NEXTID", "3")+command("NEXTIDB", "2")+command("WORKERID")+
		command("CONFIG", "GET", "appendonly")+command("NEXTID", "0")+command("FLUSHALL")+command("INCR")+
		"PING hello\r\n"+command("ECHO", "a b"))
	if err != nil {
		t.Fatal(err)
	}
	if got := reply(t, r); got != "PONG" {
		t.Fatalf("PING = %v", got)
	}
	var last int64
	next := func(v any) {
		t.Helper()
		k, ok := v.(int64)
		if !ok || k <= last || snowflake.Decompose(k).WorkerID != 7 {
			t.Fatalf("key %v after %d: want a larger key of worker 7", v, last)
		}
		last = k
	}
	next(reply(t, r))
	next(reply(t, r))
	next(reply(t, r))
	arr := reply(t, r).([]any)
	if len(arr) != 3 {
		t.Fatalf("NEXTID 3 = %v", arr)
	}
	for _, k := range arr {
		next(k)
	}
	packed := reply(t, r).(string)
	if len(packed) != 16 {
		t.Fatalf("NEXTIDB 2 = %d bytes", len(packed))
	}
	next(int64(binary.BigEndian.Uint64([]byte(packed[:8]))))
	next(int64(binary.BigEndian.Uint64([]byte(packed[8:]))))
	if got := reply(t, r); got != int64(7) {
		t.Fatalf("WORKERID = %v", got)
	}
	if got := reply(t, r).([]any); len(got) != 2 || got[0] != "appendonly" || got[1] != "no" {
		t.Fatalf("CONFIG GET = %v", got)
	}
	for _, want := range []string{"count must be an integer in [1, 100000]", "unknown command 'FLUSHALL'", "wrong number of arguments for 'incr'"} {
		if err, ok := reply(t, r).(error); !ok || !strings.Contains(err.Error(), want) {
			t.Fatalf("reply = %v, want an error with %q", err, want)
		}
	}
	if got := reply(t, r); got != "hello" {
		t.Fatalf("inline PING = %v", got)
	}
	if got := reply(t, r); got != "a b" {
		t.Fatalf("ECHO = %v", got)
	}
}

func TestNotIssuing(t *testing.T) {
	addr := start(t, &genSource{err: errors.New("cluster: not issuing keys\nsee logs")})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	_, _ = io.WriteString(c, command("INCR", "a")+command("INCR", "b")+command("NEXTID", "10"))
	for range 3 {
		if err, ok := reply(t, r).(error); !ok || !strings.HasPrefix(err.Error(), "NOTISSUING cluster: not issuing keys see logs") {
			t.Fatalf("reply = %v", err)
		}
	}
}

func TestProtocolError(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { testProtocolError(t, startWith(t, newSource(t), m.serve)) })
	}
}

func testProtocolError(t *testing.T, addr string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "*1\r\n+PING\r\n")
	b, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(b), "-ERR Protocol error: expected '$'") {
		t.Fatalf("reply = %q", b)
	}
}

// TestConcurrentClientsUnique: many connections, pipelined, all keys
// distinct.
func TestConcurrentClientsUnique(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { testConcurrentClientsUnique(t, startWith(t, newSource(t), m.serve)) })
	}
}

func testConcurrentClientsUnique(t *testing.T, addr string) {
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			r := bufio.NewReader(c)
			var req strings.Builder
			for range 50 {
				req.WriteString(command("INCR", "k"))
			}
			req.WriteString(command("NEXTID", "500"))
			for range 20 {
				if _, err := io.WriteString(c, req.String()); err != nil {
					t.Error(err)
					return
				}
				var keys []int64
				for range 50 {
					keys = append(keys, reply(t, r).(int64))
				}
				for _, k := range reply(t, r).([]any) {
					keys = append(keys, k.(int64))
				}
				mu.Lock()
				for _, k := range keys {
					if seen[k] {
						t.Errorf("duplicate key %d", k)
					}
					seen[k] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 8*20*550 {
		t.Fatalf("%d keys, want %d", len(seen), 8*20*550)
	}
}

// TestRedisClients drives the server with the real redis-cli and
// redis-benchmark when they are installed.
func TestRedisClients(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed (Debian package redis-tools)")
	}
	addr := start(t, newSource(t))
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command(cli, "-h", host, "-p", port, "INCR", "anything").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli: %v\n%s", err, out)
	}
	k, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil || snowflake.Decompose(k).WorkerID != 7 {
		t.Fatalf("redis-cli INCR = %q", out)
	}
	bench, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err = exec.CommandContext(ctx, bench, "-h", host, "-p", port, "-t", "incr", "-n", "2000", "-c", "4", "--csv").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"INCR"`) || strings.Contains(string(out), "ERR") {
		t.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
}

// TestSlowReader: a client that pipelines far more output than the socket
// holds before it reads gets every reply, in order (the event loop keeps
// the rest for when the socket drains and holds the input meanwhile).
func TestSlowReader(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			addr := startWith(t, newSource(t), m.serve)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var req strings.Builder
			for range 20 {
				req.WriteString(command("NEXTIDB", "100000"))
			}
			req.WriteString(command("PING") + "QUIT\r\n")
			go func() { _, _ = io.WriteString(c, req.String()) }()
			time.Sleep(200 * time.Millisecond)
			r := bufio.NewReaderSize(c, 1<<20)
			var last int64
			for i := range 20 {
				b := reply(t, r).(string)
				if len(b) != 800000 {
					t.Fatalf("reply %d: %d bytes", i, len(b))
				}
				for j := 0; j < len(b); j += 8 {
					k := int64(binary.BigEndian.Uint64([]byte(b[j : j+8])))
					if k <= last {
						t.Fatalf("key %d after %d", k, last)
					}
					last = k
				}
			}
			if got := reply(t, r); got != "PONG" {
				t.Fatalf("PING = %v", got)
			}
			if got := reply(t, r); got != "OK" {
				t.Fatalf("QUIT = %v", got)
			}
			if _, err := r.ReadByte(); err != io.EOF {
				t.Fatalf("after QUIT: %v, want EOF", err)
			}
		})
	}
}

// TestDefaultMaxClientsFitsTheSizing: the default cap's worst-case
// buffers fit the RESP share of the documented node sizing
// (docs/operations.md: 115 MiB of 512 MiB).
func TestDefaultMaxClientsFitsTheSizing(t *testing.T) {
	perConn := inputLimit + outputLimit + maxRequest
	if total := DefaultMaxClients * perConn; total > 128<<20 {
		t.Fatalf("DefaultMaxClients %d × %d bytes = %d MiB, over the 128 MiB the sizing allows", DefaultMaxClients, perConn, total>>20)
	}
}
