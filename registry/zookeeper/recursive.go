package zookeeper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
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
	opSync         = 9 // sync: {ustring path}, reply {ustring path}

	xidNotification = -1
	xidPing         = -2
	xidAuth         = -4

	modePersistentRecursive = 1

	eventNodeCreated     = 1
	eventNodeDeleted     = 2
	eventNodeDataChanged = 3

	// codeUnimplemented is the error code of a server's answer to a
	// request it does not know; the server then closes the connection.
	codeUnimplemented = -6
)

// recursiveSession is the Repo's ZooKeeper session for persistent
// recursive watches and bulk reads (multiRead, see readMany), on a TCP
// connection of its own, shared by the Repo's Watches, ListChanged's memos
// and bulk readers: each Watch and memo registers a watch on its prefix
// (subscribe), and the
// server reports, in zxid order, every creation, change of data and
// deletion of a znode at or below a registered path, once per change
// however many registrations hold it; the session hands each to the
// subscriptions whose prefix holds it. It never reconnects: any failure
// (the connection lost, a ping unanswered within 2/3 of the session
// timeout) ends it and every subscription is told once, by its failed;
// the next subscribe opens a new session. It is closed when its last
// subscription ends, or with the Repo.
type recursiveSession struct {
	r         *Repo
	conn      net.Conn
	timeout   time.Duration // negotiated session timeout
	wmu       sync.Mutex    // serializes writes
	done      chan struct{} // closed by close
	closeOnce sync.Once
	wg        sync.WaitGroup // the reader and the pinger

	maxPacket int // the largest packet it reads (see handshake)

	mu         sync.Mutex
	dead       error // why the session ended; nil while it lasts
	nextXid    int32
	pending    map[int32]chan reply // requests awaiting their reply
	subs       map[*recursiveWatch]struct{}
	registered map[string]bool // paths with a watch on the server
}

// reply is the answer to one request of a recursiveSession: its body
// (after the reply header) and the zxid of its header (the last the
// server had applied when it answered), or the error code or failure of
// the session.
type reply struct {
	body []byte
	zxid int64
	err  error
}

// recursiveWatch is one Watch's subscription to the Repo's recursive
// session: changed is called with the path and type (zk.EventNodeCreated,
// EventNodeDeleted or EventNodeDataChanged) of every change at or below
// root, in zxid order; failed once, after the last changed, when the
// session fails (with the subscription: one that failed as it was
// closed may still be told). Both run on the session's reader
// goroutine and must not block. A bulk reader's hold (holdRecursive) is
// a subscription without a root, told nothing.
type recursiveWatch struct {
	s       *recursiveSession
	root    string
	changed func(string, zk.EventType)
	failed  func(*recursiveWatch, error)
}

// errNoRecursiveWatch wraps every failure to register a recursive watch.
var errNoRecursiveWatch = errors.New("no persistent recursive watch")

// openRecursive subscribes to the Repo's recursive session, opening one
// when there is none (dialed like the Repo's connections: Config.Dialer,
// AttemptTimeout; with digest authentication when Config.Digest is set),
// and registers a persistent recursive watch on path if none is. It
// returns once the watch is registered: every change after that is
// reported. ctx and Config.ConnectTimeout bound it. An old server (3.5)
// refuses addWatch or drops the connection: the error wraps
// errNoAddWatch.
func (r *Repo) openRecursive(ctx context.Context, path string, changed func(string, zk.EventType), failed func(*recursiveWatch, error)) (*recursiveWatch, error) {
	deadline := r.connectDeadline(ctx)
	r.recMu.Lock()
	defer r.recMu.Unlock()
	rw, err := r.subscribeLocked(ctx, deadline, path, changed, failed)
	if err != nil {
		return nil, fmt.Errorf("%w on %s: %w", errNoRecursiveWatch, path, err)
	}
	r.recursiveOpen.Add(1)
	rw.s.mu.Lock()
	registered := rw.s.registered[path]
	rw.s.mu.Unlock()
	if !registered {
		if err := rw.s.addWatch(ctx, path, deadline); err != nil {
			rw.unsubscribe()
			return nil, fmt.Errorf("%w on %s: %w", errNoRecursiveWatch, path, err)
		}
	}
	return rw, nil
}

// holdRecursive subscribes a bulk reader to the Repo's recursive
// session, opening one when there is none, within ctx and
// Config.ConnectTimeout: the session lasts at least until the hold is
// closed. The hold is told nothing.
func (r *Repo) holdRecursive(ctx context.Context) (*recursiveWatch, error) {
	deadline := r.connectDeadline(ctx)
	r.recMu.Lock()
	defer r.recMu.Unlock()
	return r.subscribeLocked(ctx, deadline, "", nil, nil)
}

// connectDeadline is the earlier of ctx's deadline and
// Config.ConnectTimeout from now.
func (r *Repo) connectDeadline(ctx context.Context) time.Time {
	deadline := time.Now().Add(r.cfg.ConnectTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return deadline
}

// subscribeLocked subscribes to the recursive session, dialing one when
// there is none or it ended, with recMu held.
func (r *Repo) subscribeLocked(ctx context.Context, deadline time.Time, path string, changed func(string, zk.EventType), failed func(*recursiveWatch, error)) (*recursiveWatch, error) {
	if r.closed.Load() {
		return nil, errors.New("the repository is closed")
	}
	s := r.rec
	if s == nil || s.ended() != nil {
		var err error
		if s, err = r.dialRecursive(ctx, deadline); err != nil {
			return nil, err
		}
		r.rec = s
	}
	rw := &recursiveWatch{s: s, root: path, changed: changed, failed: failed}
	s.mu.Lock()
	s.subs[rw] = struct{}{}
	s.mu.Unlock()
	return rw, nil
}

// close ends the subscription, and the session when it was the last one.
// failed is not called after it returns.
func (rw *recursiveWatch) close() {
	rw.s.r.recMu.Lock()
	defer rw.s.r.recMu.Unlock()
	rw.unsubscribe()
}

// unsubscribe is close with the Repo's recMu held.
func (rw *recursiveWatch) unsubscribe() {
	s := rw.s
	s.mu.Lock()
	_, ok := s.subs[rw]
	delete(s.subs, rw)
	last := len(s.subs) == 0
	s.mu.Unlock()
	if !ok {
		return
	}
	if rw.root != "" {
		s.r.recursiveOpen.Add(-1)
	}
	if last {
		s.close()
		if s.r.rec == s {
			s.r.rec = nil
		}
	}
}

// closeRecursive closes the Repo's recursive session, if any (Close).
func (r *Repo) closeRecursive() {
	r.recMu.Lock()
	s := r.rec
	r.rec = nil
	r.recMu.Unlock()
	if s != nil {
		s.close()
	}
}

// dialRecursive opens a session on one of the servers and starts its
// reader and pinger.
func (r *Repo) dialRecursive(ctx context.Context, deadline time.Time) (*recursiveSession, error) {
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
		s, err := r.handshake(conn, deadline)
		if err != nil {
			conn.Close()
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			if errors.Is(err, errRefused) {
				break // the server answered: another one of the same ensemble would too
			}
			continue
		}
		s.wg.Add(2)
		go s.read()
		go s.ping()
		return s, nil
	}
	return nil, errors.Join(errs...)
}

// errRefused is a server's answer refusing a request.
var errRefused = errors.New("refused by the server")

// errNoAddWatch is a server that refused addWatch, or dropped the
// connection at it, as a ZooKeeper 3.5 server does: asking again is no use.
var errNoAddWatch = errors.New("the server has no addWatch (ZooKeeper 3.5?)")

// handshake connects and authenticates on conn, each answered before the
// next is sent.
func (r *Repo) handshake(conn net.Conn, deadline time.Time) (*recursiveSession, error) {
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
	resp, err := readPacket(conn, 1<<10)
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
	// A multiRead answer holds at most multiReadOps values, each at most
	// what the server accepts in a request.
	maxPacket := multiReadOps * (r.cfg.MaxRequestBytes + 1024)
	s := &recursiveSession{r: r, conn: conn, timeout: timeout, done: make(chan struct{}), nextXid: 1, maxPacket: maxPacket,
		pending: map[int32]chan reply{}, subs: map[*recursiveWatch]struct{}{}, registered: map[string]bool{}}
	if r.cfg.Digest != "" {
		body := binary.BigEndian.AppendUint32(nil, 0) // type
		body = appendBuffer(body, []byte("digest"))
		body = appendBuffer(body, []byte(r.cfg.Digest))
		if err := s.call(xidAuth, opAuth, body); err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return nil, err
	}
	return s, nil
}

// call sends a request and reads packets until its reply, before the
// reader starts.
func (s *recursiveSession) call(xid, op int32, body []byte) error {
	req := appendInt32(nil, xid)
	req = appendInt32(req, op)
	if err := writePacket(s.conn, append(req, body...)); err != nil {
		return err
	}
	for {
		resp, err := readPacket(s.conn, s.maxPacket)
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
			return &codeError{code}
		}
		return nil
	}
}

// ended returns why the session ended, or nil while it lasts.
func (s *recursiveSession) ended() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

// addWatch registers a persistent recursive watch on path and waits for
// the server's answer, until deadline or ctx ends.
func (s *recursiveSession) addWatch(ctx context.Context, path string, deadline time.Time) error {
	body := appendBuffer(nil, []byte(path))
	body = binary.BigEndian.AppendUint32(body, modePersistentRecursive)
	err := s.request(ctx, opAddWatch, body, deadline).err
	// An error code, or the connection ended (EOF or reset, as the
	// server answers an unknown request), but not a timeout.
	var ne net.Error
	switch {
	case err == nil:
	case errors.Is(err, errNoAnswer), ctx.Err() != nil, errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("addWatch: %w", err)
	default:
		return fmt.Errorf("addWatch: %w: %w", errNoAddWatch, err)
	}
	s.mu.Lock()
	s.registered[path] = true
	s.mu.Unlock()
	return nil
}

// errNoAnswer is a request unanswered by its deadline: the session is
// closed.
var errNoAnswer = errors.New("no answer in time")

// request sends a request of opcode op and waits for its reply
// until deadline or ctx ends (then it returns ctx's error): an error code
// is a *codeError, one unanswered by deadline closes the session and is
// errNoAnswer, and the session's failure meanwhile is its error.
func (s *recursiveSession) request(ctx context.Context, op int32, body []byte, deadline time.Time) reply {
	ch := make(chan reply, 1)
	s.mu.Lock()
	if s.dead != nil {
		s.mu.Unlock()
		return reply{err: s.dead}
	}
	xid := s.nextXid
	s.nextXid++
	s.pending[xid] = ch
	s.mu.Unlock()
	req := appendInt32(make([]byte, 0, 8+len(body)), xid)
	req = appendInt32(req, op)
	if err := s.write(append(req, body...)); err != nil {
		s.conn.Close() // the reader reports it
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case got := <-ch:
		return got
	case <-t.C:
		s.conn.Close()
		return reply{err: errNoAnswer}
	case <-ctx.Done():
		return reply{err: ctx.Err()}
	}
}

// sync sends a sync and returns the zxid of its answer: every change at
// or below a registered path that the server applied before it has been
// handed to the subscriptions by then (the server sends the
// notifications of what it applied before the answer, and the reader
// hands them over in order), and every change reported after it is
// above that zxid. It waits until ctx ends or Config.ConnectTimeout.
func (s *recursiveSession) sync(ctx context.Context) (int64, error) {
	got := s.request(ctx, opSync, appendBuffer(nil, []byte("/")), s.r.connectDeadline(ctx))
	return got.zxid, got.err
}

// read reads the replies and notifications until the connection fails or
// is closed, then fails what waits on the session.
func (s *recursiveSession) read() {
	defer s.wg.Done()
	err := s.readLoop()
	s.conn.Close()
	s.mu.Lock()
	s.dead = fmt.Errorf("%w: the recursive watch's session failed: %w", errNoRecursiveWatch, err)
	for xid, ch := range s.pending {
		ch <- reply{err: err}
		delete(s.pending, xid)
	}
	subs := make([]*recursiveWatch, 0, len(s.subs))
	for rw := range s.subs {
		subs = append(subs, rw)
	}
	dead := s.dead
	s.mu.Unlock()
	select {
	case <-s.done:
		return
	default:
	}
	for _, rw := range subs {
		if rw.failed != nil {
			rw.failed(rw, dead)
		}
	}
}

func (s *recursiveSession) readLoop() error {
	for {
		// The server answers a ping every timeout/3; no answer for 2/3
		// of the timeout means the server is gone (as go-zookeeper).
		if err := s.conn.SetReadDeadline(time.Now().Add(s.timeout * 2 / 3)); err != nil {
			return err
		}
		resp, err := readPacket(s.conn, s.maxPacket)
		if err != nil {
			return err
		}
		if len(resp) < 16 {
			return fmt.Errorf("a reply of %d bytes", len(resp))
		}
		xid := int32(binary.BigEndian.Uint32(resp))
		code := int32(binary.BigEndian.Uint32(resp[12:]))
		switch xid {
		case xidPing:
			continue
		case xidNotification:
		default:
			s.mu.Lock()
			ch := s.pending[xid]
			delete(s.pending, xid)
			s.mu.Unlock()
			if ch != nil {
				if code != 0 {
					ch <- reply{err: &codeError{code}}
				} else {
					ch <- reply{body: resp[16:], zxid: int64(binary.BigEndian.Uint64(resp[4:]))}
				}
			}
			continue
		}
		if code != 0 {
			return fmt.Errorf("a notification with error code %d", code)
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
		typ := int32(binary.BigEndian.Uint32(body))
		if typ != eventNodeCreated && typ != eventNodeDeleted && typ != eventNodeDataChanged {
			continue
		}
		path := string(body[12 : 12+n])
		s.mu.Lock()
		for rw := range s.subs {
			if rw.root != "" && (path == rw.root || strings.HasPrefix(path, rw.root+"/")) {
				rw.changed(path, zk.EventType(typ))
			}
		}
		s.mu.Unlock()
	}
}

// ping sends a ping every third of the session timeout.
func (s *recursiveSession) ping() {
	defer s.wg.Done()
	t := time.NewTicker(s.timeout / 3)
	defer t.Stop()
	req := appendInt32(nil, xidPing)
	req = appendInt32(req, opPing)
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		if err := s.write(req); err != nil {
			s.conn.Close() // the reader reports it
			return
		}
	}
}

func (s *recursiveSession) write(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.conn.SetWriteDeadline(time.Now().Add(s.timeout / 3)); err != nil {
		return err
	}
	return writePacket(s.conn, b)
}

// close ends the session (the server closes it at once, dropping its
// watches) and waits for the reader and the pinger. No failed is called.
func (s *recursiveSession) close() {
	s.closeOnce.Do(func() {
		close(s.done)
		req := appendInt32(nil, 0) // xid
		req = appendInt32(req, opCloseSession)
		_ = s.write(req)
		s.conn.Close()
		s.wg.Wait()
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

// readPacket reads a packet of at most most bytes.
func readPacket(r io.Reader, most int) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || int(n) > most {
		return nil, fmt.Errorf("a packet of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}
