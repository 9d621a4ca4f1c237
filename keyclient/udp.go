package keyclient

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// The datagram protocol (docs/key-protocols.md): one request per UDP
// datagram, one reply datagram per request, integers big-endian.
//
//	request  "SKK1" | id (8 bytes) | count (uint32) | zero padding   UDPRequestLen(count) bytes or more
//	reply    "SKR1" | id (8 bytes) | count (uint32) | count keys (int64 each)
//	error    "SKR1" | id (8 bytes) | 0 (uint32)     | message (UTF-8)
const (
	// UDPRequestMagic starts every request datagram.
	UDPRequestMagic = "SKK1"
	// UDPReplyMagic starts every reply datagram, keys or error.
	UDPReplyMagic = "SKR1"
	// UDPHeaderSize is the size of a request's or reply's fixed part:
	// magic, id and count.
	UDPHeaderSize = 16
	// MaxUDPCount is the most keys one datagram request may ask for (the
	// reply is 16 + 8*count bytes: 8,016 at most, a single datagram on
	// loopback; keep count at 180 or less across a 1500-byte MTU).
	MaxUDPCount = 1000
)

// UDPRequestLen is the size a request for count keys is padded to:
// 8*count+8 bytes, 16 at least, so that a reply is never more than 1.5
// times its request.
func UDPRequestLen(count int) int { return max(UDPHeaderSize, 8*count+8) }

// AppendUDPRequest appends to dst a request datagram for count keys with
// the given id, padded to UDPRequestLen(count).
func AppendUDPRequest(dst []byte, id uint64, count int) []byte {
	dst = append(dst, UDPRequestMagic...)
	dst = binary.BigEndian.AppendUint64(dst, id)
	dst = binary.BigEndian.AppendUint32(dst, uint32(count))
	for range UDPRequestLen(count) - UDPHeaderSize {
		dst = append(dst, 0)
	}
	return dst
}

// ErrNotIssuing is matched (errors.Is) by the error of a request the node
// answered with NOTISSUING: it holds no worker id with a valid time
// reservation. The error's text ends with the node's reason.
var ErrNotIssuing = errors.New("node is not issuing keys")

// notIssuingPrefix starts the message of a NOTISSUING error reply, on
// both ports.
const notIssuingPrefix = "NOTISSUING "

// replyError is the error for a node's error message: ErrNotIssuing with
// the node's reason, or the message itself.
func replyError(msg string) error {
	if len(msg) >= len(notIssuingPrefix) && msg[:len(notIssuingPrefix)] == notIssuingPrefix {
		return fmt.Errorf("%w: %s", ErrNotIssuing, msg[len(notIssuingPrefix):])
	}
	return fmt.Errorf("keyclient: node refused: %s", msg)
}

// Defaults of UDP's Timeout and Retries.
const (
	DefaultUDPTimeout = 20 * time.Millisecond
	DefaultUDPRetries = 5
)

// UDP fetches keys from a node's datagram port (serve --udp). It has one
// request in flight at a time; it is safe for concurrent use (calls take
// turns). Open one per goroutine for more requests in flight. Set Timeout
// and Retries before the first call.
type UDP struct {
	// Timeout is how long a request waits for its reply before it is
	// sent again; each further try waits twice as long as the one
	// before. 0 means DefaultUDPTimeout (20 ms).
	Timeout time.Duration
	// Retries is how often a request is sent again; past it the call
	// fails with an error matching os.ErrDeadlineExceeded. 0 means
	// DefaultUDPRetries (5): with the default Timeout a call gives up
	// after 20+40+80+160+320+640 ms, 1.26 s.
	Retries int

	mu   sync.Mutex
	conn *net.UDPConn
	id   uint64
	req  []byte
	buf  []byte
}

// DialUDP returns a client of the node's datagram port at addr
// (host:port). It sends nothing: a wrong address shows at the first
// request. Close it when done.
func DialUDP(addr string) (*UDP, error) {
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("keyclient: %w", err)
	}
	c, err := net.DialUDP("udp", nil, ra)
	if err != nil {
		return nil, fmt.Errorf("keyclient: %w", err)
	}
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	return &UDP{conn: c, id: binary.BigEndian.Uint64(seed[:]), buf: make([]byte, UDPHeaderSize+8*MaxUDPCount+512)}, nil
}

// Close closes the client's socket.
func (c *UDP) Close() error { return c.conn.Close() }

// NextID returns one new key.
func (c *UDP) NextID(ctx context.Context) (int64, error) {
	return firstKey(c.AppendIDs(ctx, nil, 1))
}

// AppendIDs appends n new keys (1..MaxUDPCount) to dst with one request,
// sent again when no reply comes in time (see UDP.Timeout and
// UDP.Retries). ctx bounds the whole call; its error is returned as is.
// On any error dst is returned unchanged. A node that is not issuing
// answers an error matching ErrNotIssuing, which is not retried.
func (c *UDP) AppendIDs(ctx context.Context, dst []int64, n int) ([]int64, error) {
	if n < 1 || n > MaxUDPCount {
		return dst, fmt.Errorf("keyclient: count %d out of [1, %d]", n, MaxUDPCount)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultUDPTimeout
	}
	retries := c.Retries
	if retries <= 0 {
		retries = DefaultUDPRetries
	}
	// A new id per request: a late reply to an earlier request, or to an
	// earlier try of this one, carries another id and is ignored below.
	c.id++
	c.req = AppendUDPRequest(c.req[:0], c.id, n)
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetReadDeadline(time.Now()) })
	defer stop()
	for try := 0; try <= retries; try++ {
		if err := ctxErr(ctx); err != nil {
			return dst, err
		}
		if _, err := c.conn.Write(c.req); err != nil {
			return dst, fmt.Errorf("keyclient: udp send: %w", err)
		}
		deadline := time.Now().Add(timeout << try)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		_ = c.conn.SetReadDeadline(deadline)
		for {
			m, err := c.conn.Read(c.buf)
			if err != nil {
				if err := ctxErr(ctx); err != nil {
					return dst, err
				}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					break // send again
				}
				return dst, fmt.Errorf("keyclient: udp receive: %w", err)
			}
			b := c.buf[:m]
			if m < UDPHeaderSize || string(b[:4]) != UDPReplyMagic || binary.BigEndian.Uint64(b[4:12]) != c.id {
				continue // a late reply to an earlier try or request
			}
			count := int(binary.BigEndian.Uint32(b[12:16]))
			if count == 0 {
				return dst, replyError(string(b[UDPHeaderSize:]))
			}
			if count != n || m != UDPHeaderSize+8*n {
				return dst, fmt.Errorf("keyclient: malformed reply (%d keys, %d bytes)", count, m)
			}
			for i := range n {
				dst = append(dst, int64(binary.BigEndian.Uint64(b[UDPHeaderSize+8*i:])))
			}
			return dst, nil
		}
	}
	return dst, fmt.Errorf("keyclient: no reply from %s after %d tries: %w", c.conn.RemoteAddr(), retries+1, os.ErrDeadlineExceeded)
}

// ctxErr is ctx.Err(), or context.DeadlineExceeded once ctx's deadline
// has passed even if its timer has not fired yet (a read deadline set to
// it can expire first).
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// firstKey is the one key of a one-key AppendIDs call, or its error.
func firstKey(keys []int64, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return keys[0], nil
}
