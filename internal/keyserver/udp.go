package keyserver

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"time"

	"github.com/shardkeeper/shardkeeper/keyclient"
)

// The datagram protocol (serve --udp ADDR; docs/key-protocols.md, whose
// Go client and wire constants are package keyclient): one request per UDP
// datagram, one reply datagram per request.
//
//	request  "SKK1" | id (8 bytes) | count (uint32) | zero padding   UDPRequestLen(count) bytes or more
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
	udpRequestSize = keyclient.UDPHeaderSize // the smallest request
	udpHeaderSize  = keyclient.UDPHeaderSize
	// MaxUDPCount is the most keys one datagram request may ask for.
	MaxUDPCount = keyclient.MaxUDPCount
)

// udpRequestLen is the size a request for count keys is padded to.
func udpRequestLen(count int) int { return keyclient.UDPRequestLen(count) }

// parseUDPRequest returns the id and count of a request datagram; ok is
// false when b is not one (drop it). A count out of range or a request
// not padded for its count is returned as is: the reply is an error.
func parseUDPRequest(b []byte) (id uint64, count int, ok bool) {
	if len(b) < udpRequestSize || string(b[:4]) != keyclient.UDPRequestMagic {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(b[4:12]), int(binary.BigEndian.Uint32(b[12:16])), true
}

// validUDPRequest says whether a parsed request may be answered with keys.
func validUDPRequest(d []byte, count int) bool {
	return count >= 1 && count <= MaxUDPCount && len(d) >= udpRequestLen(count)
}

func appendUDPKeys(dst []byte, id uint64, keys []int64) []byte {
	dst = append(dst, keyclient.UDPReplyMagic...)
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
	dst = append(dst, keyclient.UDPReplyMagic...)
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
