package keyserver

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"
)

// The datagram protocol (serve --udp ADDR): one request per UDP datagram,
// one reply datagram per request.
//
//	request  "SKK1" | id (8 bytes) | count (uint32) | zero padding   udpRequestLen(count) bytes or more
//	reply    "SKR1" | id (8 bytes) | count (uint32) | count keys (int64 each)
//	error    "SKR1" | id (8 bytes) | 0 (uint32)     | message (UTF-8)
//
// Integers are big-endian. The id is the client's, echoed so that it can
// match a reply to its request; count is 1..MaxUDPCount. The server keeps
// no state per client: a request that is sent again (the client saw no
// reply in time: UDP may drop datagrams) is a new request and gets new
// keys, and keys of a lost reply are never used, which is safe because
// every key is issued once. Datagrams that are not requests are dropped.
//
// A reply starts with its own magic, so a reply is never a request: a
// datagram whose source address is forged to be another key port (of
// this node or another) gets one reply, which that port drops. A
// datagram whose source is the server's own port on a local address
// (forged: the server never sends to itself) is dropped unanswered.
//
// A request is padded to 8*count+8 bytes (16 at least: a one-key request
// is 16 bytes, its reply 24), so a reply is never more than 1.5 times its
// request, and an error reply never more than 3 times: a flood sent with
// a forged source address reaches its victim at most that much larger,
// one reply per datagram sent. There is no authentication: bind it to
// loopback or a trusted network.
const (
	// UDPRequestMagic starts every request datagram.
	UDPRequestMagic = "SKK1"
	// UDPReplyMagic starts every reply datagram, keys or error.
	UDPReplyMagic  = "SKR1"
	udpRequestSize = 16
	udpHeaderSize  = 16
	// MaxUDPCount is the most keys one datagram request may ask for (the
	// reply is 16 + 8*count bytes: 8,016 at most, a single datagram on
	// loopback; keep count at 180 or less across a 1500-byte MTU).
	MaxUDPCount = 1000
)

// udpRequestLen is the size a request for count keys is padded to.
func udpRequestLen(count int) int { return max(udpRequestSize, 8*count+8) }

// appendUDPRequest appends a request datagram, padded.
func appendUDPRequest(dst []byte, id uint64, count int) []byte {
	dst = append(dst, UDPRequestMagic...)
	dst = binary.BigEndian.AppendUint64(dst, id)
	dst = binary.BigEndian.AppendUint32(dst, uint32(count))
	for range udpRequestLen(count) - udpRequestSize {
		dst = append(dst, 0)
	}
	return dst
}

// parseUDPRequest returns the id and count of a request datagram; ok is
// false when b is not one (drop it). A count out of range or a request
// not padded for its count is returned as is: the reply is an error.
func parseUDPRequest(b []byte) (id uint64, count int, ok bool) {
	if len(b) < udpRequestSize || string(b[:4]) != UDPRequestMagic {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(b[4:12]), int(binary.BigEndian.Uint32(b[12:16])), true
}

// validUDPRequest says whether a parsed request may be answered with keys.
func validUDPRequest(d []byte, count int) bool {
	return count >= 1 && count <= MaxUDPCount && len(d) >= udpRequestLen(count)
}

func appendUDPKeys(dst []byte, id uint64, keys []int64) []byte {
	dst = append(dst, UDPReplyMagic...)
	dst = binary.BigEndian.AppendUint64(dst, id)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(keys)))
	for _, k := range keys {
		dst = binary.BigEndian.AppendUint64(dst, uint64(k))
	}
	return dst
}

// appendUDPError appends an error reply to a request of reqLen bytes; the
// message is cut so that the reply is at most three times the request.
func appendUDPError(dst []byte, id uint64, msg string, reqLen int) []byte {
	if room := 3*reqLen - udpHeaderSize; len(msg) > room {
		msg = msg[:max(room, 0)]
	}
	dst = append(dst, UDPReplyMagic...)
	dst = binary.BigEndian.AppendUint64(dst, id)
	dst = binary.BigEndian.AppendUint32(dst, 0)
	return append(dst, msg...)
}

// ownAddress recognises the server's own address as a datagram's source:
// the server's port on a loopback, unspecified or local interface address.
// Such a datagram is forged (the server never sends to itself), and an
// answer would reach the server again. The interface addresses are read
// when a datagram from the server's port arrives, at most once a second.
// Used by one goroutine at a time.
type ownAddress struct {
	port   uint16
	local  []netip.Addr
	readAt time.Time
}

func newOwnAddress(local net.Addr) *ownAddress {
	o := &ownAddress{}
	if ua, ok := local.(*net.UDPAddr); ok {
		o.port = uint16(ua.Port)
	}
	return o
}

// is reports whether addr:port is the server's own address.
func (o *ownAddress) is(addr netip.Addr, port uint16) bool {
	if port != o.port || o.port == 0 {
		return false
	}
	addr = addr.Unmap().WithZone("")
	if addr.IsLoopback() || addr.IsUnspecified() {
		return true
	}
	if now := time.Now(); now.Sub(o.readAt) >= time.Second {
		o.readAt = now
		o.local = o.local[:0]
		ifaddrs, _ := net.InterfaceAddrs()
		for _, ia := range ifaddrs {
			if ipn, ok := ia.(*net.IPNet); ok {
				if a, ok := netip.AddrFromSlice(ipn.IP); ok {
					o.local = append(o.local, a.Unmap())
				}
			}
		}
	}
	return slices.Contains(o.local, addr)
}

// udpBatch answers the requests of one receive: it asks src for all their
// keys with one call and appends each reply to out[i] (nil for a datagram
// that is not a request, which gets no reply).
type udpBatch struct {
	src  Source
	c    *conn // for its bounded key wait
	keys []int64
}

func newUDPBatch(src Source) *udpBatch { return &udpBatch{src: src, c: newConn(src)} }

func (b *udpBatch) answer(ctx context.Context, in [][]byte, out [][]byte) {
	total := 0
	for _, d := range in {
		if _, n, ok := parseUDPRequest(d); ok && validUDPRequest(d, n) {
			total += n
		}
	}
	var err error
	b.keys = b.keys[:0]
	if total > 0 {
		b.keys, err = b.src.AppendIDs(b.c.bounded(ctx), b.keys, total)
	}
	keys := b.keys
	for i, d := range in {
		id, n, ok := parseUDPRequest(d)
		if ok {
			b.c.m.request()
		}
		switch {
		case !ok:
			out[i] = nil
		case n < 1 || n > MaxUDPCount:
			b.c.m.requestError()
			out[i] = appendUDPError(out[i][:0], id, fmt.Sprintf("ERR count must be an integer in [1, %d]", MaxUDPCount), len(d))
		case !validUDPRequest(d, n):
			b.c.m.requestError()
			out[i] = appendUDPError(out[i][:0], id, fmt.Sprintf("ERR pad to %d bytes", udpRequestLen(n)), len(d))
		case len(keys) >= n:
			out[i] = appendUDPKeys(out[i][:0], id, keys[:n])
			keys = keys[n:]
		default:
			// Keys issued before the error stay unused: they are unique,
			// so dropping them is safe.
			b.c.m.notIssued()
			msg := "NOTISSUING not issuing keys"
			if err != nil {
				msg = "NOTISSUING " + err.Error()
			}
			out[i] = appendUDPError(out[i][:0], id, msg, len(d))
			keys = nil
		}
	}
}

// ServeUDP answers datagram requests (see the protocol above) on pc with
// keys from src until ctx ends or pc fails, with the zero Config. See
// ServeUDPConfig.
func ServeUDP(ctx context.Context, pc net.PacketConn, src Source) error {
	return ServeUDPConfig(ctx, pc, src, Config{})
}

// maxUDPReaders bounds the goroutines that read one datagram port.
const maxUDPReaders = 4

// ServeUDPConfig answers datagram requests on pc with keys from src until
// ctx ends or pc fails, counting into cfg.Metrics (cfg.MaxClients does not
// apply). A few goroutines (one per core, at most maxUDPReaders) each read
// one datagram with net.PacketConn's ReadFrom and answer it with one
// WriteTo. It closes pc and waits for them before it returns, and returns
// nil when ctx ended.
func ServeUDPConfig(ctx context.Context, pc net.PacketConn, src Source, cfg Config) error {
	src = withMetrics(src, cfg.Metrics)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = pc.Close() })
	defer stop()
	readers := max(1, min(runtime.GOMAXPROCS(0), maxUDPReaders))
	errs := make(chan error, readers)
	for range readers {
		go func() {
			err := answerUDP(ctx, pc, src)
			cancel() // the others stop too
			errs <- err
		}()
	}
	var first error
	for range readers {
		if err := <-errs; first == nil {
			first = err
		}
	}
	_ = pc.Close()
	if ctx.Err() != nil && first == nil {
		return nil
	}
	return first
}

// answerUDP reads and answers datagrams on pc, one at a time, until
// reading fails; it returns nil when that was because ctx ended.
func answerUDP(ctx context.Context, pc net.PacketConn, src Source) error {
	b := newUDPBatch(src)
	defer b.c.release()
	own := newOwnAddress(pc.LocalAddr())
	buf := make([]byte, udpRequestLen(MaxUDPCount)+1)
	in, out := make([][]byte, 1), make([][]byte, 1)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("keyserver: udp: %w", err)
		}
		if ua, ok := addr.(*net.UDPAddr); ok {
			if ap := ua.AddrPort(); own.is(ap.Addr(), ap.Port()) {
				continue
			}
		}
		in[0] = buf[:n]
		b.answer(ctx, in, out)
		if out[0] != nil {
			_, _ = pc.WriteTo(out[0], addr)
		}
	}
}

// ErrNotIssuing is returned by UDPClient when the node answered that it is
// not issuing keys; the error wraps it with the node's reason.
var ErrNotIssuing = errors.New("node is not issuing keys")

// UDPClient fetches keys from a node's datagram port (serve --udp). It has
// one request in flight at a time; it is safe for concurrent use (calls
// take turns). Open one per goroutine for more requests in flight.
type UDPClient struct {
	// Timeout is how long a request waits for its reply before it is
	// sent again; each retry waits twice as long. Default 20 ms.
	Timeout time.Duration
	// Retries is how often a request is sent again (default 5); past it
	// the call fails with an error wrapping os.ErrDeadlineExceeded.
	Retries int

	mu   sync.Mutex
	conn *net.UDPConn
	id   uint64
	req  []byte
	buf  []byte
}

// DialUDP returns a client of the node's datagram port at addr
// (host:port). It does no I/O.
func DialUDP(addr string) (*UDPClient, error) {
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	c, err := net.DialUDP("udp", nil, ra)
	if err != nil {
		return nil, err
	}
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	return &UDPClient{conn: c, id: binary.BigEndian.Uint64(seed[:]), buf: make([]byte, udpHeaderSize+8*MaxUDPCount+512)}, nil
}

// Close closes the client's socket.
func (c *UDPClient) Close() error { return c.conn.Close() }

// NextID returns one new key.
func (c *UDPClient) NextID(ctx context.Context) (int64, error) {
	keys, err := c.AppendIDs(ctx, nil, 1)
	if err != nil {
		return 0, err
	}
	return keys[0], nil
}

// AppendIDs appends n new keys (1..MaxUDPCount) to dst with one request,
// sent again when no reply comes in time. ctx bounds the whole call. A
// node that is not issuing answers an error wrapping ErrNotIssuing.
func (c *UDPClient) AppendIDs(ctx context.Context, dst []int64, n int) ([]int64, error) {
	if n < 1 || n > MaxUDPCount {
		return dst, fmt.Errorf("keyserver: count %d out of [1, %d]", n, MaxUDPCount)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	timeout, retries := c.Timeout, c.Retries
	if timeout <= 0 {
		timeout = 20 * time.Millisecond
	}
	if retries <= 0 {
		retries = 5
	}
	c.id++
	c.req = appendUDPRequest(c.req[:0], c.id, n)
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetReadDeadline(time.Now()) })
	defer stop()
	for try := 0; try <= retries; try++ {
		if err := ctx.Err(); err != nil {
			return dst, err
		}
		if _, err := c.conn.Write(c.req); err != nil {
			return dst, fmt.Errorf("keyserver: udp send: %w", err)
		}
		deadline := time.Now().Add(timeout << try)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		_ = c.conn.SetReadDeadline(deadline)
		for {
			m, err := c.conn.Read(c.buf)
			if err != nil {
				if ctx.Err() != nil {
					return dst, ctx.Err()
				}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					break // send again
				}
				return dst, fmt.Errorf("keyserver: udp receive: %w", err)
			}
			b := c.buf[:m]
			if m < udpHeaderSize || string(b[:4]) != UDPReplyMagic || binary.BigEndian.Uint64(b[4:12]) != c.id {
				continue // a late reply to an earlier try or request
			}
			count := int(binary.BigEndian.Uint32(b[12:16]))
			if count == 0 {
				msg := string(b[udpHeaderSize:])
				if len(msg) >= 11 && msg[:11] == "NOTISSUING " {
					return dst, fmt.Errorf("%w: %s", ErrNotIssuing, msg[11:])
				}
				return dst, fmt.Errorf("keyserver: %s", msg)
			}
			if count != n || m != udpHeaderSize+8*n {
				return dst, fmt.Errorf("keyserver: malformed reply (%d keys, %d bytes)", count, m)
			}
			for i := range n {
				dst = append(dst, int64(binary.BigEndian.Uint64(b[udpHeaderSize+8*i:])))
			}
			return dst, nil
		}
	}
	return dst, fmt.Errorf("keyserver: no reply from %s after %d tries: %w", c.conn.RemoteAddr(), retries+1, os.ErrDeadlineExceeded)
}
