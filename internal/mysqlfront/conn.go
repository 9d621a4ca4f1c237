package mysqlfront

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/shardkeeper/shardkeeper/internal/connserver"
)

// maxChunk is the payload length of a MySQL packet that another packet
// continues.
const maxChunk = 1<<24 - 1

var errHandshakeTooLarge = errors.New("the client sent more than 64 KiB before logging in")

// limitConn bounds what a client can make a session buffer. It sits under
// go-mysql's packet reader and follows the MySQL packet framing of the
// bytes it passes up: a logical packet (chunks of 2^24-1 bytes and the
// shorter one that ends them) longer than max fails the read before the
// reader allocates for it, after an ER_NET_PACKET_TOO_LARGE packet to the
// client. Before authentication at most budget bytes are read in all.
//
// On a server with TLS, the first packet of 32 bytes is the client's
// SSLRequest: the bytes after it are TLS records, which limitConn passes
// unframed; the session then puts another limitConn above the TLS layer.
//
// Once the client is logged in (buffer set), it also gathers what go-mysql
// writes (a packet per write: a result set of 100 rows would be more than
// 100 system calls and TCP segments) and sends it before the next read,
// when maxPending bytes are waiting, or on flush, which the session calls
// before it closes the connection: an answer always goes out before the
// wait for the client's next packet. Over TLS only the limitConn above the
// TLS layer gathers.
type limitConn struct {
	net.Conn
	host       net.Addr // RemoteAddr: the client's address without its port
	max        int
	framing    bool
	sslRequest bool  // the first packet may be an SSLRequest
	budget     int64 // bytes left before authentication; < 0: no bound
	// stmts, when set, is the node's budget for statements: every chunk's
	// declared length is taken from it before its bytes reach the reader
	// (held), and given back at the next read that starts a new packet,
	// which go-mysql makes only once the command is answered; ctx bounds
	// the wait for room. A counted chunk must arrive within
	// connserver.BodyTimeout.
	stmts *connserver.Budget
	ctx   context.Context
	held  int64
	// connID, when not 0, replaces the connection id of the initial
	// handshake (the first packet written), so that the id a client
	// shows and sends in KILL QUERY is the session's process.Number.
	connID uint32

	hdr       [4]byte
	nhdr      int  // header bytes seen of the current chunk
	remaining int  // payload bytes left of the current chunk
	total     int  // payload bytes of the current logical packet
	more      bool // the current chunk is continued
	first     bool // the first packet was seen
	tlsNext   bool // the current packet is an SSLRequest
	err       error

	buffer  bool   // gather writes
	pending []byte // written, not yet sent
	werr    error  // the first failed send; later writes fail with it
}

// maxPending bounds the bytes limitConn gathers before it sends them.
const maxPending = 64 << 10

func (c *limitConn) Write(p []byte) (int, error) {
	if c.connID != 0 {
		p = withConnID(p, c.connID)
		c.connID = 0
	}
	if !c.buffer {
		return c.Conn.Write(p)
	}
	if c.werr != nil {
		return 0, c.werr
	}
	if len(c.pending)+len(p) > maxPending {
		if err := c.flush(); err != nil {
			return 0, err
		}
		if len(p) > maxPending {
			n, err := c.Conn.Write(p)
			if err != nil {
				c.werr = err
			}
			return n, err
		}
	}
	if c.pending == nil {
		// Its one buffer, never grown: a write that would pass maxPending
		// sends what is gathered first.
		c.pending = make([]byte, 0, maxPending)
	}
	c.pending = append(c.pending, p...)
	return len(p), nil
}

// withConnID returns a copy of the initial handshake packet p (header,
// protocol version 10, server version, NUL, connection id, ...) with
// connection id id; p itself when it is no such packet.
func withConnID(p []byte, id uint32) []byte {
	if len(p) < 5 || p[4] != 10 {
		return p
	}
	end := bytes.IndexByte(p[5:], 0)
	if end < 0 || 5+end+1+4 > len(p) {
		return p
	}
	out := slices.Clone(p)
	binary.LittleEndian.PutUint32(out[5+end+1:], id)
	return out
}

// flush sends what Write gathered.
func (c *limitConn) flush() error {
	if c.werr != nil || len(c.pending) == 0 {
		return c.werr
	}
	_, err := c.Conn.Write(c.pending)
	c.pending = c.pending[:0]
	if err != nil {
		c.werr = err
	}
	return err
}

func (c *limitConn) Close() error {
	_ = c.flush()
	return c.Conn.Close()
}

type hostAddr string

func (hostAddr) Network() string  { return "tcp" }
func (a hostAddr) String() string { return string(a) }

func (c *limitConn) RemoteAddr() net.Addr {
	if c.host != nil {
		return c.host
	}
	return c.Conn.RemoteAddr()
}

func (c *limitConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if err := c.flush(); err != nil {
		return 0, err
	}
	if c.held > 0 && c.nhdr == 0 && c.remaining == 0 && !c.more {
		c.release()
	}
	n, err := c.Conn.Read(p)
	if c.budget >= 0 {
		c.budget -= int64(n)
		if c.budget < 0 {
			c.err = errHandshakeTooLarge
			return 0, c.err
		}
	}
	if c.framing && n > 0 {
		if e := c.scan(p[:n]); e != nil {
			c.err = e
			return 0, e
		}
	}
	return n, err
}

// scan follows the framing over b, which the reader is about to get.
func (c *limitConn) scan(b []byte) error {
	for len(b) > 0 {
		if !c.framing {
			return nil
		}
		if c.remaining == 0 && c.nhdr < 4 {
			k := copy(c.hdr[c.nhdr:], b)
			c.nhdr += k
			b = b[k:]
			if c.nhdr < 4 {
				return nil
			}
			length := int(c.hdr[0]) | int(c.hdr[1])<<8 | int(c.hdr[2])<<16
			c.total += length
			if c.total > c.max {
				e := mysql.NewError(mysql.ER_NET_PACKET_TOO_LARGE, fmt.Sprintf("Got a packet bigger than 'max_allowed_packet' bytes (%d)", c.max))
				_ = c.flush()
				_ = writeErrPacket(c.Conn, c.hdr[3]+1, e)
				return e
			}
			if c.stmts.Counts(int64(length)) {
				if err := c.stmts.Acquire(c.ctx, int64(length)); err != nil {
					e := mysql.NewError(mysql.ER_OUT_OF_RESOURCES, "Out of resources: "+err.Error())
					_ = c.flush()
					_ = writeErrPacket(c.Conn, c.hdr[3]+1, e)
					return e
				}
				c.held += int64(length)
				_ = c.Conn.SetReadDeadline(time.Now().Add(connserver.BodyTimeout))
			}
			c.remaining, c.more = length, length == maxChunk
			if !c.first {
				c.first = true
				// An SSLRequest: TLS records follow its payload.
				c.tlsNext = c.sslRequest && length == 32
			}
		}
		k := min(c.remaining, len(b))
		c.remaining -= k
		b = b[k:]
		if c.remaining == 0 {
			c.nhdr = 0
			if !c.more {
				c.total = 0
			}
			if c.tlsNext {
				c.framing = false
			}
		}
	}
	return nil
}

// release gives back what the current statement holds of the budget.
func (c *limitConn) release() {
	c.stmts.Release(c.held)
	c.held = 0
}

// writeErrPacket writes e as one MySQL ERR packet with sequence number
// seq.
func writeErrPacket(w io.Writer, seq byte, e *mysql.MyError) error {
	payload := append([]byte{mysql.ERR_HEADER, byte(e.Code), byte(e.Code >> 8), '#'}, e.State...)
	payload = append(payload, e.Message...)
	pkt := append([]byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq}, payload...)
	_, err := w.Write(pkt)
	return err
}
