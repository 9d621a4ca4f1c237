package zookeeper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// The wire protocol of a persistent recursive watch (ZooKeeper 3.6+), which
// go-zookeeper v1.0.4 cannot register: jute encoding, big-endian, every
// packet prefixed with its length (int32).
const (
	opAddWatch     = 106 // addWatch: {ustring path; int32 mode}, empty reply
	opPing         = 11
	opAuth         = 100
	opCloseSession = -11

	xidNotification = -1
	xidPing         = -2
	xidAuth         = -4
	xidAddWatch     = 1

	modePersistentRecursive = 1

	eventNodeCreated     = 1
	eventNodeDeleted     = 2
	eventNodeDataChanged = 3

	// maxRecursivePacket bounds a packet the recursive session reads: it
	// reads only replies without bodies and notifications (a path).
	maxRecursivePacket = 1 << 20
)

// recursiveWatch is a persistent recursive watch on one path, on a
// ZooKeeper session of its own (its own TCP connection), registered by one
// Watch: the server reports, in zxid order, every creation, change of
// data and deletion of a znode at or below the path, for as long as the
// session lasts. It never reconnects:
// any failure (the connection lost, a ping unanswered within 2/3 of the
// session timeout) ends it, and the owner is told once by failed.
type recursiveWatch struct {
	conn      net.Conn
	timeout   time.Duration // negotiated session timeout
	wmu       sync.Mutex    // serializes writes
	done      chan struct{} // closed by close
	closeOnce sync.Once
	wg        sync.WaitGroup // the reader and the pinger
	count     func(int64)    // the Repo's count of open recursive watches
}

// errNoRecursiveWatch wraps every failure to register a recursive watch.
var errNoRecursiveWatch = errors.New("no persistent recursive watch")

// openRecursive opens a session of its own on one of the servers (dialed
// like the Repo's connections: Config.Dialer, AttemptTimeout), with digest
// authentication when Config.Digest is set, and registers a persistent
// recursive watch on path. changed is called with the path and the type
// (zk.EventNodeCreated, EventNodeDeleted or EventNodeDataChanged) of every
// change of a znode at or below path, in zxid order; failed is called
// once, after the last changed,
// when the session fails, but not after close. Both run on the reader
// goroutine and must not block. ctx and Config.ConnectTimeout bound the
// registration. An old server (3.5) refuses the request or drops the
// connection: that is an error like any other.
func (r *Repo) openRecursive(ctx context.Context, path string, changed func(string, zk.EventType), failed func(error)) (*recursiveWatch, error) {
	deadline := time.Now().Add(r.cfg.ConnectTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	policy := newDialPolicy(r.cfg.Dialer, Backoff{}, r.cfg.AttemptTimeout, r.done, nil)
	defer policy.abandon()
	servers := zk.FormatServers(r.cfg.Servers)
	start := rand.IntN(len(servers))
	var errs []error
	for i := range servers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		addr := servers[(start+i)%len(servers)]
		conn, err := policy.Dial("tcp", addr, time.Second)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rw, err := r.registerRecursive(conn, deadline, path)
		if err != nil {
			conn.Close()
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			if errors.Is(err, errRefused) {
				break // the server answered: another one of the same ensemble would too
			}
			continue
		}
		rw.count = func(d int64) { r.recursiveOpen.Add(d) }
		rw.count(1)
		rw.wg.Add(2)
		go rw.read(changed, failed)
		go rw.ping()
		return rw, nil
	}
	return nil, fmt.Errorf("%w on %s: %w", errNoRecursiveWatch, path, errors.Join(errs...))
}

// errRefused is a server's answer refusing a request of the handshake.
var errRefused = errors.New("refused by the server")

// errNoAddWatch is a server that refused addWatch, or dropped the
// connection at it, as a ZooKeeper 3.5 server does: asking again is no use.
var errNoAddWatch = errors.New("the server has no addWatch (ZooKeeper 3.5?)")

// registerRecursive runs the handshake on conn: connect, authenticate,
// add the watch, each answered before the next is sent.
func (r *Repo) registerRecursive(conn net.Conn, deadline time.Time, path string) (*recursiveWatch, error) {
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	req := binary.BigEndian.AppendUint32(nil, 0) // protocolVersion
	req = binary.BigEndian.AppendUint64(req, 0)  // lastZxidSeen
	req = binary.BigEndian.AppendUint32(req, uint32(r.cfg.SessionTimeout.Milliseconds()))
	req = binary.BigEndian.AppendUint64(req, 0) // sessionId
	req = appendBuffer(req, make([]byte, 16))   // passwd
	req = append(req, 0)                        // readOnly
	if err := writePacket(conn, req); err != nil {
		return nil, err
	}
	resp, err := readPacket(conn)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if len(resp) < 16 {
		return nil, fmt.Errorf("connect: a response of %d bytes", len(resp))
	}
	timeout := time.Duration(int32(binary.BigEndian.Uint32(resp[4:]))) * time.Millisecond
	if timeout <= 0 || binary.BigEndian.Uint64(resp[8:]) == 0 {
		return nil, fmt.Errorf("connect: %w: no session", errRefused)
	}
	rw := &recursiveWatch{conn: conn, timeout: timeout, done: make(chan struct{})}
	if r.cfg.Digest != "" {
		body := binary.BigEndian.AppendUint32(nil, 0) // type
		body = appendBuffer(body, []byte("digest"))
		body = appendBuffer(body, []byte(r.cfg.Digest))
		if err := rw.call(xidAuth, opAuth, body); err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
	}
	body := appendBuffer(nil, []byte(path))
	body = binary.BigEndian.AppendUint32(body, modePersistentRecursive)
	if err := rw.call(xidAddWatch, opAddWatch, body); err != nil {
		if errors.Is(err, errRefused) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("%w: %w", errNoAddWatch, err)
		}
		return nil, fmt.Errorf("addWatch: %w", err)
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return nil, err
	}
	return rw, nil
}

// call sends a request and reads packets until its reply (no notification
// can come before a watch is registered).
func (rw *recursiveWatch) call(xid, op int32, body []byte) error {
	req := appendInt32(nil, xid)
	req = appendInt32(req, op)
	if err := writePacket(rw.conn, append(req, body...)); err != nil {
		return err
	}
	for {
		resp, err := readPacket(rw.conn)
		if err != nil {
			return err
		}
		if len(resp) < 16 {
			return fmt.Errorf("a reply of %d bytes", len(resp))
		}
		if int32(binary.BigEndian.Uint32(resp)) != xid {
			continue
		}
		if code := int32(binary.BigEndian.Uint32(resp[12:])); code != 0 {
			return fmt.Errorf("%w: error code %d", errRefused, code)
		}
		return nil
	}
}

// read reads the notifications until the connection fails or is closed.
func (rw *recursiveWatch) read(changed func(string, zk.EventType), failed func(error)) {
	defer rw.wg.Done()
	err := rw.readLoop(changed)
	select {
	case <-rw.done:
	default:
		rw.conn.Close()
		failed(fmt.Errorf("%w: the recursive watch's session failed: %w", errNoRecursiveWatch, err))
	}
}

func (rw *recursiveWatch) readLoop(changed func(string, zk.EventType)) error {
	for {
		// The server answers a ping every timeout/3; no answer for 2/3
		// of the timeout means the server is gone (as go-zookeeper).
		if err := rw.conn.SetReadDeadline(time.Now().Add(rw.timeout * 2 / 3)); err != nil {
			return err
		}
		resp, err := readPacket(rw.conn)
		if err != nil {
			return err
		}
		if len(resp) < 16 {
			return fmt.Errorf("a reply of %d bytes", len(resp))
		}
		xid := int32(binary.BigEndian.Uint32(resp))
		code := int32(binary.BigEndian.Uint32(resp[12:]))
		switch {
		case code != 0:
			return fmt.Errorf("reply %d: error code %d", xid, code)
		case xid != xidNotification:
			continue // a ping's reply
		}
		// WatcherEvent {int32 type; int32 state; ustring path}
		body := resp[16:]
		if len(body) < 12 {
			return fmt.Errorf("a notification of %d bytes", len(body))
		}
		n := int(int32(binary.BigEndian.Uint32(body[8:])))
		if n < 0 || len(body) < 12+n {
			return fmt.Errorf("a notification's path of %d bytes in %d", n, len(body))
		}
		switch typ := int32(binary.BigEndian.Uint32(body)); typ {
		case eventNodeCreated, eventNodeDeleted, eventNodeDataChanged:
			changed(string(body[12:12+n]), zk.EventType(typ))
		}
	}
}

// ping sends a ping every third of the session timeout.
func (rw *recursiveWatch) ping() {
	defer rw.wg.Done()
	t := time.NewTicker(rw.timeout / 3)
	defer t.Stop()
	req := appendInt32(nil, xidPing)
	req = binary.BigEndian.AppendUint32(req, opPing)
	for {
		select {
		case <-rw.done:
			return
		case <-t.C:
		}
		if err := rw.write(req); err != nil {
			rw.conn.Close() // the reader reports it
			return
		}
	}
}

func (rw *recursiveWatch) write(b []byte) error {
	rw.wmu.Lock()
	defer rw.wmu.Unlock()
	if err := rw.conn.SetWriteDeadline(time.Now().Add(rw.timeout / 3)); err != nil {
		return err
	}
	return writePacket(rw.conn, b)
}

// close ends the session (the server closes it at once, dropping the
// watch) and waits for the reader and the pinger. failed is not called.
func (rw *recursiveWatch) close() {
	rw.closeOnce.Do(func() {
		close(rw.done)
		req := binary.BigEndian.AppendUint32(nil, 2) // xid
		req = appendInt32(req, opCloseSession)
		_ = rw.write(req)
		rw.conn.Close()
		rw.wg.Wait()
		rw.count(-1)
	})
}

func appendInt32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }

// appendBuffer appends a jute buffer or ustring: int32 length, bytes.
func appendBuffer(b, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

func writePacket(w io.Writer, body []byte) error {
	_, err := w.Write(append(binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body))), body...))
	return err
}

func readPacket(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > maxRecursivePacket {
		return nil, fmt.Errorf("a packet of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}
