//go:build linux && (amd64 || arm64)

package keyserver

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"syscall"
	"unsafe"
)

// mmsgLoop says serveUDPMmsg exists on this platform.
const mmsgLoop = true

// mmsghdr is struct mmsghdr on 64-bit Linux.
type mmsghdr struct {
	hdr syscall.Msghdr
	len uint32
	_   [4]byte
}

// udpBatchSize is the most datagrams one recvmmsg takes.
const udpBatchSize = 64

// udpSlot holds the largest request (padded for MaxUDPCount keys); longer
// datagrams are truncated and dropped: not requests.
const udpSlot = 8*MaxUDPCount + 8

// serveUDPMmsg serves uc from one locked thread: a blocking recvmmsg that
// returns what has arrived once the first datagram is there, one call to
// the key source for the whole batch, one sendmmsg for the replies.
func serveUDPMmsg(ctx context.Context, uc *net.UDPConn, src Source) error {
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

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var (
		rh    [udpBatchSize]mmsghdr
		sh    [udpBatchSize]mmsghdr
		riov  [udpBatchSize]syscall.Iovec
		siov  [udpBatchSize]syscall.Iovec
		addrs [udpBatchSize]syscall.RawSockaddrAny
		bufs  = make([]byte, udpBatchSize*udpSlot)
		in    = make([][]byte, udpBatchSize)
		out   = make([][]byte, udpBatchSize)
		b     = newUDPBatch(src)
	)
	for i := range rh {
		riov[i].Base = &bufs[i*udpSlot]
		riov[i].SetLen(udpSlot)
		out[i] = make([]byte, 0, udpHeaderSize+8*MaxUDPCount)
	}
	for ctx.Err() == nil {
		for i := range rh {
			rh[i].hdr = syscall.Msghdr{Name: (*byte)(unsafe.Pointer(&addrs[i])), Namelen: syscall.SizeofSockaddrAny, Iov: &riov[i], Iovlen: 1}
		}
		r, _, errno := syscall.Syscall6(sysRecvmmsg, uintptr(fd), uintptr(unsafe.Pointer(&rh[0])), udpBatchSize, msgWaitForOne, 0, 0)
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
		n := int(r)
		for i := range n {
			if rh[i].hdr.Flags&syscall.MSG_TRUNC != 0 {
				in[i] = nil
				continue
			}
			in[i] = bufs[i*udpSlot : i*udpSlot+int(rh[i].len)]
		}
		b.answer(ctx, in[:n], out[:n])
		m := 0
		for i := range n {
			if out[i] == nil {
				out[i] = make([]byte, 0, udpHeaderSize+8*MaxUDPCount)
				continue
			}
			siov[m].Base = unsafe.SliceData(out[i])
			siov[m].SetLen(len(out[i]))
			sh[m].hdr = syscall.Msghdr{Name: (*byte)(unsafe.Pointer(&addrs[i])), Namelen: rh[i].hdr.Namelen, Iov: &siov[m], Iovlen: 1}
			m++
		}
		for sent := 0; sent < m; {
			r, _, errno := syscall.Syscall6(sysSendmmsg, uintptr(fd), uintptr(unsafe.Pointer(&sh[sent])), uintptr(m-sent), 0, 0, 0)
			if errno == syscall.EINTR {
				continue
			}
			if errno != 0 {
				// A reply that cannot be sent (e.g. the client's port
				// is gone): drop it, as the network might have.
				sent++
				continue
			}
			sent += int(r)
		}
		runtime.KeepAlive(bufs)
	}
	return nil
}
