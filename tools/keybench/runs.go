//go:build linux

package main

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Runs of datagrams: a sender may hand the kernel several datagrams of one
// size for one address with a single sendmsg (UDP_SEGMENT, Linux 4.18+),
// and a socket with UDP_GRO (Linux 5.0+) may receive such a run whole,
// with its segment size in the control data. On the wire, and to a socket
// without UDP_GRO, they are separate datagrams.

// appendSegmentControl appends the control data that makes one sendmsg a
// run of datagrams of segment bytes each (the last may be shorter).
func appendSegmentControl(dst []byte, segment int) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, unix.CmsgSpace(2))...)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&dst[start]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(dst[start+unix.CmsgLen(0):], uint16(segment))
	return dst
}

// segmentSize returns the segment size that a receive's control data
// gives for a run (UDP_GRO), or 0 when the datagram was not one. It
// expects at most this one control message: the socket asks for no other.
func segmentSize(ctl []byte) int {
	if len(ctl) < unix.CmsgLen(4) {
		return 0
	}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
	if h.Level != unix.SOL_UDP || h.Type != unix.UDP_GRO || uint64(h.Len) < uint64(unix.CmsgLen(4)) {
		return 0
	}
	return int(binary.NativeEndian.Uint32(ctl[unix.CmsgLen(0):]))
}
