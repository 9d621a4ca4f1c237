// Package keyserver serves a node's keys over the Redis protocol (RESP 2),
// so that any Redis client, and redis-benchmark itself, can fetch
// Snowflake keys with the same command line it uses against Redis:
//
//	INCR <anything>     one fresh key, as an integer reply (the name is ignored)
//	NEXTID              one fresh key, as an integer reply
//	NEXTID n            n fresh keys (1..MaxBatch), as an array of integers
//	NEXTIDB n           n fresh keys packed as one bulk string of n
//	                    big-endian 8-byte integers (cheapest to parse)
//	WORKERID            the worker id the node holds (-1 while none)
//	PING [msg], ECHO msg, QUIT, CONFIG GET name, COMMAND, SELECT, CLIENT ...
//
// Keys are unique across every protocol of the node: they all come from
// the node's one generator. While the node holds no worker id with a valid
// reservation, key commands answer "-NOTISSUING ...". Pipelined INCR and
// NEXTID commands that arrive together are served with one batch call to
// the generator, and all replies to one read are written with one write.
//
// There is no authentication: bind it to loopback or a trusted network.
package keyserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
)

// MaxBatch is the largest n of NEXTID n and NEXTIDB n.
const MaxBatch = 100_000

// Source issues keys. *cluster.Node implements it.
type Source interface {
	// AppendIDs appends count new keys to dst (see cluster.Node.AppendIDs).
	AppendIDs(ctx context.Context, dst []int64, count int) ([]int64, error)
	// WorkerID is the held worker id, or -1.
	WorkerID() int
}

// Serve answers RESP clients on ln with keys from src until ctx ends or
// ln fails. It closes ln and every client connection before it returns,
// and returns nil when ctx ended. Safe to call once per listener.
func Serve(ctx context.Context, ln net.Listener, src Source) error {
	s := &server{src: src, conns: map[net.Conn]struct{}{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		<-ctx.Done()
		_ = ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			_ = c.Close()
		}
		s.mu.Unlock()
		close(stopped)
	}()
	var err error
	for {
		var c net.Conn
		c, err = ln.Accept()
		if err != nil {
			break
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(ctx, c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			_ = c.Close()
		}()
	}
	cancel()
	<-stopped
	s.wg.Wait()
	if ctx.Err() != nil && errors.Is(err, net.ErrClosed) {
		return nil
	}
	return fmt.Errorf("keyserver: accept: %w", err)
}

type server struct {
	src   Source
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// conn is one client connection's state; used by one goroutine.
type conn struct {
	src  Source
	r    *bufio.Reader
	w    io.Writer
	out  []byte   // replies not yet written
	args [][]byte // the current command's arguments (into argb)
	argb []byte
	keys []int64
	// pending counts INCR / bare NEXTID commands read but not yet answered:
	// they are answered together with one batch call.
	pending int
}

func (s *server) handle(ctx context.Context, nc net.Conn) {
	c := &conn{src: s.src, r: bufio.NewReaderSize(nc, 64<<10), w: nc, out: make([]byte, 0, 64<<10)}
	for {
		args, err := c.readCommand()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				var pe protocolError
				if errors.As(err, &pe) {
					c.flushPending(ctx)
					c.out = append(c.out, "-ERR Protocol error: "+string(pe)+"\r\n"...)
				}
			}
			c.flushPending(ctx)
			_, _ = c.w.Write(c.out)
			return
		}
		if len(args) == 0 {
			continue
		}
		quit := c.dispatch(ctx, args)
		if quit || c.r.Buffered() == 0 || len(c.out) >= 48<<10 {
			c.flushPending(ctx)
			if len(c.out) > 0 {
				if _, err := c.w.Write(c.out); err != nil {
					return
				}
				c.out = c.out[:0]
			}
		}
		if quit {
			return
		}
	}
}

// dispatch runs one command, appending its reply to c.out (or counting it
// in c.pending). It reports whether the client asked to quit.
func (c *conn) dispatch(ctx context.Context, args [][]byte) (quit bool) {
	name := args[0]
	switch {
	case eq(name, "INCR"):
		if len(args) != 2 {
			return c.wrongArgs(ctx, "incr")
		}
		c.pending++
		return false
	case eq(name, "NEXTID"), eq(name, "NEXTIDB"):
		if len(args) == 1 && eq(name, "NEXTID") {
			c.pending++
			return false
		}
		c.flushPending(ctx)
		if len(args) != 2 {
			return c.wrongArgs(ctx, strings.ToLower(string(name)))
		}
		n, err := strconv.Atoi(string(args[1]))
		if err != nil || n < 1 || n > MaxBatch {
			c.out = fmt.Appendf(c.out, "-ERR count must be an integer in [1, %d]\r\n", MaxBatch)
			return false
		}
		c.batch(ctx, n, eq(name, "NEXTIDB"))
		return false
	}
	c.flushPending(ctx)
	switch {
	case eq(name, "PING"):
		if len(args) > 1 {
			c.bulk(args[1])
		} else {
			c.out = append(c.out, "+PONG\r\n"...)
		}
	case eq(name, "ECHO"):
		if len(args) != 2 {
			return c.wrongArgs(ctx, "echo")
		}
		c.bulk(args[1])
	case eq(name, "WORKERID"):
		c.integer(int64(c.src.WorkerID()))
	case eq(name, "QUIT"):
		c.out = append(c.out, "+OK\r\n"...)
		return true
	case eq(name, "CONFIG"):
		// redis-benchmark reads "save" and "appendonly" before it starts.
		if len(args) == 3 && eq(args[1], "GET") {
			value := ""
			if eq(args[2], "appendonly") {
				value = "no"
			}
			c.out = append(c.out, "*2\r\n"...)
			c.bulk(args[2])
			c.bulk([]byte(value))
		} else {
			c.out = append(c.out, "-ERR only CONFIG GET is supported\r\n"...)
		}
	case eq(name, "COMMAND"):
		c.out = append(c.out, "*0\r\n"...)
	case eq(name, "SELECT"), eq(name, "CLIENT"), eq(name, "RESET"):
		c.out = append(c.out, "+OK\r\n"...)
	default:
		c.out = fmt.Appendf(c.out, "-ERR unknown command '%s', with args beginning with: (shardkeeper serves INCR, NEXTID [n], NEXTIDB n, WORKERID)\r\n", sanitize(name))
	}
	return false
}

// flushPending answers the counted single-key commands with one batch.
func (c *conn) flushPending(ctx context.Context) {
	n := c.pending
	if n == 0 {
		return
	}
	c.pending = 0
	keys, err := c.src.AppendIDs(ctx, c.keys[:0], n)
	c.keys = keys[:0]
	for _, k := range keys {
		c.integer(k)
	}
	for range n - len(keys) {
		c.keyError(err)
	}
}

func (c *conn) batch(ctx context.Context, n int, packed bool) {
	keys, err := c.src.AppendIDs(ctx, c.keys[:0], n)
	c.keys = keys[:0]
	if err != nil {
		// The keys issued before the error stay unused: they are unique,
		// so dropping them is safe.
		c.keyError(err)
		return
	}
	if packed {
		c.out = append(c.out, '$')
		c.out = strconv.AppendInt(c.out, int64(8*n), 10)
		c.out = append(c.out, '\r', '\n')
		for _, k := range keys {
			c.out = binary.BigEndian.AppendUint64(c.out, uint64(k))
		}
		c.out = append(c.out, '\r', '\n')
		return
	}
	c.out = append(c.out, '*')
	c.out = strconv.AppendInt(c.out, int64(n), 10)
	c.out = append(c.out, '\r', '\n')
	for _, k := range keys {
		c.integer(k)
	}
}

func (c *conn) keyError(err error) {
	msg := strings.ReplaceAll(strings.ReplaceAll(err.Error(), "\r", " "), "\n", " ")
	c.out = append(c.out, "-NOTISSUING "...)
	c.out = append(c.out, msg...)
	c.out = append(c.out, '\r', '\n')
}

func (c *conn) wrongArgs(ctx context.Context, cmd string) bool {
	c.flushPending(ctx)
	c.out = fmt.Appendf(c.out, "-ERR wrong number of arguments for '%s' command\r\n", cmd)
	return false
}

func (c *conn) integer(v int64) {
	c.out = append(c.out, ':')
	c.out = strconv.AppendInt(c.out, v, 10)
	c.out = append(c.out, '\r', '\n')
}

func (c *conn) bulk(b []byte) {
	c.out = append(c.out, '$')
	c.out = strconv.AppendInt(c.out, int64(len(b)), 10)
	c.out = append(c.out, '\r', '\n')
	c.out = append(c.out, b...)
	c.out = append(c.out, '\r', '\n')
}

type protocolError string

func (e protocolError) Error() string { return "keyserver: protocol error: " + string(e) }

// Limits on one command, as Redis's defaults are far larger than anything
// a key request needs.
const (
	maxArgs   = 1024
	maxArgLen = 64 << 10
)

// readCommand reads one RESP array command or one inline command. The
// returned slices are valid until the next call.
func (c *conn) readCommand() ([][]byte, error) {
	line, err := c.readLine()
	if err != nil {
		return nil, err
	}
	c.args = c.args[:0]
	c.argb = c.argb[:0]
	if len(line) == 0 || line[0] != '*' {
		// Inline command: space-separated words (telnet, nc).
		for f := range bytes.FieldsSeq(line) {
			c.args = append(c.args, f)
		}
		return c.args, nil
	}
	n, err := parseLen(line[1:], maxArgs)
	if err != nil {
		return nil, err
	}
	// Copy arguments into argb: the reader's buffer moves on.
	offs := make([]int, 0, 8)
	for range n {
		line, err := c.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 || line[0] != '$' {
			return nil, protocolError(fmt.Sprintf("expected '$', got '%s'", sanitize(line)))
		}
		size, err := parseLen(line[1:], maxArgLen)
		if err != nil {
			return nil, err
		}
		start := len(c.argb)
		c.argb = append(c.argb, make([]byte, size+2)...)
		if _, err := io.ReadFull(c.r, c.argb[start:]); err != nil {
			return nil, err
		}
		c.argb = c.argb[:start+size]
		offs = append(offs, start)
	}
	for i, o := range offs {
		end := len(c.argb)
		if i+1 < len(offs) {
			end = offs[i+1]
		}
		c.args = append(c.args, c.argb[o:end:end])
	}
	return c.args, nil
}

// readLine returns one line without its CRLF (or LF).
func (c *conn) readLine() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, protocolError("too big inline request")
	}
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func parseLen(b []byte, limit int) (int, error) {
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 || n > limit {
		return 0, protocolError(fmt.Sprintf("invalid length '%s'", sanitize(b)))
	}
	return n, nil
}

func eq(b []byte, s string) bool { return len(b) == len(s) && strings.EqualFold(string(b), s) }

// sanitize makes client bytes safe to echo in a one-line error.
func sanitize(b []byte) string {
	if len(b) > 64 {
		b = b[:64]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, string(b))
}
