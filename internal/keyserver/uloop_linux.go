//go:build linux

package keyserver

import (
	"context"
	"encoding/binary"
	"runtime"
	"sync"
	"syscall"
	"unsafe"
)

// uloop is an event loop on io_uring: every receive and send of its
// connections is a ring operation, and one io_uring_enter per turn both
// submits the sends and receives that turn queued and waits for the next
// completions. Under load that is one system call for many requests,
// where the epoll loop makes a read and a write per connection and turn.
//
// Every buffer handed to the kernel stays referenced by its uconn until
// the operation's completion is reaped, and is not touched meanwhile.
type uloop struct {
	src     Source
	clients *clients // left when a connection closes
	r       *ring
	efd     int     // eventfd: add and stop wake the loop through it
	efdBuf  [8]byte // target of the eventfd read in flight
	efdIn   bool

	mu      sync.Mutex
	added   []int // sockets registered by add, not yet seen by run
	stopped bool

	conns  map[uint64]*uconn
	nextID uint64
}

// uconn is a connection served by a uloop. At most one receive and one
// send are in flight at a time.
type uconn struct {
	id      uint64
	fd      int
	c       *conn
	in      []byte // received, not yet handled; a receive fills in[len:cap]
	sending []byte // owned by the kernel while sendIn
	sent    int
	recvIn  bool
	sendIn  bool
	quit    bool // QUIT or a protocol error: close once the replies are out
	done    bool // EOF or an error: close once nothing is in flight
}

// Operation tags in the low bits of the user data; the rest is the
// connection id (0 for the eventfd).
const (
	tagRecv = 1
	tagSend = 2
	tagBits = 2
)

// startUloop sets up a uloop on its own locked thread (the ring's only
// issuer) and returns it once it runs, or the setup error.
func startUloop(ctx context.Context, src Source, cl *clients, wg *sync.WaitGroup) (*uloop, error) {
	ready := make(chan error, 1)
	l := &uloop{src: src, clients: cl, conns: map[uint64]*uconn{}, efd: -1}
	wg.Go(func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r, err := newRing()
		if err == nil {
			var efd uintptr
			var errno syscall.Errno
			efd, _, errno = syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC, 0)
			if errno != 0 {
				r.close()
				err = errno
			}
			l.efd = int(efd)
		}
		ready <- err
		if err != nil {
			return
		}
		l.r = r
		l.run(ctx)
	})
	if err := <-ready; err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.stopped = true
		l.mu.Unlock()
		l.wake()
	})
	return l, nil
}

// add hands the loop a connected socket (blocking mode: the ring waits
// for readiness itself). Safe for concurrent use.
func (l *uloop) add(fd int) error {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return context.Canceled
	}
	l.added = append(l.added, fd)
	l.mu.Unlock()
	l.wake()
	return nil
}

func (l *uloop) wake() {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = syscall.Write(l.efd, one[:])
}

// run serves until ctx ends, then shuts every connection down, waits for
// their operations to complete, and closes them, the eventfd and the ring.
func (l *uloop) run(ctx context.Context) {
	defer func() {
		l.mu.Lock()
		for _, fd := range l.added {
			_ = syscall.Close(fd)
			l.clients.leave()
		}
		l.added = nil
		l.mu.Unlock()
		l.r.close()
		_ = syscall.Close(l.efd)
	}()
	l.armEventfd()
	for ctx.Err() == nil {
		// The timeout only bounds how late a cancelled ctx is noticed.
		if err := l.r.enter(100); err != nil {
			break
		}
		l.r.reap(func(ud uint64, res int32) { l.complete(ctx, ud, res) })
	}
	// Shutting a socket down completes its receive (0) and send (EPIPE).
	for _, u := range l.conns {
		_ = syscall.Shutdown(u.fd, syscall.SHUT_RDWR)
		u.done = true
		l.settle(u)
	}
	// Shutdown completes every operation at once: wait for them all, so
	// that no buffer is released while the kernel may still use it.
	for len(l.conns) > 0 || l.efdIn {
		if l.efdIn {
			l.wake()
		}
		if l.r.enter(100) != nil {
			// The ring is broken: keep the buffers for good rather
			// than free memory the kernel may still write.
			pinned.Lock()
			pinnedLoops = append(pinnedLoops, l)
			pinned.Unlock()
			return
		}
		l.r.reap(func(ud uint64, res int32) { l.complete(ctx, ud, res) })
	}
}

// pinnedLoops holds the loops whose ring failed while operations were in
// flight (never seen; a failing io_uring_enter is a kernel bug or an
// exhausted resource).
var (
	pinned      sync.Mutex
	pinnedLoops []*uloop
)

// submit returns a submission entry, submitting the queued ones first when
// the queue is full.
func (l *uloop) submit() *sqe {
	for {
		if e := l.r.next(); e != nil {
			return e
		}
		_ = l.r.enter(0)
	}
}

func (l *uloop) armEventfd() {
	e := l.submit()
	e.opcode, e.fd = opRead, int32(l.efd)
	e.addr, e.len = uint64(uintptr(unsafe.Pointer(&l.efdBuf[0]))), 8
	l.efdIn = true
}

func (l *uloop) complete(ctx context.Context, ud uint64, res int32) {
	if ud == 0 {
		l.efdIn = false
		if ctx.Err() != nil {
			return
		}
		l.armEventfd()
		l.mu.Lock()
		added := l.added
		l.added = nil
		l.mu.Unlock()
		for _, fd := range added {
			l.nextID++
			u := &uconn{id: l.nextID, fd: fd, c: newConn(l.src), in: make([]byte, 0, readSize)}
			l.conns[u.id] = u
			l.recv(u)
		}
		return
	}
	u := l.conns[ud>>tagBits]
	if u == nil {
		return
	}
	switch ud & (1<<tagBits - 1) {
	case tagRecv:
		u.recvIn = false
		if res <= 0 || u.done {
			// EOF or a receive error: answer nothing more.
			u.done = true
			break
		}
		u.in = u.in[:len(u.in)+int(res)]
		l.process(ctx, u)
		l.send(u)
		l.recv(u)
	case tagSend:
		u.sendIn = false
		if res < 0 {
			u.done = true
			break
		}
		u.sent += int(res)
		if u.sent < len(u.sending) {
			l.sendRest(u)
			return
		}
		u.sending, u.sent = u.sending[:0], 0
		if u.c.more {
			l.process(ctx, u)
		}
		l.send(u)
		l.recv(u)
	}
	l.settle(u)
}

// process runs the complete commands in u.in, up to outputLimit of
// replies (u.c.more: commands are left for when the replies are sent).
// A receive in flight owns u.in[len:cap]: then nothing is run (it is
// never the case, since no receive is queued while u.c.more).
func (l *uloop) process(ctx context.Context, u *uconn) {
	if u.quit || u.done || u.recvIn {
		return
	}
	used, quit := u.c.process(ctx, u.in)
	u.in = u.in[:copy(u.in, u.in[used:])]
	u.quit = quit
	if len(u.in) == 0 && cap(u.in) > readSize {
		u.in = make([]byte, 0, readSize)
	}
}

// recv queues a receive unless one is in flight or the connection should
// not read now: it quit, failed, or has commands left that wait for its
// replies to be sent (the client does not read them), so that its input
// stays in the socket and the client's writes block.
func (l *uloop) recv(u *uconn) {
	if u.recvIn || u.quit || u.done || u.c.more {
		return
	}
	if len(u.in) == cap(u.in) {
		if cap(u.in) >= inputLimit {
			// process answers an oversized request with an error
			// and quits, so this is not reached; stop reading anyway.
			u.done = true
			return
		}
		u.in = growInput(u.in)
	}
	e := l.submit()
	e.opcode, e.fd = opRecv, int32(u.fd)
	e.addr = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(u.in[len(u.in):cap(u.in)]))))
	e.len = uint32(cap(u.in) - len(u.in))
	e.userData = u.id<<tagBits | tagRecv
	u.recvIn = true
}

// send queues the pending replies unless a send is in flight.
func (l *uloop) send(u *uconn) {
	if u.sendIn || u.done || len(u.c.out) == 0 {
		return
	}
	// Swap buffers: the kernel reads sending while replies accumulate in
	// c.out.
	u.sending, u.c.out = u.c.out, u.sending[:0]
	u.c.trim()
	u.sent = 0
	l.sendRest(u)
}

func (l *uloop) sendRest(u *uconn) {
	e := l.submit()
	e.opcode, e.fd = opSend, int32(u.fd)
	e.addr = uint64(uintptr(unsafe.Pointer(&u.sending[u.sent])))
	e.len = uint32(len(u.sending) - u.sent)
	e.opFlags = msgNoSignal
	e.userData = u.id<<tagBits | tagSend
	u.sendIn = true
}

// settle closes u once it is finished and nothing of it is in flight: a
// connection that failed or hit EOF, or one that quit and whose replies are
// out. A receive still in flight is completed by shutting the socket down.
func (l *uloop) settle(u *uconn) {
	if u.quit && !u.sendIn && len(u.c.out) == 0 {
		u.done = true
	}
	if !u.done {
		return
	}
	if u.recvIn || u.sendIn {
		_ = syscall.Shutdown(u.fd, syscall.SHUT_RDWR)
		return
	}
	u.c.release()
	delete(l.conns, u.id)
	_ = syscall.Close(u.fd)
	l.clients.leave()
}
