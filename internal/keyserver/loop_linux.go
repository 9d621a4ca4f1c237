//go:build linux

package keyserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/shardkeeper/shardkeeper/internal/connserver"
)

// eventLoops says serveLoops exists on this platform.
const eventLoops = true

// loop is one epoll event loop on a locked OS thread. It owns its
// connections: only its goroutine reads, writes or closes them, except
// that add registers new ones and the final cleanup closes the rest.
type loop struct {
	epfd    int
	src     Source
	clients *clients // left when a connection closes
	mu      sync.Mutex
	added   map[int]*econn // registered by add, not yet seen by run
	conns   map[int]*econn // run's own
}

// econn is a connection served by a loop.
type econn struct {
	fd      int
	c       *conn
	in      []byte
	pending []byte // unwritten output (the socket was full); not read meanwhile
	quit    bool   // close once pending is written
}

// serveLoops accepts on ln with Go's poller and hands each connection's
// socket (a duplicate descriptor) to one of a few epoll event loops, round
// robin. A connection over cl's cap is refused before it reaches a loop.
func serveLoops(ctx context.Context, ln *net.TCPListener, src Source, cl *clients) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Half the cores: one loop serves a client on the other core with the
	// fewest cross-core wakeups (measured on 2 cores: 2 loops cost 30%
	// more CPU per request than 1 for the same rate).
	n := max(1, min(runtime.GOMAXPROCS(0)/2, 4))
	var (
		wg    sync.WaitGroup
		loops []*loop
		epfds []int
	)
	for len(loops) < n {
		epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			for _, fd := range epfds {
				_ = syscall.Close(fd)
			}
			_ = ln.Close()
			return fmt.Errorf("keyserver: epoll: %w", err)
		}
		epfds = append(epfds, epfd)
		l := &loop{epfd: epfd, src: src, clients: cl, added: map[int]*econn{}, conns: map[int]*econn{}}
		loops = append(loops, l)
	}
	for _, l := range loops {
		wg.Go(func() { l.run(ctx) })
	}
	stopped := make(chan struct{})
	go func() {
		<-ctx.Done()
		_ = ln.Close()
		close(stopped)
	}()
	var (
		err     error
		backoff connserver.Backoff
	)
	for i := 0; ; i++ {
		var tc *net.TCPConn
		tc, err = ln.AcceptTCP()
		if err != nil {
			if backoff.Retry(ctx, err) {
				continue
			}
			break
		}
		backoff.Accepted()
		if !cl.admit() {
			refuse(tc)
			continue
		}
		fd, derr := detach(tc)
		if derr != nil {
			cl.leave()
			continue
		}
		if aerr := loops[i%len(loops)].add(fd); aerr != nil {
			_ = syscall.Close(fd)
			cl.leave()
		}
	}
	<-stopped
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("keyserver: accept: %w", err)
}

// detach returns a non-blocking duplicate of tc's socket and closes tc.
func detach(tc *net.TCPConn) (int, error) {
	defer tc.Close()
	_ = tc.SetNoDelay(true)
	return dupSocket(tc, true)
}

// dupSocket returns a duplicate of c's socket (close-on-exec), non-blocking
// or not; c stays open.
func dupSocket(c syscall.Conn, nonblocking bool) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = dupCloexec(int(s)) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	if err := syscall.SetNonblock(fd, nonblocking); err != nil {
		_ = syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

func dupCloexec(fd int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

func (l *loop) add(fd int) error {
	l.mu.Lock()
	l.added[fd] = &econn{fd: fd, c: newConn(l.src), in: make([]byte, 0, readSize)}
	l.mu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.mu.Lock()
		delete(l.added, fd)
		l.mu.Unlock()
		return err
	}
	return nil
}

// lookup finds fd's connection, taking it over from add when new.
func (l *loop) lookup(fd int) *econn {
	if e := l.conns[fd]; e != nil {
		return e
	}
	l.mu.Lock()
	e := l.added[fd]
	delete(l.added, fd)
	l.mu.Unlock()
	if e != nil {
		l.conns[fd] = e
	}
	return e
}

// run waits for readiness and serves it until ctx ends, then closes its
// connections and its epoll descriptor.
func (l *loop) run(ctx context.Context) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() {
		l.mu.Lock()
		for fd := range l.added {
			_ = syscall.Close(fd)
			l.clients.leave()
		}
		l.added = map[int]*econn{}
		l.mu.Unlock()
		for fd, e := range l.conns {
			e.c.release()
			_ = syscall.Close(fd)
			l.clients.leave()
		}
		_ = syscall.Close(l.epfd)
	}()
	events := make([]syscall.EpollEvent, 128)
	for ctx.Err() == nil {
		// The timeout only bounds how late a cancelled ctx is noticed.
		n, err := syscall.EpollWait(l.epfd, events, 100)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return
		}
		for _, ev := range events[:n] {
			e := l.lookup(int(ev.Fd))
			if e == nil {
				continue
			}
			if ev.Events&(syscall.EPOLLERR|syscall.EPOLLHUP) != 0 && ev.Events&syscall.EPOLLIN == 0 {
				l.close(e)
				continue
			}
			if ev.Events&syscall.EPOLLOUT != 0 && !l.flush(ctx, e) {
				continue
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP) != 0 {
				l.serve(ctx, e)
			}
		}
	}
}

// serve reads what is there and handles it. A connection with output
// pending is not read (its EPOLLIN is off): its input waits in the
// socket, and the client's writes block, until it takes its replies.
func (l *loop) serve(ctx context.Context, e *econn) {
	if len(e.pending) > 0 || e.quit {
		return
	}
	if len(e.in) == cap(e.in) {
		if cap(e.in) >= inputLimit {
			// process refuses a command this long before it gets here.
			l.close(e)
			return
		}
		e.in = growInput(e.in)
	}
	n, err := rawRead(e.fd, e.in[len(e.in):cap(e.in)])
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
		return
	}
	if n <= 0 || err != nil {
		// EOF or a read error: answer nothing more.
		l.close(e)
		return
	}
	e.in = e.in[:len(e.in)+n]
	l.handle(ctx, e)
}

// handle runs the complete commands in e.in and writes the replies, a
// reply buffer (outputLimit) at a time, until the input has no complete
// command left or the socket is full.
func (l *loop) handle(ctx context.Context, e *econn) {
	for !e.quit {
		used, quit := e.c.process(ctx, e.in)
		e.in = e.in[:copy(e.in, e.in[used:])]
		e.quit = quit
		if !l.write(e, e.c.out) {
			return
		}
		e.c.out = e.c.out[:0]
		if len(e.pending) > 0 {
			// e.pending is the unwritten end of e.c.out's array:
			// nothing is appended to e.c.out until it is written.
			return
		}
		e.c.trim()
		if !e.c.more {
			break
		}
	}
	if e.quit {
		l.close(e)
		return
	}
	if len(e.in) == 0 && cap(e.in) > readSize {
		e.in = make([]byte, 0, readSize)
	}
}

// write sends out; what the socket does not take becomes e.pending, and
// the connection waits for EPOLLOUT instead of EPOLLIN. It returns false
// when it closed the connection.
func (l *loop) write(e *econn, out []byte) bool {
	for len(out) > 0 {
		n, err := rawWrite(e.fd, out)
		if n > 0 {
			out = out[n:]
		}
		if err == nil {
			continue
		}
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.EAGAIN) {
			e.pending = out
			ev := syscall.EpollEvent{Events: syscall.EPOLLOUT, Fd: int32(e.fd)}
			_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, e.fd, &ev)
			return true
		}
		l.close(e)
		return false
	}
	return true
}

// flush writes pending output once the socket drains; when it is all
// written, the connection is read again and the input that waited is
// handled. It returns false when it closed the connection.
func (l *loop) flush(ctx context.Context, e *econn) bool {
	out := e.pending
	e.pending = nil
	if !l.write(e, out) {
		return false
	}
	if len(e.pending) > 0 {
		return true
	}
	e.c.trim()
	if e.quit {
		l.close(e)
		return false
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(e.fd)}
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, e.fd, &ev)
	if len(e.in) > 0 {
		l.handle(ctx, e)
		return l.conns[e.fd] == e
	}
	return true
}

func (l *loop) close(e *econn) {
	e.c.release()
	delete(l.conns, e.fd)
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, e.fd, nil)
	_ = syscall.Close(e.fd)
	l.clients.leave()
}

// rawRead and rawWrite skip the scheduler's syscall bookkeeping: the
// socket is non-blocking, so the call never blocks the loop's thread.
func rawRead(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

func rawWrite(fd int, p []byte) (int, error) {
	r, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}
