//go:build linux && (amd64 || arm64)

package keyserver

import (
	"encoding/binary"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// runClient is a raw UDP socket that sends requests as one run
// (UDP_SEGMENT) and, with gro, takes runs of replies apart (UDP_GRO).
type runClient struct {
	t   *testing.T
	fd  int
	gro bool
}

func dialRuns(t *testing.T, addr string, gro bool) *runClient {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := dupSocket(c.(*net.UDPConn), false)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	tv := syscall.NsecToTimeval(int64(2 * time.Second))
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	if gro {
		if err := syscall.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1); err != nil {
			t.Skipf("UDP_GRO: %v (Linux 5.0+)", err)
		}
	}
	return &runClient{t: t, fd: fd, gro: gro}
}

// send sends the datagrams as one run of segment bytes each (the last may
// be shorter).
func (c *runClient) send(segment int, datagrams ...[]byte) {
	c.t.Helper()
	var run []byte
	for _, d := range datagrams {
		run = append(run, d...)
	}
	for {
		_, err := unix.SendmsgN(c.fd, run, AppendSegmentControl(nil, segment), nil, 0)
		switch err {
		case nil:
			return
		case unix.EINTR:
			continue
		case unix.EINVAL, unix.ENOPROTOOPT, unix.EIO:
			c.t.Skipf("UDP_SEGMENT: %v (Linux 4.18+, a device with checksum offload)", err)
		default:
			c.t.Fatal(err)
		}
	}
}

// receive returns the next n reply datagrams, and how many of them came
// as part of a run of several.
func (c *runClient) receive(n int) (replies [][]byte, inRuns int) {
	c.t.Helper()
	buf := make([]byte, 64<<10)
	ctl := make([]byte, unix.CmsgSpace(4))
	for len(replies) < n {
		m, ctln, _, _, err := unix.Recvmsg(c.fd, buf, ctl, 0)
		if err == unix.EINTR {
			continue // the Go runtime's preemption signal
		}
		if err != nil {
			c.t.Fatalf("after %d of %d replies: %v", len(replies), n, err)
		}
		d := buf[:m]
		seg := m
		if g := SegmentSize(ctl[:ctln]); g > 0 {
			seg = g
		}
		for len(d) > 0 {
			k := min(seg, len(d))
			replies = append(replies, append([]byte(nil), d[:k]...))
			if seg < m {
				inRuns++
			}
			d = d[k:]
		}
	}
	return replies, inRuns
}

// TestUDPRuns sends requests as runs of datagrams (UDP_SEGMENT), as a
// client that sends what it has at once may: every request in a run gets
// its own reply; a datagram in the run that is not a request gets none; a
// bad request gets its error; replies of one size go back as a run, which
// a client without UDP_GRO receives as separate datagrams; keys are unique
// across all of them.
func TestUDPRuns(t *testing.T) {
	addr := startUDP(t, newSource(t), ServeUDP)
	for _, gro := range []bool{false, true} {
		name := "separate"
		if gro {
			name = "gro"
		}
		t.Run(name, func(t *testing.T) {
			c := dialRuns(t, addr, gro)
			seen := map[int64]bool{}
			check := func(replies [][]byte, want map[uint64]int) {
				t.Helper()
				for _, r := range replies {
					if len(r) < udpHeaderSize || string(r[:4]) != UDPReplyMagic {
						t.Fatalf("reply %x: not a reply", r)
					}
					id := binary.BigEndian.Uint64(r[4:12])
					count, ok := want[id]
					if !ok {
						t.Fatalf("reply to id %d: unexpected or repeated", id)
					}
					delete(want, id)
					got := int(binary.BigEndian.Uint32(r[12:16]))
					if got != count {
						t.Fatalf("id %d: %d keys (%q), want %d", id, got, r[16:], count)
					}
					for k := range count {
						key := int64(binary.BigEndian.Uint64(r[16+8*k:]))
						if seen[key] {
							t.Fatalf("key %d issued twice", key)
						}
						seen[key] = true
					}
				}
				if len(want) > 0 {
					t.Fatalf("no reply to %v", want)
				}
			}

			// 40 one-key requests and a short tail that is no request.
			var run [][]byte
			want := map[uint64]int{}
			for id := range uint64(40) {
				run = append(run, appendUDPRequest(nil, id, 1))
				want[id] = 1
			}
			run = append(run, []byte("junk"))
			c.send(udpRequestSize, run...)
			replies, inRuns := c.receive(40)
			check(replies, want)
			if gro && inRuns == 0 {
				t.Errorf("40 one-key requests in one run: no replies came back as a run")
			}
			if !gro && inRuns != 0 {
				t.Errorf("%d replies in runs to a socket without UDP_GRO", inRuns)
			}

			// A bad request (count 0) in the middle: its error goes
			// alone, the replies around it as they can.
			run, want = nil, map[uint64]int{}
			for id := uint64(100); id < 110; id++ {
				count := 1
				if id == 105 {
					count = 0
				}
				run = append(run, appendUDPRequest(nil, id, count))
				want[id] = count
			}
			c.send(udpRequestSize, run...)
			replies, _ = c.receive(10)
			check(replies, want)

			// Requests for 200 keys: replies of 1,616 bytes, too big to
			// go back as a run, go one by one.
			run, want = nil, map[uint64]int{}
			for id := uint64(200); id < 205; id++ {
				run = append(run, appendUDPRequest(nil, id, 200))
				want[id] = 200
			}
			c.send(udpRequestLen(200), run...)
			replies, _ = c.receive(5)
			check(replies, want)
		})
	}
}
