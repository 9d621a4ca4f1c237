//go:build linux && (amd64 || arm64)

package keyserver

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsgLoop says serveUDPMmsg exists on this platform.
const mmsgLoop = true

// mmsghdr is struct mmsghdr on 64-bit Linux.
type mmsghdr struct {
	hdr syscall.Msghdr
	len uint32
	_   [4]byte
}

// udpBatchSize is the most datagrams (or coalesced runs of datagrams) one
// recvmmsg takes.
const udpBatchSize = 64

// udpSlot holds the largest receive: a run of datagrams from one sender
// that the kernel coalesced (UDP_GRO) is at most 64 KiB. A longer
// datagram is truncated and dropped: it is not a request.
const udpSlot = 64 << 10

// Replies go back as one run (UDP_SEGMENT) only when they fit these
// bounds: at most udpMaxSegments replies (the kernel's UDP_MAX_SEGMENTS is
// 64 or more), each at most udpMaxSegment bytes (a run's datagrams must
// each fit the path's MTU), udpMaxRun bytes in all. A run the kernel
// refuses anyway (a device without checksum offload) is sent again one
// datagram at a time.
const (
	udpMaxSegments = 64
	udpMaxSegment  = 1200
	udpMaxRun      = 60000
)

// serveUDPMmsg serves uc from one locked thread: a blocking recvmmsg that
// returns what has arrived once the first datagram is there, one call to
// the key source for the whole batch, one sendmmsg for the replies.
//
// Where the kernel supports it (UDP_GRO, Linux 5.0+), datagrams that one
// sender sent as a run (UDP_SEGMENT, or coalesced on the way) arrive as
// one receive and are split back into their requests; the replies to such
// a run, when they are of one size, go back as one run (UDP_SEGMENT),
// which the kernel delivers as separate datagrams. Every request still
// gets its own reply datagram; a run only saves the kernel the work per
// datagram.
func serveUDPMmsg(ctx context.Context, uc *net.UDPConn, src Source) error {
	own := newOwnAddress(uc.LocalAddr())
	fd, err := dupSocket(uc, false)
	_ = uc.Close()
	if err != nil {
		return fmt.Errorf("keyserver: udp: %w", err)
	}
	defer syscall.Close(fd)
	// A receive timeout bounds how late a cancelled ctx is noticed.
	tv := syscall.NsecToTimeval(100e6)
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("keyserver: udp: %w", err)
	}
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<20)
	// Without UDP_GRO the kernel splits runs before they reach the socket.
	_ = syscall.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1)

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	l := newUDPLoop(fd, src, own)
	for ctx.Err() == nil {
		n, errno := l.receive()
		switch errno {
		case 0:
		case syscall.EAGAIN, syscall.EINTR:
			continue
		default:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("keyserver: udp: recvmmsg: %w", errno)
		}
		l.answer(ctx, n)
		l.send()
	}
	return nil
}

// udpLoop holds the buffers of serveUDPMmsg, reused from one batch to the
// next: nothing is allocated per batch once they have grown.
type udpLoop struct {
	fd    int
	batch *udpBatch
	own   *ownAddress

	// The receive side: one slot per datagram or run.
	rh    [udpBatchSize]mmsghdr
	riov  [udpBatchSize]syscall.Iovec
	addrs [udpBatchSize]syscall.RawSockaddrAny
	rctl  []byte // a control buffer per slot
	bufs  []byte

	// The requests of a batch, a run split into its datagrams, and the
	// reply to each (nil: none); from[i] is the slot requests[i] came in.
	requests [][]byte
	replies  [][]byte
	from     []int

	// The send side: one message per reply or run of replies.
	sh    []mmsghdr
	siov  []syscall.Iovec
	sctl  []byte   // the UDP_SEGMENT control data of the runs
	ctlAt []int    // where each message's control data starts in sctl (-1: none)
	runs  [][]byte // a run's replies, copied end to end
}

func newUDPLoop(fd int, src Source, own *ownAddress) *udpLoop {
	l := &udpLoop{fd: fd, batch: newUDPBatch(src), own: own, bufs: make([]byte, udpBatchSize*udpSlot),
		rctl: make([]byte, udpBatchSize*segmentControlSpace)}
	for i := range l.riov {
		l.riov[i].Base = &l.bufs[i*udpSlot]
		l.riov[i].SetLen(udpSlot)
	}
	return l
}

// receive waits for the first datagram and takes up to udpBatchSize with
// one recvmmsg, then splits runs into their requests. It returns how many
// requests there are. Datagrams from the server's own address are dropped.
func (l *udpLoop) receive() (int, syscall.Errno) {
	for i := range l.rh {
		l.rh[i].hdr = syscall.Msghdr{Name: (*byte)(unsafe.Pointer(&l.addrs[i])), Namelen: syscall.SizeofSockaddrAny,
			Iov: &l.riov[i], Iovlen: 1, Control: &l.rctl[i*segmentControlSpace]}
		l.rh[i].hdr.SetControllen(segmentControlSpace)
	}
	r, _, errno := syscall.Syscall6(sysRecvmmsg, uintptr(l.fd), uintptr(unsafe.Pointer(&l.rh[0])), udpBatchSize, msgWaitForOne, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	l.requests, l.from = l.requests[:0], l.from[:0]
	for i := range int(r) {
		if l.rh[i].hdr.Flags&syscall.MSG_TRUNC != 0 || l.fromOwnAddress(i) {
			continue
		}
		d := l.bufs[i*udpSlot : i*udpSlot+int(l.rh[i].len)]
		seg := SegmentSize(l.rctl[i*segmentControlSpace:][:l.rh[i].hdr.Controllen])
		if seg <= 0 {
			seg = len(d)
		}
		for len(d) > 0 {
			k := min(seg, len(d))
			l.requests = append(l.requests, d[:k])
			l.from = append(l.from, i)
			d = d[k:]
		}
	}
	return len(l.requests), 0
}

// fromOwnAddress reports whether slot's datagram came from the server's
// own address.
func (l *udpLoop) fromOwnAddress(slot int) bool {
	sa := &l.addrs[slot]
	switch sa.Addr.Family {
	case syscall.AF_INET:
		in4 := (*syscall.RawSockaddrInet4)(unsafe.Pointer(sa))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&in4.Port))[:])
		return port == l.own.port && l.own.is(netip.AddrFrom4(in4.Addr), port)
	case syscall.AF_INET6:
		in6 := (*syscall.RawSockaddrInet6)(unsafe.Pointer(sa))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&in6.Port))[:])
		return port == l.own.port && l.own.is(netip.AddrFrom16(in6.Addr), port)
	}
	return false
}

// answer issues the keys of the n requests received and builds their
// replies.
func (l *udpLoop) answer(ctx context.Context, n int) {
	for len(l.replies) < n {
		l.replies = append(l.replies, make([]byte, 0, udpHeaderSize+8))
	}
	l.batch.answer(ctx, l.requests[:n], l.replies[:n])
}

// send sends the replies with sendmmsg: the replies to one run, when they
// are all of one size, as one run with UDP_SEGMENT; every other reply as
// its own datagram. A reply that cannot be sent (the client's port is
// gone, say) is dropped, as the network might have.
func (l *udpLoop) send() {
	l.sh, l.siov, l.sctl, l.ctlAt = l.sh[:0], l.siov[:0], l.sctl[:0], l.ctlAt[:0]
	nrun := 0
	for i := 0; i < len(l.requests); {
		// The requests of slot from[i] are i..j-1.
		j := i + 1
		for j < len(l.requests) && l.from[j] == l.from[i] {
			j++
		}
		for i < j {
			k := i + 1
			if size := len(l.replies[i]); size > 0 && size <= udpMaxSegment {
				for k < j && k-i < udpMaxSegments && (k-i+1)*size <= udpMaxRun && len(l.replies[k]) == size {
					k++
				}
			}
			switch {
			case l.replies[i] == nil:
				// Not a request: no reply.
			case k-i == 1:
				l.queue(l.from[i], l.replies[i], 0)
			default:
				if nrun == len(l.runs) {
					l.runs = append(l.runs, nil)
				}
				run := l.runs[nrun][:0]
				for _, r := range l.replies[i:k] {
					run = append(run, r...)
				}
				l.runs[nrun] = run
				nrun++
				l.queue(l.from[i], run, len(l.replies[i]))
			}
			i = k
		}
	}
	// The headers point into siov and sctl, which are complete now.
	for m := range l.sh {
		l.sh[m].hdr.Iov = &l.siov[m]
		if at := l.ctlAt[m]; at >= 0 {
			l.sh[m].hdr.Control = &l.sctl[at]
		}
	}
	for sent := 0; sent < len(l.sh); {
		r, _, errno := syscall.Syscall6(sysSendmmsg, uintptr(l.fd), uintptr(unsafe.Pointer(&l.sh[sent])), uintptr(min(len(l.sh)-sent, udpBatchSize)), 0, 0, 0)
		switch errno {
		case 0:
			sent += int(r)
		case syscall.EINTR:
		default:
			l.sendSegments(&l.sh[sent])
			sent++
		}
	}
	runtime.KeepAlive(l) // the headers point into its buffers
}

// queue adds a message to the sender at slot's address: one datagram, or
// a run of datagrams of segment bytes each when segment > 0.
func (l *udpLoop) queue(slot int, b []byte, segment int) {
	var iov syscall.Iovec
	iov.Base = unsafe.SliceData(b)
	iov.SetLen(len(b))
	l.siov = append(l.siov, iov)
	h := mmsghdr{hdr: syscall.Msghdr{Name: (*byte)(unsafe.Pointer(&l.addrs[slot])), Namelen: l.rh[slot].hdr.Namelen, Iovlen: 1}}
	at := -1
	if segment > 0 {
		at = len(l.sctl)
		l.sctl = AppendSegmentControl(l.sctl, segment)
		h.hdr.SetControllen(len(l.sctl) - at)
	}
	l.sh = append(l.sh, h)
	l.ctlAt = append(l.ctlAt, at)
}

// sendSegments sends a run that sendmmsg refused one datagram at a time;
// a message that is not a run was refused for its own reasons and is
// dropped.
func (l *udpLoop) sendSegments(m *mmsghdr) {
	if m.hdr.Controllen == 0 {
		return
	}
	ctl := unsafe.Slice(m.hdr.Control, m.hdr.Controllen)
	segment := int(binary.NativeEndian.Uint16(ctl[unix.CmsgLen(0):]))
	run := unsafe.Slice(m.hdr.Iov.Base, m.hdr.Iov.Len)
	for len(run) > 0 {
		d := run[:min(segment, len(run))]
		run = run[len(d):]
		iov := syscall.Iovec{Base: unsafe.SliceData(d)}
		iov.SetLen(len(d))
		h := syscall.Msghdr{Name: m.hdr.Name, Namelen: m.hdr.Namelen, Iov: &iov, Iovlen: 1}
		for {
			_, _, errno := syscall.Syscall(syscall.SYS_SENDMSG, uintptr(l.fd), uintptr(unsafe.Pointer(&h)), 0)
			if errno != syscall.EINTR {
				break
			}
		}
	}
}
