//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// closedLoad is the result of one closed-loop run of the load generator.
type closedLoad struct {
	Requests int     // replies received in the measured window
	Seconds  float64 // length of the measured window
	Rate     float64 // Requests / Seconds
	Retries  int     // UDP requests sent again after 20 ms without a reply
	Errors   int     // error replies
}

// load runs the closed-loop generator in a child process against addr.
func load(proto, addr string, conns int, d time.Duration) (closedLoad, error) {
	exe, err := os.Executable()
	if err != nil {
		return closedLoad{}, err
	}
	out, err := exec.Command(exe, "load", "-proto", proto, "-addr", addr, "-c", strconv.Itoa(conns), "-d", d.String()).Output()
	if err != nil {
		return closedLoad{}, fmt.Errorf("load generator (%s %s): %v\n%s", proto, addr, err, out)
	}
	var l closedLoad
	if err := json.Unmarshal(out, &l); err != nil {
		return closedLoad{}, fmt.Errorf("load generator: %v: %s", err, out)
	}
	if l.Errors > 0 {
		return l, fmt.Errorf("load generator (%s %s): %d error replies", proto, addr, l.Errors)
	}
	return l, nil
}

// loadMain is the closed-loop load generator, built like redis-benchmark
// so that it can drive Redis and both of shardkeeper's single-key
// protocols the same way: one thread, one epoll loop, -c sockets, each
// with exactly one request in flight; a reply is read with one read and
// the socket's next request written with one write. Nothing is pipelined
// or batched: every request asks for one key and gets one reply.
//
//	-proto resp  TCP, "INCR counter" in RESP; the reply is one integer line
//	-proto udp   UDP, one 16-byte request datagram for one key (see
//	             internal/keyserver); a request unanswered after 20 ms is
//	             sent again (counted as a retry)
func loadMain(args []string) {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	proto := fs.String("proto", "resp", "resp (TCP) or udp")
	addr := fs.String("addr", "127.0.0.1:6379", "server host:port")
	conns := fs.Int("c", 50, "sockets, each with one request in flight")
	d := fs.Duration("d", 5*time.Second, "measured duration")
	warm := fs.Duration("warmup", 300*time.Millisecond, "run before the measured window")
	_ = fs.Parse(args)
	l, err := runLoad(*proto, *addr, *conns, *warm, *d)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(l)
}

type loadConn struct {
	fd     int
	id     uint64
	sentAt time.Time
}

func runLoad(proto, addr string, conns int, warm, d time.Duration) (closedLoad, error) {
	runtime.LockOSThread()
	udp := proto == "udp"
	if !udp && proto != "resp" {
		return closedLoad{}, fmt.Errorf("unknown -proto %q", proto)
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return closedLoad{}, err
	}
	defer syscall.Close(epfd)
	byFD := map[int32]*loadConn{}
	cs := make([]*loadConn, 0, conns)
	for i := range conns {
		network := "tcp"
		if udp {
			network = "udp"
		}
		nc, err := net.Dial(network, addr)
		if err != nil {
			return closedLoad{}, err
		}
		fd, err := rawSocket(nc)
		nc.Close()
		if err != nil {
			return closedLoad{}, err
		}
		defer syscall.Close(fd)
		if !udp {
			_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		}
		c := &loadConn{fd: fd, id: uint64(i) << 40}
		cs = append(cs, c)
		byFD[int32(fd)] = c
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
		if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return closedLoad{}, err
		}
	}
	respReq := []byte("*2\r\n$4\r\nINCR\r\n$7\r\ncounter\r\n")
	req := make([]byte, 16)
	copy(req, "SKK1")
	send := func(c *loadConn, now time.Time) error {
		b := respReq
		if udp {
			binary.BigEndian.PutUint64(req[4:12], c.id)
			binary.BigEndian.PutUint32(req[12:16], 1)
			b = req
		}
		c.sentAt = now
		_, err := rawWriteFD(c.fd, b)
		return err
	}
	var res closedLoad
	start := time.Now()
	measureFrom, end := start.Add(warm), start.Add(warm+d)
	for _, c := range cs {
		if err := send(c, start); err != nil {
			return res, err
		}
	}
	events := make([]syscall.EpollEvent, conns)
	buf := make([]byte, 64<<10)
	lastScan := start
	for {
		n, err := syscall.EpollWait(epfd, events, 5)
		if err != nil && err != syscall.EINTR {
			return res, err
		}
		now := time.Now()
		if !now.Before(end) {
			break
		}
		for _, ev := range events[:max(n, 0)] {
			c := byFD[ev.Fd]
			m, err := rawReadFD(c.fd, buf)
			if err == syscall.EAGAIN || err == syscall.EINTR {
				continue
			}
			if err != nil {
				return res, fmt.Errorf("read: %w", err)
			}
			if m == 0 {
				return res, fmt.Errorf("%s closed the connection", addr)
			}
			reply := buf[:m]
			if udp {
				if m < 24 || binary.BigEndian.Uint64(reply[4:12]) != c.id {
					continue // a late reply to a retried request
				}
				if binary.BigEndian.Uint32(reply[12:16]) != 1 {
					res.Errors++
				}
				c.id++
			} else {
				// One request in flight: one reply line, maybe split
				// across reads (then the next read completes it).
				if reply[0] != ':' && reply[0] != '\r' && (reply[0] < '0' || reply[0] > '9') {
					res.Errors++
				}
				if bytes.IndexByte(reply, '\n') < 0 {
					continue
				}
			}
			if !now.Before(measureFrom) {
				res.Requests++
			}
			if err := send(c, now); err != nil {
				return res, err
			}
		}
		if udp && now.Sub(lastScan) > 5*time.Millisecond {
			lastScan = now
			for _, c := range cs {
				if now.Sub(c.sentAt) > 20*time.Millisecond {
					res.Retries++
					if err := send(c, now); err != nil {
						return res, err
					}
				}
			}
		}
	}
	res.Seconds = d.Seconds()
	res.Rate = float64(res.Requests) / res.Seconds
	return res, nil
}

// rawSocket returns a non-blocking duplicate of c's socket.
func rawSocket(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("%T has no socket", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		fd = int(r)
		if errno != 0 {
			derr = errno
		}
	}); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	return fd, syscall.SetNonblock(fd, true)
}

func rawReadFD(fd int, p []byte) (int, error) {
	r, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

func rawWriteFD(fd int, p []byte) (int, error) {
	r, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}
