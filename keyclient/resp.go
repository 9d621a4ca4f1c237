package keyclient

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// MaxRESPBatch is the most keys one NEXTID n or NEXTIDB n command may ask
// for.
const MaxRESPBatch = 100_000

// Defaults of RESP's Timeout and Retries.
const (
	DefaultRESPTimeout = 5 * time.Second
	DefaultRESPRetries = 2
)

// RESP fetches keys from a node's Redis-protocol port (serve --resp) over
// one TCP connection, with NEXTIDB n (keys packed as 8-byte integers). It
// is safe for concurrent use (calls take turns). Set Timeout and Retries
// before the first call.
type RESP struct {
	// Timeout bounds one try: sending the command and reading its reply.
	// 0 means DefaultRESPTimeout (5 s, the node's own bound on a key
	// wait).
	Timeout time.Duration
	// Retries is how often a command whose try timed out or lost its
	// connection is sent again on a new connection. 0 means
	// DefaultRESPRetries (2).
	Retries int

	addr string
	mu   sync.Mutex
	conn net.Conn // nil after a failed try: the next one dials
	r    *bufio.Reader
	cmd  []byte
}

// DialRESP connects to the node's Redis-protocol port at addr
// (host:port), within ctx. Close it when done.
func DialRESP(ctx context.Context, addr string) (*RESP, error) {
	c := &RESP{addr: addr}
	if err := c.dial(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *RESP) dial(ctx context.Context) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return fmt.Errorf("keyclient: %w", err)
	}
	c.conn, c.r = conn, bufio.NewReaderSize(conn, 64<<10)
	return nil
}

// Close closes the client's connection.
func (c *RESP) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}

// NextID returns one new key.
func (c *RESP) NextID(ctx context.Context) (int64, error) {
	return firstKey(c.AppendIDs(ctx, nil, 1))
}

// AppendIDs appends n new keys (1..MaxRESPBatch) to dst with one NEXTIDB
// command. A try that times out (RESP.Timeout) or loses its connection
// closes the connection, so that its reply can never be read as another
// command's, and the command is sent again on a new connection, at most
// RESP.Retries times; the keys of the lost reply are never returned. ctx
// bounds the whole call; its error is returned as is. On any error dst is
// returned unchanged. A node that is not issuing answers an error
// matching ErrNotIssuing, which is not retried.
func (c *RESP) AppendIDs(ctx context.Context, dst []int64, n int) ([]int64, error) {
	if n < 1 || n > MaxRESPBatch {
		return dst, fmt.Errorf("keyclient: count %d out of [1, %d]", n, MaxRESPBatch)
	}
	c.cmd = appendCommand(c.cmd[:0], "NEXTIDB", strconv.Itoa(n))
	reply, err := c.roundTrip(ctx)
	if err != nil {
		return dst, err
	}
	if len(reply) != 8*n {
		return dst, fmt.Errorf("keyclient: malformed reply (%d bytes for %d keys)", len(reply), n)
	}
	for i := range n {
		dst = append(dst, int64(binary.BigEndian.Uint64(reply[8*i:])))
	}
	return dst, nil
}

// WorkerID returns the worker id the node holds, or -1 while it holds
// none.
func (c *RESP) WorkerID(ctx context.Context) (int, error) {
	c.cmd = appendCommand(c.cmd[:0], "WORKERID")
	reply, err := c.roundTrip(ctx)
	if err != nil {
		return 0, err
	}
	id, err := strconv.Atoi(string(reply))
	if err != nil {
		return 0, fmt.Errorf("keyclient: malformed WORKERID reply %q", reply)
	}
	return id, nil
}

// errReply is a reply the node sent as an error ("-..."): the command was
// answered, so it is not sent again.
type errReply struct{ error }

// roundTrip sends c.cmd and returns its reply's payload (a bulk string's
// bytes or an integer's digits), retrying as AppendIDs says.
func (c *RESP) roundTrip(ctx context.Context) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultRESPTimeout
	}
	retries := c.Retries
	if retries <= 0 {
		retries = DefaultRESPRetries
	}
	var last error
	for try := 0; try <= retries; try++ {
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		if c.conn == nil {
			if err := c.dial(ctx); err != nil {
				last = err
				continue
			}
		}
		reply, err := c.try(ctx, timeout)
		var refused errReply
		if err == nil || errors.As(err, &refused) {
			if err != nil {
				return nil, refused.error
			}
			return reply, nil
		}
		// The reply may still come: never read this connection again.
		_ = c.conn.Close()
		c.conn = nil
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		last = err
	}
	return nil, fmt.Errorf("keyclient: no reply from %s after %d tries: %w", c.addr, retries+1, last)
}

// try sends c.cmd on c.conn and reads one reply within timeout and ctx.
func (c *RESP) try(ctx context.Context, timeout time.Duration) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := c.conn.Write(c.cmd); err != nil {
		return nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("keyclient: malformed reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '-':
		return nil, errReply{replyError(string(body))}
	case ':':
		return append([]byte(nil), body...), nil
	case '$':
		size, err := strconv.Atoi(string(body))
		if err != nil || size < 0 || size > 8*MaxRESPBatch {
			return nil, fmt.Errorf("keyclient: malformed bulk length %q", body)
		}
		data := make([]byte, size+2)
		if _, err := io.ReadFull(c.r, data); err != nil {
			return nil, err
		}
		return data[:size], nil
	}
	return nil, fmt.Errorf("keyclient: unexpected reply %q", line)
}

// appendCommand appends a RESP array of bulk strings.
func appendCommand(dst []byte, args ...string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}
