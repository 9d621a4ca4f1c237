// Package etcd is the registry backend for etcd 3.4 and later, on the
// go.etcd.io/etcd/client/v3 client. It uses ShardingSphere's etcd layout: the
// namespace is a raw key prefix, as the jetcd client applies it, so namespace
// "governance_ds" and key "/nodes/x" are the etcd key "governance_ds/nodes/x".
//
// How the registry contract maps onto etcd:
//   - Version is the key's ModRevision, which never repeats (not even after a
//     delete and re-create). Create is a Txn on CreateRevision == 0; Update is
//     a Txn on ModRevision == expect whose else branch reads the key, so a
//     mismatch is told apart from a missing key in one round trip.
//   - etcd has no directories. Children lists the distinct next segments of
//     the keys under "key/" (keys-only, paged reads that skip whole
//     subtrees); Delete removes "key" and the range "key/" in one Txn, never
//     "key" as a bare prefix, so "/metadata/db1" leaves "/metadata/db10"
//     alone.
//   - Watch reads a snapshot and watches from the snapshot's revision + 1,
//     so no change is missed between the two. Compaction, a closed watcher,
//     a lost leader or any other end that is not the caller's ctx ends the
//     channel with an Event wrapping registry.ErrWatchLost.
//   - A Session is a lease kept alive by go.etcd.io/etcd/client/v3/concurrency;
//     ephemeral keys are puts with that lease, CreateExclusiveEphemeral is a
//     Txn on CreateRevision == 0 (ShardingSphere's etcd repository uses a plain
//     put here, so its "exclusive" ephemerals are not), and locks are
//     concurrency.Mutex. The client closes Done only once a keep-alive
//     answers that the lease is gone or its own deadline passes, which is
//     after the server expired it: a session is a liveness signal, not a
//     fencing token.
//
// Every error from the client goes through one convertError, so callers test
// errors with errors.Is against the registry sentinels and context errors.
package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Defaults used when the Config leaves a duration zero.
const (
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 10 * time.Second
	// DefaultMaxRequestBytes is Config.MaxRequestBytes' default: etcd's
	// own default --max-request-bytes, 1.5 MiB.
	DefaultMaxRequestBytes = 1536 << 10
)

// Config says how to reach etcd.
type Config struct {
	// Endpoints are the client URLs of the etcd members, such as
	// "http://127.0.0.1:2379" (ShardingSphere's server-lists). Required.
	Endpoints []string
	// Namespace is prepended to every key as a raw prefix ("governance_ds" +
	// "/nodes" = "governance_ds/nodes"). Empty means no prefix. It may contain
	// "/" between segments ("a/b") and may start with "/" ("/shardkeeper"), but
	// must not end with "/", contain an empty, "." or ".." segment, or contain
	// control characters; at most 255 bytes.
	Namespace string
	// Username and Password enable etcd authentication when Username is set.
	// The token they get is renewed whenever the server refuses it (it
	// expired after etcd's --auth-token-ttl unused, or the server
	// restarted), etcd 3.4 included.
	Username, Password string
	// TLS, when not nil, is used for the connection (use https:// endpoints).
	TLS *tls.Config
	// DialTimeout bounds Open's connection check and the client's dial.
	// Zero means DefaultDialTimeout.
	DialTimeout time.Duration
	// RequestTimeout bounds each single request (get, put, txn, delete, lease
	// grant and revoke) when the caller's ctx allows longer. It does not
	// bound Lock, which waits for its ctx, or Watch. Zero means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Logger receives the etcd client's logs. Nil means no logging.
	Logger *zap.Logger
	// Retry paces and limits the connection attempts (see Retry).
	Retry Retry
	// Dialer replaces the TCP dial of every connection attempt (tests,
	// proxies); addr is host:port.
	Dialer func(ctx context.Context, addr string) (net.Conn, error)
	// MaxRequestBytes is the most one write may carry (keys with the
	// namespace, values and registry.RequestOverhead each, see
	// registry.Txn.Size): the server's --max-request-bytes. A larger write
	// is refused with registry.ErrTooLarge before it is sent. Zero means
	// DefaultMaxRequestBytes.
	MaxRequestBytes int
}

// Validate reports every problem in c at once.
func (c Config) Validate() error {
	var errs []error
	if len(c.Endpoints) == 0 {
		errs = append(errs, errors.New("etcd: no endpoints (set at least one client URL such as http://127.0.0.1:2379)"))
	}
	for i, e := range c.Endpoints {
		if strings.TrimSpace(e) == "" {
			errs = append(errs, fmt.Errorf("etcd: endpoint %d is empty", i))
		}
	}
	if err := validateNamespace(c.Namespace); err != nil {
		errs = append(errs, err)
	}
	if c.DialTimeout < 0 {
		errs = append(errs, fmt.Errorf("etcd: negative dial timeout %v", c.DialTimeout))
	}
	if c.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("etcd: negative request timeout %v", c.RequestTimeout))
	}
	if c.Retry.Interval < 0 || c.Retry.MaxRetries < 0 || c.Retry.AttemptTimeout < 0 {
		errs = append(errs, fmt.Errorf("etcd: Retry %+v: want 0 or more", c.Retry))
	}
	if c.Password != "" && c.Username == "" {
		errs = append(errs, errors.New("etcd: password set without a username"))
	}
	return errors.Join(errs...)
}

func validateNamespace(ns string) error {
	if ns == "" {
		return nil
	}
	if len(ns) > 255 {
		return fmt.Errorf("etcd: namespace is %d bytes long, the limit is 255", len(ns))
	}
	if strings.HasSuffix(ns, "/") {
		return fmt.Errorf("etcd: namespace %q ends with / (keys already start with /; use %q)", ns, strings.TrimRight(ns, "/"))
	}
	for i, seg := range strings.Split(ns, "/") {
		if i == 0 && seg == "" {
			continue // a leading "/" is allowed
		}
		switch {
		case seg == "":
			return fmt.Errorf("etcd: namespace %q has an empty segment (//)", ns)
		case seg == "." || seg == "..":
			return fmt.Errorf("etcd: namespace %q has a %q segment", ns, seg)
		}
		for _, c := range seg {
			if c < 0x20 || c == 0x7f {
				return fmt.Errorf("etcd: namespace %q contains control character %U", ns, c)
			}
		}
	}
	return nil
}

// Repo is a registry.Repository on etcd. It is safe for concurrent use.
type Repo struct {
	client         *clientv3.Client
	ns             string
	endpoints      []string
	requestTimeout time.Duration
	maxRequest     int   // Config.MaxRequestBytes
	childrenPage   int64 // keys per Children read; tests make it small

	ctx    context.Context // cancelled by Close; every goroutine ends with it
	cancel context.CancelFunc
	wg     sync.WaitGroup // watch goroutines

	streamGen atomic.Int64 // watch stream generation; see streamContext

	mu       sync.Mutex
	closed   bool
	watcher  clientv3.Watcher // nil until the first Watch, or after CloseWatches
	sessions map[*session]struct{}
	history  *history // ReplayChanges' watch of the namespace; nil until its first call
}

var _ registry.Repository = (*Repo)(nil)

// Open connects to etcd and checks that it answers, within DialTimeout (or
// ctx, if it ends first). An unreachable registry is an error wrapping
// registry.ErrUnavailable that names the endpoints. The returned Repo owns
// the client; Close it.
func Open(ctx context.Context, c Config) (*Repo, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	lg := c.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	endpoints := make([]string, len(c.Endpoints))
	for i, e := range c.Endpoints {
		endpoints[i] = strings.TrimSpace(e)
	}
	cc := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: c.DialTimeout,
		TLS:         c.TLS,
		Logger:      lg,
		// Keep the connection checked while idle, so a dead member is
		// noticed before the next request.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: c.DialTimeout,
		// A write within MaxRequestBytes must not meet the client's own
		// limit (2 MiB by default) first.
		MaxCallSendMsgSize: max(2<<20, c.MaxRequestBytes+64<<10),
	}
	var auth *tokenAuth
	if c.Username != "" {
		auth = &tokenAuth{user: c.Username, password: c.Password}
		cc.DialOptions = auth.dialOptions()
	}
	openCtx, giveUp := context.WithCancelCause(ctx)
	defer giveUp(nil)
	var dials *dialCounter
	if c.Retry.Interval > 0 || c.Dialer != nil {
		dial := c.Dialer
		if dial == nil {
			var d net.Dialer
			dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
		}
		dials = &dialCounter{dial: dial, max: c.Retry.MaxRetries, giveUp: giveUp}
		if c.Retry.Interval == 0 {
			dials.max = int(^uint(0) >> 1) // no limit but DialTimeout
		}
		cc.DialOptions = append(cc.DialOptions, c.Retry.dialOptions(dials)...)
	}
	client, err := clientv3.New(cc)
	if err == nil && auth != nil {
		auth.setClient(client)
	}
	if err != nil {
		if isAuthError(err) {
			return nil, credentialsError(endpoints, c, err)
		}
		return nil, fmt.Errorf("etcd at %v: %w: %w (check the endpoints and TLS settings)", endpoints, registry.ErrUnavailable, err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	r := &Repo{
		client:         client,
		ns:             c.Namespace,
		endpoints:      endpoints,
		requestTimeout: c.RequestTimeout,
		maxRequest:     c.MaxRequestBytes,
		childrenPage:   childrenPage,
		ctx:            rctx,
		cancel:         cancel,
		sessions:       map[*session]struct{}{},
	}
	// The client dials lazily: prove that a member answers (and that the
	// credentials work) with one read of the namespace root.
	cctx, ccancel := context.WithTimeout(openCtx, c.DialTimeout)
	_, err = client.Get(cctx, r.full("/"), clientv3.WithKeysOnly())
	ccancel()
	if err != nil {
		_ = r.Close()
		if ctx.Err() != nil {
			return nil, &registry.OpError{Op: "open", Err: ctx.Err()}
		}
		if cause := context.Cause(openCtx); cause != nil && cause != context.Canceled {
			return nil, fmt.Errorf("etcd at %v: %w: %w (check that etcd runs there, the endpoints' scheme://host:port, TLS and firewalls)",
				endpoints, registry.ErrUnavailable, cause)
		}
		if isAuthError(err) {
			return nil, credentialsError(endpoints, c, err)
		}
		return nil, fmt.Errorf("etcd at %v did not answer within %v: %w (check that etcd runs there, the endpoints' scheme://host:port, TLS and firewalls): %v",
			endpoints, c.DialTimeout, registry.ErrUnavailable, err)
	}
	if dials != nil {
		dials.open()
	}
	return r, nil
}

func credentialsError(endpoints []string, c Config, err error) error {
	if c.Username == "" {
		return fmt.Errorf("etcd at %v requires a username and password: %w (for the embedded registry of shardkeeper serve, they are in DATADIR/credentials.json: pass --data-dir DATADIR)",
			endpoints, err)
	}
	return fmt.Errorf("etcd at %v rejected user %q: %w (check the username and password, and that the user's role may read and write namespace %q)",
		endpoints, c.Username, err, c.Namespace)
}

// Client returns the underlying etcd client, for tools that need more than
// the registry contract. Keys read or written through it carry the
// namespace prefix. It is closed by Close.
func (r *Repo) Client() *clientv3.Client { return r.client }

// Namespace returns the raw key prefix of this Repo.
func (r *Repo) Namespace() string { return r.ns }

// Endpoints returns the configured endpoints.
func (r *Repo) Endpoints() []string { return append([]string(nil), r.endpoints...) }

// Close implements registry.Repository. It ends every watch (their channels
// close after a final event wrapping registry.ErrClosed when the consumer
// has room for it), ends every session still open (its Err wraps
// registry.ErrClosed) and stops its keep-alive without revoking its lease
// (its ephemerals expire with the TTL; close sessions first for a prompt
// removal), and closes the client. Calling it again returns nil.
func (r *Repo) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	w := r.watcher
	r.watcher = nil
	sessions := r.sessions
	r.sessions = nil
	r.mu.Unlock()

	// The sessions end before r.ctx is cancelled: their keep-alives run
	// under r.ctx, and a keep-alive that stops first would make monitor
	// report the caller's Close as an expiry.
	for s := range sessions {
		s.orphan(registry.ErrClosed)
	}
	r.cancel()
	if w != nil {
		_ = w.Close()
	}
	r.wg.Wait()
	return r.client.Close()
}

func (r *Repo) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// full returns the etcd key of a registry key.
func (r *Repo) full(key string) string { return r.ns + key }

// strip returns the registry key of an etcd key read under the namespace.
func (r *Repo) strip(k []byte) string { return strings.TrimPrefix(string(k), r.ns) }

// below returns the etcd range [base, end) of the keys below key: base
// is key's etcd key and "/" (the namespace's root for "/"), end the end of
// the keys that base prefixes.
func (r *Repo) below(key string) (base, end string) {
	base = r.full(key) + "/"
	if key == "/" {
		base = r.full("/")
	}
	return base, clientv3.GetPrefixRangeEnd(base)
}

// rangeOf returns the etcd range [start, end) that holds key and every key
// below it, plus keys that merely share the name prefix (such as "key-x"),
// which callers drop with registry.IsUnder.
func (r *Repo) rangeOf(key string) (start, end string) {
	if key == "/" {
		p := r.full("/")
		return p, clientv3.GetPrefixRangeEnd(p)
	}
	return r.full(key), clientv3.GetPrefixRangeEnd(r.full(key) + "/")
}

// checkSize refuses a write of keys keys (each also carries the
// namespace) and size bytes (registry.Txn.Size) beyond the request limit.
func (r *Repo) checkSize(op, key string, keys, size int) error {
	return registry.CheckSize(op, key, size+keys*len(r.ns), r.maxRequest, "etcd's request limit (--max-request-bytes; the repository prop maxRequestBytes)")
}

// begin checks key and the Repo's state and bounds ctx by RequestTimeout.
func (r *Repo) begin(ctx context.Context, op, key string) (context.Context, context.CancelFunc, error) {
	if err := registry.ValidateKey(key); err != nil {
		return nil, nil, &registry.OpError{Op: op, Key: key, Err: err}
	}
	if r.isClosed() {
		return nil, nil, &registry.OpError{Op: op, Key: key, Err: registry.ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, &registry.OpError{Op: op, Key: key, Err: err}
	}
	c, cancel := context.WithTimeout(ctx, r.requestTimeout)
	return c, cancel, nil
}
