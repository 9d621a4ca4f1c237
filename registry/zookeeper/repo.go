// Package zookeeper is the registry backend on Apache ZooKeeper (3.5+; tested
// with 3.8), the analogue of ShardingSphere's ZookeeperRepository, on the same
// znode layout: keys live under a namespace root znode, so namespace
// "governance_ds" and key "/nodes/compute_nodes" give the znode
// "/governance_ds/nodes/compute_nodes", as with Curator's namespace.
//
// Assumptions about the client (github.com/go-zookeeper/zk v1.0.4) and how
// this package deals with them:
//   - Calls take no context. Every operation checks ctx before it starts and
//     is then bounded by the connection's own timeouts (a request fails with
//     ErrUnavailable when the connection drops, or after a failed round of
//     connection attempts). Waits that are ours (locks, connecting) end with
//     ctx, and bulk reads (List, a Watch's loading, a Commit's reads), which
//     keep a window of requests in flight, start no request after ctx ends.
//   - A request sent while the connection has no session waits for the
//     client's handshake, whose deadline is ten times the read timeout (100 s
//     and more). So an operation starts only once the Repo's connection has
//     a session, waiting at most Config.ConnectTimeout for it, then fails
//     with ErrUnavailable. With a server that stops answering (SIGSTOP, a
//     partition) a request in flight fails when the client gives up on the
//     connection (2/3 of the session timeout) and later ones within
//     ConnectTimeout, never reporting success (apache/shardingsphere#38641).
//   - The client's watches are one-shot, and it cannot register ZooKeeper
//     3.6's persistent recursive watch (addWatch). So Watch registers one
//     on a session of the Repo's own (a small client of ours, recursive.go;
//     one connection, shared by the Repo's Watches), which reports every
//     change below the prefix: a new table costs the
//     reads of its own znodes, not a listing of a parent of 10,000
//     tables. Where the server has no addWatch (3.5) or that session
//     fails (connection lost, ping unanswered), the Watch reads every
//     znode it tracks again and re-arms a data and a child watch on each,
//     as Curator's TreeCache does: no change made meanwhile is missed.
//     After a failure it registers the recursive watch again (after a
//     wait of 1 s, doubling up to a minute, while that fails), then reads
//     every znode once more.
//   - Nor can it send ZooKeeper 3.6's multiRead (many reads in one
//     request). So List reads each level of a subtree holding 64 znodes or
//     more with multiRead on that same session (multiread.go), after a sync:
//     10,000 tables take a few hundred requests instead of one per znode.
//     Where the server has no multiRead (3.5) or a request fails, it reads
//     those znodes one request each on the Repo's connection, as it does
//     for smaller levels.
//   - After a session expiry the client silently opens a new session. That
//     is what the Repo's own connection wants (persistent operations go on;
//     open watches end with ErrWatchLost). A Session has its own connection,
//     which is closed at the first expiry so it never continues under a new
//     session: its Done is closed with ErrSessionExpired instead.
//   - The client's event channel drops events when full; this package uses
//     the synchronous event callback instead, so no expiry goes unseen.
//   - Creates do not return a Stat, so Create writes with a multi (create,
//     then set at version 0) to learn the new Mzxid atomically.
//
// Versions are Stat.Mzxid, the zxid of the last write: unique across the
// ensemble, so a key deleted and created again never repeats a version.
// Parents are created as persistent znodes with empty data; they are keys
// like any other (Get returns their empty value, Watch reports them).
//
// No znode is ever written with null data: ZooKeeper keeps a nil array as
// null, distinct from an empty one, and ShardingSphere's Curator-based
// repository cannot read a null znode (its query throws, its cache listener
// loses the event). Every create and set writes an empty array where the
// value is empty, as Curator does for the parents it creates. Null znodes
// left by older versions of this package are rewritten as empty when Get,
// List or a Watch's loading reads them (a set at the version read, so a
// concurrent write wins), and the namespace root at Open.
package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Defaults for zero Config fields.
const (
	// DefaultSessionTimeout is the session timeout the Repo's own connection
	// asks for: ShardingSphere's timeToLiveSeconds (60 s). The server clamps it
	// to [2, 20] * tickTime.
	DefaultSessionTimeout = 60 * time.Second
	// DefaultConnectTimeout bounds Open and NewSession while they wait for a
	// session.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMaxRequestBytes is Config.MaxRequestBytes' default: the
	// server's default jute.maxbuffer (0xfffff bytes).
	DefaultMaxRequestBytes = 0xfffff
)

// Config says where the ensemble is and how to talk to it.
type Config struct {
	// Servers is the ensemble as host:port (port 2181 when omitted).
	Servers []string
	// Namespace is the root znode every key lives under, e.g.
	// "governance_ds" (a leading "/" is allowed). Required, like
	// ShardingSphere's namespace. It is created on the first write.
	Namespace string
	// SessionTimeout is the session timeout of the Repo's own connection
	// (watches and persistent keys). Zero means DefaultSessionTimeout.
	SessionTimeout time.Duration
	// ConnectTimeout bounds the wait for a session in Open and NewSession.
	// Zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Digest is "user:password" for ZooKeeper digest authentication. When
	// set, every connection authenticates with it and every znode is created
	// with a creator-only ACL (CREATOR_ALL_ACL, as ShardingSphere does), so
	// clients without the credentials can neither read nor write. When empty,
	// znodes are world-readable and world-writable.
	Digest string
	// Logger receives the client library's log lines at debug level. Nil
	// discards them.
	Logger *slog.Logger
	// Dialer replaces net.DialTimeout for every connection (proxies, tests).
	Dialer zk.Dialer
	// Retry paces the connection attempts of every connection (see
	// Backoff): ShardingSphere's retryIntervalMilliseconds and maxRetries.
	// A zero Interval means go-zookeeper's own pacing (a pause of 1 s after
	// each round of servers) and no limit but ConnectTimeout.
	Retry Backoff
	// AttemptTimeout bounds each connection attempt (the TCP connect):
	// ShardingSphere's operationTimeoutMilliseconds, which it gives Curator
	// as its connection timeout. Zero means go-zookeeper's 1 s.
	AttemptTimeout time.Duration
	// MaxRequestBytes is the most one write may carry: the server's
	// jute.maxbuffer, past which it drops the connection without an
	// answer. A write is counted with its full paths, its values (a
	// create's twice: it is a multi of the create and a set) and
	// registry.RequestOverhead a key; a larger one is refused with
	// registry.ErrTooLarge before it is sent. Zero means
	// DefaultMaxRequestBytes.
	MaxRequestBytes int
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if len(c.Servers) == 0 {
		errs = append(errs, errors.New("zookeeper: Servers is empty (want host:port, e.g. 127.0.0.1:2181)"))
	}
	for i, s := range c.Servers {
		if strings.TrimSpace(s) == "" {
			errs = append(errs, fmt.Errorf("zookeeper: Servers[%d] is empty", i))
		}
	}
	ns := strings.TrimPrefix(c.Namespace, "/")
	if ns == "" {
		errs = append(errs, errors.New("zookeeper: Namespace is empty (want a root znode name such as governance_ds)"))
	} else if err := registry.ValidateKey("/" + ns); err != nil {
		errs = append(errs, fmt.Errorf("zookeeper: Namespace %q: %w", c.Namespace, err))
	}
	if c.SessionTimeout < 0 {
		errs = append(errs, fmt.Errorf("zookeeper: SessionTimeout %v is negative", c.SessionTimeout))
	}
	if c.ConnectTimeout < 0 {
		errs = append(errs, fmt.Errorf("zookeeper: ConnectTimeout %v is negative", c.ConnectTimeout))
	}
	if c.Retry.Interval < 0 || c.Retry.MaxRetries < 0 || c.AttemptTimeout < 0 {
		errs = append(errs, fmt.Errorf("zookeeper: Retry %+v, AttemptTimeout %v: want 0 or more", c.Retry, c.AttemptTimeout))
	}
	if c.Digest != "" && !strings.Contains(c.Digest, ":") {
		errs = append(errs, errors.New("zookeeper: Digest must be user:password"))
	}
	return errors.Join(errs...)
}

// Repo is a registry.Repository on a ZooKeeper ensemble. It holds one
// connection for persistent keys and watches, and one for the persistent
// recursive watches of its Watches and of ListChanged's memos while any is
// open; every Session opens its own.
// It is safe for concurrent use.
type Repo struct {
	cfg  Config
	root string // "/governance_ds"
	acl  []zk.ACL
	conn *zk.Conn

	cache *listCache // what List read, kept current by the connection's watches

	wmu     sync.Mutex
	watches map[*watch]struct{} // open Watches, handed the fired watches (dispatch)

	closed    atomic.Bool
	done      chan struct{} // closed by Close
	closeOnce sync.Once

	mu       sync.Mutex
	lost     chan struct{}         // closed (and replaced) when the connection's session expires
	sessions map[*session]struct{} // open sessions, closed by Close
	up       bool                  // the connection has a session
	upCh     chan struct{}         // closed when up becomes true; replaced when it becomes false

	testMu              sync.Mutex
	betweenReadAndWrite func()      // tests only (SetBetweenReadAndWrite): called by conditional writes between their read and each write
	walkChanged         atomic.Bool // tests only (SetListChangedByWalk): ListChanged walks the subtree, keeping no memo
	noRecursive         atomic.Bool // tests only (SetRecursiveWatch): Watches use child watches, without a recursive watch

	recMu         sync.Mutex
	rec           *recursiveSession // the Watches' recursive watches, while one is open
	recursiveOpen atomic.Int64      // Watches subscribed to it, for tests
	noMultiRead   atomic.Bool       // the server refused multiRead: List reads one znode a request
	noAddWatch    atomic.Bool       // the server refused addWatch: ListChanged's memos follow the cache's watches
}

// between calls the test hook betweenReadAndWrite, if any.
func (r *Repo) between() {
	r.testMu.Lock()
	fn := r.betweenReadAndWrite
	r.testMu.Unlock()
	if fn != nil {
		fn()
	}
}

var _ registry.Repository = (*Repo)(nil)

// Open connects to the ensemble and returns a Repo once the connection has a
// session (within cfg.ConnectTimeout and ctx). An unreachable ensemble is an
// error wrapping registry.ErrUnavailable that names the servers.
func Open(ctx context.Context, cfg Config) (*Repo, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	r := &Repo{
		cfg:      cfg,
		root:     "/" + strings.Trim(cfg.Namespace, "/"),
		acl:      zk.WorldACL(zk.PermAll),
		done:     make(chan struct{}),
		lost:     make(chan struct{}),
		sessions: map[*session]struct{}{},
		upCh:     make(chan struct{}),
		cache:    newListCache(),
	}
	if cfg.Digest != "" {
		r.acl = zk.AuthACL(zk.PermAll)
	}
	conn, err := r.connect(ctx, "open", cfg.SessionTimeout, cfg.Dialer, nil, r.onEvent)
	if err != nil {
		return nil, err
	}
	r.conn = conn
	r.repairRoot()
	return r, nil
}

// connect opens a connection, waits for its session and authenticates.
func (r *Repo) connect(ctx context.Context, op string, timeout time.Duration, dial zk.Dialer, stop <-chan struct{}, cb func(zk.Event)) (*zk.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, convertError(op, "", err)
	}
	ready := make(chan struct{})
	var readyOnce sync.Once
	policy := newDialPolicy(dial, r.cfg.Retry, r.cfg.AttemptTimeout, r.done, stop)
	hosts := zk.WithLogInfo(false) // go-zookeeper's host provider
	if r.cfg.Retry.Interval > 0 {
		hosts = zk.WithHostProvider(&roundRobin{policy: policy})
	}
	conn, _, err := zk.Connect(r.cfg.Servers, timeout,
		zk.WithDialer(policy.Dial),
		zk.WithLogger(logger{r.cfg.Logger}),
		zk.WithLogInfo(false),
		hosts,
		zk.WithEventCallback(func(ev zk.Event) {
			cb(ev) // first: the Repo is up (see waitUp) when Open returns
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				policy.connected()
				readyOnce.Do(func() { close(ready) })
			}
		}))
	if err != nil {
		return nil, convertError(op, "", fmt.Errorf("%w: %w", registry.ErrUnavailable, err))
	}
	t := time.NewTimer(r.cfg.ConnectTimeout)
	defer t.Stop()
	select {
	case <-ready:
	case <-policy.gaveUp:
		policy.abandon()
		conn.Close()
		n, last := policy.attempts()
		return nil, convertError(op, "", fmt.Errorf("%w: no ZooKeeper session with any of %s: gave up after %d connection attempts "+
			"(1 + maxRetries %d, retryIntervalMilliseconds %d): %v: check that the servers are running (echo ruok | nc host port) "+
			"and that the host:port list matches their clientPort",
			registry.ErrUnavailable, strings.Join(r.cfg.Servers, ","), n, r.cfg.Retry.MaxRetries, r.cfg.Retry.Interval.Milliseconds(), last))
	case <-ctx.Done():
		policy.abandon()
		conn.Close()
		return nil, convertError(op, "", ctx.Err())
	case <-t.C:
		policy.abandon()
		conn.Close()
		return nil, convertError(op, "", fmt.Errorf("%w: no ZooKeeper session with any of %s within %v: "+
			"check that the servers are running (echo ruok | nc host port), that the host:port list "+
			"matches their clientPort, and that no firewall drops the connection",
			registry.ErrUnavailable, strings.Join(r.cfg.Servers, ","), r.cfg.ConnectTimeout))
	}
	if r.cfg.Digest != "" {
		if err := conn.AddAuth("digest", []byte(r.cfg.Digest)); err != nil {
			policy.abandon()
			conn.Close()
			return nil, convertError(op, "", err)
		}
	}
	return conn, nil
}

// onEvent runs on the client's loop for the Repo's connection; it must not
// block or call the connection.
func (r *Repo) onEvent(ev zk.Event) {
	r.cache.event(ev)
	r.dispatch(ev)
	if ev.Type != zk.EventSession {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.State {
	case zk.StateExpired:
		close(r.lost)
		r.lost = make(chan struct{})
		r.setUp(false)
	case zk.StateHasSession:
		r.setUp(true)
	case zk.StateDisconnected, zk.StateConnecting, zk.StateAuthFailed:
		r.setUp(false)
	}
}

// setUp records whether the connection has a session; r.mu is held.
func (r *Repo) setUp(up bool) {
	switch {
	case up && !r.up:
		close(r.upCh)
	case !up && r.up:
		r.upCh = make(chan struct{})
	}
	r.up = up
}

// waitUp returns once the Repo's connection has a session. While it has
// none (the server stopped answering, the connection is being replaced),
// it waits up to cfg.ConnectTimeout, then fails with ErrUnavailable: a
// request queued meanwhile would wait for the client's handshake, whose
// deadline is ten times the read timeout. ctx bounds the wait.
func (r *Repo) waitUp(ctx context.Context, op, key string) error {
	r.mu.Lock()
	up, ch := r.up, r.upCh
	r.mu.Unlock()
	if up {
		return nil
	}
	t := time.NewTimer(r.cfg.ConnectTimeout)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return convertError(op, key, ctx.Err())
	case <-r.done:
		return &registry.OpError{Op: op, Key: key, Err: registry.ErrClosed}
	case <-t.C:
		return convertError(op, key, fmt.Errorf("%w: no ZooKeeper session with any of %s for %v (the connection was lost): "+
			"check that the servers are running and answering (echo ruok | nc host port)",
			registry.ErrUnavailable, strings.Join(r.cfg.Servers, ","), r.cfg.ConnectTimeout))
	}
}

// lostChan returns a channel closed at the next session expiry of the Repo's
// connection.
func (r *Repo) lostChan() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost
}

// Conn returns the Repo's own connection, for tools that need ZooKeeper
// features beyond registry.Repository. Paths on it include the namespace
// root. It is closed by Close.
func (r *Repo) Conn() *zk.Conn { return r.conn }

// Close implements registry.Repository. It closes every open Session of the
// Repo (their ephemerals go) and the connection. Persistent keys stay.
func (r *Repo) Close() error {
	r.closeOnce.Do(func() {
		r.closed.Store(true)
		close(r.done)
		r.mu.Lock()
		sessions := make([]*session, 0, len(r.sessions))
		for s := range r.sessions {
			sessions = append(sessions, s)
		}
		r.mu.Unlock()
		for _, s := range sessions {
			s.end(registry.ErrClosed, true)
		}
		r.closeRecursive()
		r.conn.Close()
	})
	return nil
}

// full maps a key onto its znode path.
func (r *Repo) full(key string) string {
	if key == "/" {
		return r.root
	}
	return r.root + key
}

// key maps a znode path under the root back onto a key.
func (r *Repo) key(p string) string {
	if p == r.root {
		return "/"
	}
	return strings.TrimPrefix(p, r.root)
}

// check validates key, refuses work after Close or when ctx has ended, and
// waits for the connection to have a session (waitUp).
func (r *Repo) check(ctx context.Context, op, key string) error {
	if err := registry.ValidateKey(key); err != nil {
		return &registry.OpError{Op: op, Key: key, Err: err}
	}
	if r.closed.Load() {
		return &registry.OpError{Op: op, Key: key, Err: registry.ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return convertError(op, key, err)
	}
	return r.waitUp(ctx, op, key)
}

// checkWrite is check plus refusing the namespace root itself as a key.
func (r *Repo) checkWrite(ctx context.Context, op, key string) error {
	if err := r.check(ctx, op, key); err != nil {
		return err
	}
	if key == "/" {
		return &registry.OpError{Op: op, Key: key, Err: fmt.Errorf("%w: / is the namespace root, not a key", registry.ErrBadKey)}
	}
	return nil
}

// checkSize refuses a write beyond Config.MaxRequestBytes: keys keys
// (with the namespace root) of keyBytes bytes and the valueBytes bytes of
// values it sends (a create sends its value twice, see create).
func (r *Repo) checkSize(op, key string, keys, keyBytes, valueBytes int) error {
	size := keyBytes + keys*(len(r.root)+registry.RequestOverhead) + valueBytes
	return registry.CheckSize(op, key, size, r.cfg.MaxRequestBytes, "ZooKeeper's request limit (the server's jute.maxbuffer; the repository prop maxRequestBytes)")
}

// convert is convertError for the Repo's connection: after Close every
// failure is ErrClosed, and an expiry of the Repo's own session (which the
// client replaces by itself) is a passing unavailability.
func (r *Repo) convert(op, key string, err error) error {
	switch {
	case err == nil:
		return nil
	case r.closed.Load():
		return &registry.OpError{Op: op, Key: key, Err: fmt.Errorf("%w: %w", registry.ErrClosed, err)}
	case errors.Is(err, zk.ErrSessionExpired):
		return convertError(op, key, fmt.Errorf("%w: the connection's session expired and is being replaced: %w", registry.ErrUnavailable, err))
	}
	return convertError(op, key, err)
}

// logf logs at warning level, when a logger is set.
func (c Config) logf(format string, args ...any) {
	if c.Logger != nil {
		c.Logger.Warn(fmt.Sprintf(format, args...))
	}
}

// logger adapts slog to the client's Printf logger.
type logger struct{ l *slog.Logger }

func (l logger) Printf(format string, args ...any) {
	if l.l != nil {
		l.l.Debug(fmt.Sprintf(format, args...), "component", "zookeeper")
	}
}

// data is the array a znode is written with for value: never nil, which
// ZooKeeper would keep as null.
func data(value []byte) []byte {
	if value == nil {
		return []byte{}
	}
	return value
}

// repair rewrites the null data of the znode p, read at stat, as an empty
// array, with a set at the data version read, and returns the empty value
// and the znode's stat after the set. When the set fails (the znode was
// written or deleted meanwhile, or the credentials may not write it), it
// returns the empty value and stat unchanged: the value reads as empty
// either way, and whoever wrote meanwhile wrote non-null data.
func repair(conn *zk.Conn, p string, stat *zk.Stat) ([]byte, *zk.Stat) {
	if st, err := conn.Set(p, []byte{}, stat.Version); err == nil {
		return []byte{}, st
	}
	return []byte{}, stat
}

// repairRoot rewrites a null namespace root znode as empty: nothing else
// reads the root's data, and ShardingSphere's repository does. Failures
// are left to the first write.
func (r *Repo) repairRoot() {
	if d, stat, err := r.conn.Get(r.root); err == nil && d == nil {
		repair(r.conn, r.root, stat)
	}
}

// mkdirs creates p and its missing ancestors as persistent znodes with empty
// data. Existing ones are left alone.
func mkdirs(conn *zk.Conn, acl []zk.ACL, p string) error {
	if p == "/" || p == "" {
		return nil
	}
	_, err := conn.Create(p, []byte{}, 0, acl)
	if errors.Is(err, zk.ErrNoNode) {
		if err := mkdirs(conn, acl, parent(p)); err != nil {
			return err
		}
		_, err = conn.Create(p, []byte{}, 0, acl)
	}
	if err == nil || errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

// withParents runs write, and when it fails because a parent is missing,
// creates the parents of p and runs it again (a concurrent Delete can remove
// them in between, hence the loop).
func withParents(conn *zk.Conn, acl []zk.ACL, p string, write func() error) error {
	for attempt := 0; ; attempt++ {
		err := write()
		if !errors.Is(err, zk.ErrNoNode) || attempt == 20 {
			return err
		}
		if err := mkdirs(conn, acl, parent(p)); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
}

func parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// gatedDialer refuses to dial once refuse is set.
func gatedDialer(base zk.Dialer, refuse *atomic.Bool) zk.Dialer {
	if base == nil {
		base = net.DialTimeout
	}
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		if refuse.Load() {
			return nil, errors.New("session ended; not reconnecting")
		}
		return base(network, addr, timeout)
	}
}
