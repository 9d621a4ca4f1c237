// Package zktest is the test harness for the ZooKeeper backend, for tests of
// any package: a fresh namespace (root znode) on the real ZooKeeper server
// of the test environment (internal/testenv) and a real, server-side
// session expiry.
//
// ZooKeeper expires a session only on its own clock, so a test expires one
// the way ZooKeeper's FAQ recommends: it attaches a second connection to the
// session with the same session id and password and closes the session from
// there. The server then deletes the session's ephemerals and fires its
// watches, and the original client learns of the expiry when it reconnects.
// The client library exposes neither the password nor a way to connect with
// a given session, so the Server's Dial, set as the client's dialer, reads
// the password from the server's connect response.
//
// Clients opened with the Server's Config or Open dial through it.
package zktest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
)

// Server is the real ZooKeeper server of the test environment. Its methods
// are safe for concurrent use.
type Server struct {
	Servers []string // host:port

	gate sync.RWMutex // held by Expire: the victim must not re-attach meanwhile
	mu   sync.Mutex
	pass map[int64][]byte // session id -> password, as the server handed them out
}

// New returns the ZooKeeper server of the test environment
// (testenv.ZooKeeperServers): without one, the test fails under
// scripts/test.sh and is skipped otherwise.
func New(t testing.TB) *Server {
	t.Helper()
	return &Server{Servers: testenv.ZooKeeperServers(t), pass: map[int64][]byte{}}
}

// Config returns the configuration of a client of the ZooKeeper backend on
// namespace ns whose connections dial through Dial, so that ExpireSession
// works on its sessions. The client's own connection has a 10 s session
// timeout.
func (s *Server) Config(ns string) zookeeper.Config {
	return zookeeper.Config{Servers: s.Servers, Namespace: ns, SessionTimeout: 10 * time.Second, Dialer: s.Dial}
}

// Open opens a client of the ZooKeeper backend with Config(ns) and closes it
// at the test's cleanup. It fails the test when the server cannot be
// reached.
func (s *Server) Open(t testing.TB, ns string) *zookeeper.Repo {
	t.Helper()
	r, err := zookeeper.Open(testenv.Context(t), s.Config(ns))
	if err != nil {
		t.Fatalf("open ZooKeeper namespace %q: %v", ns, err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// Dial is a zk.Dialer (zookeeper.Config.Dialer) that connects like
// net.DialTimeout and remembers the password of every session the server
// hands out on the connection. Only sessions of clients that dial through
// it can be expired with ExpireSession. While an expiry is in progress it
// waits, so the victim cannot re-attach to its session before it is closed.
func (s *Server) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, s: s}, nil
}

// Namespace returns a fresh namespace (testenv.Namespace(prefix)) and
// deletes its root znode and everything below it at the test's cleanup
// (DropNamespace without a digest). The deletion is registered now, so it
// runs after the cleanups registered later, such as those closing the
// test's clients.
func (s *Server) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	ns := testenv.Namespace(prefix)
	t.Cleanup(func() { s.DropNamespace(t, ns, "") })
	return ns
}

// DropNamespace deletes the root znode of namespace ns ("name" or "/name")
// and everything below it, and its deletion guards, authenticated with digest ("user:password")
// when it is not empty, as a namespace protected by a digest ACL needs. A
// missing namespace is not an error; any other failure fails the test.
func (s *Server) DropNamespace(t testing.TB, ns, digest string) {
	t.Helper()
	conn, _, err := zk.Connect(s.Servers, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Errorf("drop namespace %s: %v", ns, err)
		return
	}
	defer conn.Close()
	if digest != "" {
		if err := conn.AddAuth("digest", []byte(digest)); err != nil {
			t.Errorf("drop namespace %s: %v", ns, err)
			return
		}
	}
	// The namespace's deletion guards live in a sibling of its root.
	for _, p := range []string{"/" + strings.Trim(ns, "/"), "/" + strings.Trim(ns, "/") + ".deletions"} {
		if err := deleteAll(conn, p); err != nil {
			t.Errorf("drop namespace %s: %v", ns, err)
		}
	}
}

// NullKeys walks namespace ns ("name" or "/name") on a connection of its
// own, without this package's Repo (whose reads rewrite null data), and
// returns the keys whose znodes hold null data, the namespace root as "/",
// in walk order. ZooKeeper keeps a create or set with a nil array as null,
// which ShardingSphere's Curator-based repository cannot read. A missing
// namespace has none; a failed read fails the test.
func (s *Server) NullKeys(t testing.TB, ns string) []string {
	t.Helper()
	conn, _, err := zk.Connect(s.Servers, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatalf("null keys of %s: %v", ns, err)
	}
	defer conn.Close()
	root := "/" + strings.Trim(ns, "/")
	var null []string
	var walk func(p string) error
	walk = func(p string) error {
		d, _, err := conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", p, err)
		}
		if d == nil {
			key := strings.TrimPrefix(p, root)
			if key == "" {
				key = "/"
			}
			null = append(null, key)
		}
		kids, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("children %s: %w", p, err)
		}
		slices.Sort(kids)
		for _, k := range kids {
			if err := walk(p + "/" + k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		t.Fatalf("null keys of %s: %v", ns, err)
	}
	return null
}

// deleteAll deletes p and its descendants, retrying a znode that gained a
// child meanwhile (an ephemeral of a session that is still closing).
func deleteAll(conn *zk.Conn, p string) error {
	for attempt := 0; ; attempt++ {
		kids, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := deleteAll(conn, p+"/"+k); err != nil {
				return err
			}
		}
		err = conn.Delete(p, -1)
		if errors.Is(err, zk.ErrNotEmpty) && attempt < 10 {
			continue
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// ExpireSession makes the server expire sess, as a session timeout would and
// unlike Close: the server deletes its ephemerals and releases its locks at
// once, and sess's owner learns of it when its connection reconnects (then
// Done is closed). sess must be a session of the ZooKeeper backend (its ID
// is the session id, "0x..." in hex) whose client dialed through Dial. It
// fails the test when the session is already gone.
func (s *Server) ExpireSession(t testing.TB, sess registry.Session) {
	t.Helper()
	id, err := strconv.ParseInt(sess.ID(), 0, 64)
	if err != nil {
		t.Fatalf("ZooKeeper session ID %q: %v", sess.ID(), err)
	}
	s.Expire(t, id)
}

// Expire is ExpireSession for a session id, such as that of a client's own
// connection (zookeeper.Repo.Conn().SessionID()): expiring it ends the
// client's watches.
func (s *Server) Expire(t testing.TB, id int64) {
	t.Helper()
	s.mu.Lock()
	pass, ok := s.pass[id]
	s.mu.Unlock()
	if !ok {
		t.Fatalf("no password seen for session 0x%x: its client must dial through zktest's Dial", id)
	}
	s.gate.Lock()
	defer s.gate.Unlock()
	c, err := net.DialTimeout("tcp", s.Servers[0], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := binary.BigEndian.AppendUint32(nil, 0)         // protocolVersion
	req = binary.BigEndian.AppendUint64(req, 0)          // lastZxidSeen
	req = binary.BigEndian.AppendUint32(req, 30000)      // timeOut ms
	req = binary.BigEndian.AppendUint64(req, uint64(id)) // sessionId
	req = binary.BigEndian.AppendUint32(req, uint32(len(pass)))
	req = append(req, pass...)
	if err := writePacket(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := readPacket(c)
	if err != nil {
		t.Fatalf("attach to session 0x%x: %v", id, err)
	}
	if len(resp) < 16 || int64(binary.BigEndian.Uint64(resp[8:])) != id {
		t.Fatalf("server did not attach us to session 0x%x (already gone?)", id)
	}
	closeReq := binary.BigEndian.AppendUint32(nil, 1)               // xid
	closeReq = binary.BigEndian.AppendUint32(closeReq, ^uint32(10)) // opCloseSession = -11
	if err := writePacket(c, closeReq); err != nil {
		t.Fatal(err)
	}
	if _, err := readPacket(c); err != nil {
		t.Fatalf("close session 0x%x: %v", id, err)
	}
}

// sniffConn parses the first packet the server sends: the connect response.
type sniffConn struct {
	net.Conn
	s    *Server
	buf  []byte
	done bool
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done && n > 0 {
		c.buf = append(c.buf, p[:n]...)
		if len(c.buf) >= 4 {
			size := int(binary.BigEndian.Uint32(c.buf))
			if len(c.buf) >= 4+size {
				c.done = true
				c.s.record(c.buf[4 : 4+size])
			}
		}
	}
	return n, err
}

// record decodes a connect response: protocolVersion int32, timeOut int32,
// sessionId int64, passwd (int32 length + bytes).
func (s *Server) record(b []byte) {
	if len(b) < 20 {
		return
	}
	id := int64(binary.BigEndian.Uint64(b[8:]))
	n := int(binary.BigEndian.Uint32(b[16:]))
	if id == 0 || n < 0 || len(b) < 20+n {
		return
	}
	s.mu.Lock()
	s.pass[id] = append([]byte(nil), b[20:20+n]...)
	s.mu.Unlock()
}

func writePacket(w io.Writer, body []byte) error {
	_, err := w.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
	return err
}

func readPacket(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}
