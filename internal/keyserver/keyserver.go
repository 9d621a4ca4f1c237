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
// Each connection is served by its own goroutine with the standard
// library's net package: one read, then every complete command of it, then
// one write of their replies. A key command that has to wait (the next
// millisecond's sequence, a time reservation) holds up its own connection
// only.
//
// Every connection is bounded in what it holds: its unparsed input at
// inputLimit (a longer command is a protocol error), its pending replies
// at outputLimit plus one reply. A client that does not read its replies
// gets no more commands run and is not read until it does (its writes
// block); other connections are served meanwhile. A connection whose
// command is an HTTP request line or a Host: header is closed without
// running it, as Redis does, so that a web page cannot post commands to
// the port. The number of connections is capped (Config.MaxClients): one
// over the cap is answered with an error and closed, as Redis does.
//
// There is no authentication: bind it to loopback or a trusted network.
package keyserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/connserver"
	"github.com/shardkeeper/shardkeeper/keyclient"
)

// MaxBatch is the largest n of NEXTID n and NEXTIDB n.
const MaxBatch = keyclient.MaxRESPBatch

// Source issues keys. *cluster.Node implements it.
type Source interface {
	// AppendIDs appends count new keys to dst (see cluster.Node.AppendIDs).
	AppendIDs(ctx context.Context, dst []int64, count int) ([]int64, error)
	// WorkerID is the held worker id, or -1.
	WorkerID() int
}

// keyWait bounds how long one key command waits for the generator.
const keyWait = 5 * time.Second

// DefaultMaxClients is the connection cap when Config.MaxClients is 0:
// the port's worst-case buffers (DefaultMaxClients times the
// per-connection bound of about 3.6 MB: 115 MiB) fit the documented
// memory sizing of a node (docs/operations.md: 512 MiB with everything
// else). Key clients are few and pooled; raise it with the memory.
const DefaultMaxClients = 32

// Config says how ServeConfig serves connections. The zero Config caps
// them at DefaultMaxClients and counts nothing.
type Config struct {
	// MaxClients caps the connections served at once (0 is
	// DefaultMaxClients; negative is an error). A connection accepted
	// while MaxClients are open is answered "-ERR max number of clients
	// reached" and closed without being read, as Redis does; a slot frees
	// when a served connection closes. Each connection holds at most
	// inputLimit plus outputLimit plus one reply (about 3.6 MB), so all
	// of them hold at most MaxClients times that.
	MaxClients int
	// Metrics, when set, counts what the port serves (see Metrics).
	Metrics *Metrics
}

// maxClientsReply answers a connection over Config.MaxClients.
const maxClientsReply = "-ERR max number of clients reached\r\n"

// clients counts a server's open connections against its cap. Only the
// accept loop calls admit; leave is safe for concurrent use.
type clients struct {
	max  int64
	open atomic.Int64
	m    *Metrics // counts the connections; may be nil
}

// admit takes a slot for a new connection, or reports false when all
// are taken.
func (c *clients) admit() bool {
	if c.open.Add(1) > c.max {
		c.open.Add(-1)
		if c.m != nil {
			c.m.refused.Add(1)
		}
		return false
	}
	if c.m != nil {
		c.m.accepted.Add(1)
		c.m.open.Add(1)
	}
	return true
}

// leave frees the slot of a connection that admit took, once it is
// closed.
func (c *clients) leave() {
	c.open.Add(-1)
	if c.m != nil {
		c.m.open.Add(-1)
	}
}

// refuseWait bounds the write of maxClientsReply; a new connection's
// empty socket buffer takes it at once.
const refuseWait = 100 * time.Millisecond

// refuse answers nc, a connection over the cap, and closes it without
// reading it.
func refuse(nc net.Conn) {
	_ = nc.SetWriteDeadline(time.Now().Add(refuseWait))
	_, _ = nc.Write([]byte(maxClientsReply))
	_ = nc.Close()
}

// Serve answers RESP clients on ln with keys from src until ctx ends or
// ln fails, with the zero Config. See ServeConfig.
func Serve(ctx context.Context, ln net.Listener, src Source) error {
	return ServeConfig(ctx, ln, src, Config{})
}

// ServeConfig answers RESP clients on ln with keys from src until ctx
// ends or ln fails, as cfg says: each connection on its own goroutine, at
// most cfg.MaxClients at once. It closes ln and every client connection,
// and waits for their goroutines, before it returns; it returns nil when
// ctx ended. Safe to call once per listener.
func ServeConfig(ctx context.Context, ln net.Listener, src Source, cfg Config) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cfg.MaxClients < 0 {
		_ = ln.Close()
		return fmt.Errorf("keyserver: MaxClients %d: want 0 (the default, %d) or more", cfg.MaxClients, DefaultMaxClients)
	}
	cl := &clients{max: int64(cmp.Or(cfg.MaxClients, DefaultMaxClients)), m: cfg.Metrics}
	src = withMetrics(src, cfg.Metrics)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
	)
	stopped := make(chan struct{})
	go func() {
		<-ctx.Done()
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		close(stopped)
	}()
	var (
		err     error
		backoff connserver.Backoff
	)
	for {
		var nc net.Conn
		nc, err = ln.Accept()
		if err != nil {
			if backoff.Retry(ctx, err) {
				continue
			}
			break
		}
		backoff.Accepted()
		if !cl.admit() {
			refuse(nc)
			continue
		}
		mu.Lock()
		if ctx.Err() != nil { // the stop above has closed the others
			mu.Unlock()
			_ = nc.Close()
			cl.leave()
			continue
		}
		conns[nc] = struct{}{}
		mu.Unlock()
		wg.Go(func() {
			serveConn(ctx, nc, src)
			mu.Lock()
			delete(conns, nc)
			mu.Unlock()
			_ = nc.Close()
			cl.leave()
		})
	}
	<-stopped
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("keyserver: accept: %w", err)
}

// serveConn answers nc's commands until the client quits or goes, a
// protocol error, or ctx ends (ServeConfig then closes nc, which ends its
// read or write). The caller closes nc.
func serveConn(ctx context.Context, nc net.Conn, src Source) {
	c := newConn(src)
	defer c.release()
	buf := make([]byte, 0, readSize)
	for {
		if len(buf) == cap(buf) {
			if cap(buf) >= inputLimit {
				return // process refuses a command this long first
			}
			buf = growInput(buf)
		}
		n, rerr := nc.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		// The write blocks until the client takes the replies: the
		// commands after them wait in buf meanwhile.
		for {
			used, quit := c.process(ctx, buf)
			buf = buf[:copy(buf, buf[used:])]
			if len(c.out) > 0 {
				if _, werr := nc.Write(c.out); werr != nil {
					return
				}
				c.out = c.out[:0]
			}
			c.trim()
			if quit {
				return
			}
			if !c.more {
				break
			}
		}
		if rerr != nil {
			return
		}
		if len(buf) == 0 && cap(buf) > readSize {
			buf = make([]byte, 0, readSize)
		}
	}
}

// readSize is the read buffer of a connection.
const readSize = 64 << 10

// maxRequest bounds the unparsed input of one connection: a longer
// command is a protocol error.
const maxRequest = 1 << 20

// inputLimit bounds a connection's input buffer: an incomplete command of
// up to maxRequest bytes and one read.
const inputLimit = maxRequest + readSize

// growInput returns in, copied into twice its capacity, at most
// inputLimit.
func growInput(in []byte) []byte {
	grown := make([]byte, len(in), min(2*cap(in), inputLimit))
	copy(grown, in)
	return grown
}

// outputLimit bounds the replies a connection has pending, as Redis's
// client output buffer limit does: once that much waits for the client
// to read it, the connection's next commands are not run, and its input
// is not read, until the client has taken the replies. Other connections
// are served meanwhile. The limit is checked between commands, so one
// reply may go past it (NEXTID 100000 is about 2.1 MB): a connection holds
// at most outputLimit plus one reply.
const outputLimit = 256 << 10

// maxKeyReply is the size of a key's integer reply, at most (":" and 19
// digits and CRLF), rounded up.
const maxKeyReply = 24

// conn is one client connection's protocol state; used by one goroutine
// at a time.
type conn struct {
	src  Source
	m    *Metrics // nil counts nothing
	out  []byte   // replies not yet written
	args [][]byte // the current command's arguments (into the input)
	keys []int64
	// pending counts INCR / bare NEXTID commands read but not yet answered:
	// they are answered together with one batch call.
	pending int
	// more says process stopped at outputLimit with commands left: call it
	// again with the rest of the input once out is written.
	more bool
	// inline says the command parse returned came as an inline command.
	inline bool
	// wait bounds key waits to about keyWait; it is renewed every second
	// rather than per command (a timer per command costs 6% of the CPU).
	wait       context.Context
	waitCancel context.CancelFunc
	waitRenew  time.Time
}

// bounded returns a context that ends between keyWait-1s and keyWait
// from now, or with parent.
func (c *conn) bounded(parent context.Context) context.Context {
	now := time.Now()
	if c.wait == nil || now.After(c.waitRenew) {
		c.release()
		c.wait, c.waitCancel = context.WithDeadline(parent, now.Add(keyWait))
		c.waitRenew = now.Add(time.Second)
	}
	return c.wait
}

// release stops the wait timer; call it when the connection ends.
func (c *conn) release() {
	if c.waitCancel != nil {
		c.waitCancel()
		c.wait, c.waitCancel = nil, nil
	}
}

// outSize is the output buffer a connection starts with and returns to.
const outSize = 16 << 10

func newConn(src Source) *conn {
	return &conn{src: src, m: metricsOf(src), out: make([]byte, 0, outSize), args: make([][]byte, 0, 8)}
}

// trim lets an empty output buffer that grew for a large reply go.
func (c *conn) trim() {
	if len(c.out) == 0 && cap(c.out) > outputLimit {
		c.out = make([]byte, 0, outSize)
	}
}

// process runs the complete commands in in, appends the replies to c.out,
// and returns how many bytes it consumed and whether the connection must
// close (QUIT, a request that looks like HTTP, or a protocol error, which
// is answered). It stops early, with c.more set, once c.out holds
// outputLimit bytes: the rest of in waits until c.out is written.
func (c *conn) process(ctx context.Context, in []byte) (used int, quit bool) {
	c.more = false
	for {
		if len(c.out)+c.pending*maxKeyReply >= outputLimit {
			c.more = used < len(in)
			break
		}
		args, n, err := c.parse(in[used:])
		if err != nil {
			c.flushPending(ctx)
			c.m.requestError()
			c.out = append(c.out, "-ERR Protocol error: "+err.Error()+"\r\n"...)
			return len(in), true
		}
		if n == 0 {
			if len(in)-used > maxRequest {
				c.flushPending(ctx)
				c.m.requestError()
				c.out = append(c.out, "-ERR Protocol error: too big request\r\n"...)
				return len(in), true
			}
			break
		}
		used += n
		if len(args) == 0 {
			continue
		}
		if c.looksLikeHTTP(args) {
			// A browser's request (a cross-protocol attack, or a
			// mistake): close at its first line, as Redis does, so that
			// no header or body line runs as a command.
			c.flushPending(ctx)
			c.m.requestError()
			return len(in), true
		}
		if c.dispatch(ctx, args) {
			quit = true
			break
		}
	}
	c.flushPending(ctx)
	return used, quit
}

// looksLikeHTTP says whether the command is an HTTP request line or
// header: POST or Host: as the command name (Redis closes on those two),
// or an inline line that ends in an HTTP version ("GET / HTTP/1.1").
func (c *conn) looksLikeHTTP(args [][]byte) bool {
	if eq(args[0], "POST") || eq(args[0], "Host:") {
		return true
	}
	last := args[len(args)-1]
	return c.inline && len(args) == 3 && len(last) >= 5 && eq(last[:5], "HTTP/")
}

// dispatch runs one command, appending its reply to c.out (or counting it
// in c.pending). It reports whether the client asked to quit.
func (c *conn) dispatch(ctx context.Context, args [][]byte) (quit bool) {
	c.m.request()
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
			c.m.requestError()
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
			c.m.requestError()
			c.out = append(c.out, "-ERR only CONFIG GET is supported\r\n"...)
		}
	case eq(name, "COMMAND"):
		c.out = append(c.out, "*0\r\n"...)
	case eq(name, "SELECT"), eq(name, "CLIENT"), eq(name, "RESET"):
		c.out = append(c.out, "+OK\r\n"...)
	default:
		c.m.requestError()
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
	keys, err := c.src.AppendIDs(c.bounded(ctx), c.keys[:0], n)
	c.keys = keys[:0]
	for _, k := range keys {
		c.integer(k)
	}
	for range n - len(keys) {
		c.keyError(err)
	}
}

func (c *conn) batch(ctx context.Context, n int, packed bool) {
	keys, err := c.src.AppendIDs(c.bounded(ctx), c.keys[:0], n)
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
	c.m.notIssued()
	msg := strings.ReplaceAll(strings.ReplaceAll(err.Error(), "\r", " "), "\n", " ")
	c.out = append(c.out, "-NOTISSUING "...)
	c.out = append(c.out, msg...)
	c.out = append(c.out, '\r', '\n')
}

func (c *conn) wrongArgs(ctx context.Context, cmd string) bool {
	c.flushPending(ctx)
	c.m.requestError()
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

func (e protocolError) Error() string { return string(e) }

// Limits on one command; Redis's are far larger than a key request needs.
const (
	maxArgs   = 1024
	maxArgLen = 64 << 10
)

// parse reads one command from the front of in: a RESP array of bulk
// strings or an inline command (space-separated words, as telnet sends).
// n is 0 when in does not yet hold a whole command. The arguments point
// into in.
func (c *conn) parse(in []byte) (args [][]byte, n int, err error) {
	line, rest, ok := cutLine(in)
	if !ok {
		return nil, 0, nil
	}
	c.args = c.args[:0]
	c.inline = len(line) == 0 || line[0] != '*'
	if c.inline {
		for f := range bytes.FieldsSeq(line) {
			c.args = append(c.args, f)
		}
		return c.args, len(in) - len(rest), nil
	}
	count, err := parseLen(line[1:], maxArgs)
	if err != nil {
		return nil, 0, err
	}
	for range count {
		line, rest, ok = cutLine(rest)
		if !ok {
			return nil, 0, nil
		}
		if len(line) == 0 || line[0] != '$' {
			return nil, 0, protocolError(fmt.Sprintf("expected '$', got '%s'", sanitize(line)))
		}
		size, err := parseLen(line[1:], maxArgLen)
		if err != nil {
			return nil, 0, err
		}
		if len(rest) < size+2 {
			return nil, 0, nil
		}
		if rest[size] != '\r' || rest[size+1] != '\n' {
			return nil, 0, protocolError("expected CRLF after bulk data")
		}
		c.args = append(c.args, rest[:size:size])
		rest = rest[size+2:]
	}
	return c.args, len(in) - len(rest), nil
}

// cutLine splits in after its first LF; line excludes the CRLF (or LF).
func cutLine(in []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(in, '\n')
	if i < 0 {
		return nil, in, false
	}
	line = in[:i]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, in[i+1:], true
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
