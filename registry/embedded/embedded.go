// Package embedded runs an etcd server inside the process
// (go.etcd.io/etcd/server/v3/embed) and reaches it through the etcd
// registry backend, so shardkeeper works with nothing installed and keeps
// its registry on disk. It is plain etcd: other etcd clients, etcdctl, and
// other shardkeeper nodes (as the etcd repository type) can use it on its
// client URL, with the credentials in its data directory.
//
// What is kept on disk, under Config.Dir: the etcd member directory
// ("member/wal" holds the write-ahead log, "member/snap" the snapshots and
// the bbolt database "db"). Everything written through the registry,
// persistent keys and the leases of ephemeral keys, survives a restart on
// the same directory; ephemerals whose lease ran out while the server was
// down are removed after it starts again (etcd restarts lease timers on
// start). History older than an hour is compacted, so a watch that falls
// more than an hour behind ends with registry.ErrWatchLost.
//
// One process at a time may use a directory: Start takes an advisory lock
// on it and reports a clear error when another process holds it.
//
// The server is protected by etcd's own authentication: every client,
// etcdctl included, needs the root user's password, which Start generates
// into the credentials file in the data directory (mode 0600, in a 0700
// directory; see CredentialsFile and LoadCredentials). Authentication is on
// before the client port opens. No peer port is opened unless Config.PeerURL
// asks for one.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/auth"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/crypto/bcrypt"

	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
)

// Defaults used when Config leaves a field empty; the client URL is etcd's
// own default, so etcdctl works without --endpoints.
const (
	DefaultClientURL = "http://127.0.0.1:2379"
	DefaultName      = "shardkeeper"
)

// advertisedPeerURL is the peer URL the member advertises when it listens
// for no peers. A single member never dials it.
const advertisedPeerURL = "http://127.0.0.1:2380"

// authCheckInterval is how often a running server checks that etcd
// authentication is still on.
const authCheckInterval = time.Second

// Config configures the embedded server and, for Open, the repository on it.
type Config struct {
	// Dir is the data directory. It is created (mode 0700) if missing, its
	// mode is set to 0700, and it is reused on the next start. It holds the
	// credentials file (see CredentialsFile). Required.
	Dir string
	// ClientURL is where the server listens for clients, such as
	// "http://127.0.0.1:2379" (the default). Port 0 picks a free port; see
	// Server.Endpoints. Clients need the credentials in Dir. Listen on a
	// non-loopback address to let other nodes in.
	ClientURL string
	// PeerURL, when set, is where the server listens for etcd peers, such
	// as "http://127.0.0.1:2380" (port 0 picks a free port). Empty, the
	// default, opens no peer port: etcd's peer protocol has no
	// authentication, so anyone who reaches that port can act as a member.
	// The server is meant to be a single member: Start runs it alone first
	// (see Start), which a member of a larger cluster cannot do.
	PeerURL string
	// Name is the etcd member name (default "shardkeeper").
	Name string
	// Namespace is the registry namespace Open uses (see etcd.Config).
	Namespace string
	// AuthTokenTTL is how long an etcd auth token lives without use (etcd's
	// --auth-token-ttl, whole seconds). Zero means etcd's default, 5
	// minutes. Clients renew expired tokens by themselves.
	AuthTokenTTL time.Duration
	// MaxRequestBytes is the server's request limit (etcd's
	// --max-request-bytes), which Open's repository also checks every
	// write against before sending it (registry.ErrTooLarge). Zero means
	// etcd.DefaultMaxRequestBytes, etcd's default.
	MaxRequestBytes int
	// Logger receives the server's logs. Nil means errors only, as JSON to
	// stderr. Either way the errors etcd logs about its own listeners while
	// it stops are dropped.
	Logger *zap.Logger
}

// Server is a running embedded etcd server.
type Server struct {
	etcd        *embed.Etcd
	endpoints   []string
	credentials Credentials
	unlock      func()
	closing     *atomic.Bool
	stop        context.CancelFunc
	watchdog    sync.WaitGroup
	closeOnce   sync.Once
}

// Start starts the server and returns once it serves clients, or with an
// error when ctx ends first, the client or peer port is taken, or the data
// directory is in use by another process. Close the Server to stop it.
//
// The server is protected by etcd authentication before any client port
// opens: Start first runs it with no listener at all, makes sure the root
// user has the password in Dir's credentials file (writing new credentials,
// a random 256-bit password, when the file is missing, unreadable, owned by
// another user or readable by others) and that authentication is on, and
// only then starts it again with its listeners. A data directory written
// without authentication is converted this way, and authentication
// switched off by a client is switched back on, at start and within a
// second while the server runs. A data directory owned by another user is
// refused.
func Start(ctx context.Context, c Config) (*Server, error) {
	if _, _, err := c.etcdConfig(false); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded etcd: data dir: %w", err)
	}
	if fi, err := os.Stat(c.Dir); err != nil {
		return nil, fmt.Errorf("embedded etcd: data dir: %w", err)
	} else if uid, other := ownedByOther(fi); other {
		return nil, fmt.Errorf("embedded etcd: data dir %s belongs to uid %d, not to the user this process runs as (uid %d): its owner could read the registry's credentials; use a directory of your own",
			c.Dir, uid, os.Getuid())
	}
	if err := os.Chmod(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded etcd: data dir: %w", err)
	}
	unlock, err := lockDir(c.Dir)
	if err != nil {
		return nil, err
	}
	creds, err := serverCredentials(c.Dir)
	if err != nil {
		unlock()
		return nil, err
	}
	if err := c.protect(ctx, creds, unlock); err != nil {
		return nil, err
	}
	cfg, closing, err := c.etcdConfig(true)
	if err != nil {
		unlock()
		return nil, err
	}
	e, err := launch(ctx, c, cfg, closing, unlock)
	if err != nil {
		return nil, err
	}
	wctx, stop := context.WithCancel(context.Background())
	s := &Server{etcd: e, credentials: creds, unlock: unlock, closing: closing, stop: stop}
	for _, l := range e.Clients {
		s.endpoints = append(s.endpoints, "http://"+l.Addr().String())
	}
	if err := writeFileAtomic(c.Dir, ClientURLsFile, []byte(strings.Join(s.endpoints, "\n")+"\n")); err != nil {
		stop()
		closing.Store(true)
		e.Close()
		unlock()
		return nil, err
	}
	s.watchdog.Add(1)
	go s.keepAuthOn(wctx)
	return s, nil
}

// protect runs the server on c.Dir with no listener and makes etcd
// authentication protect it with creds. On error the server is stopped and
// unlock called.
func (c Config) protect(ctx context.Context, creds Credentials, unlock func()) error {
	cfg, closing, err := c.etcdConfig(false)
	if err != nil {
		unlock()
		return err
	}
	e, err := launch(ctx, c, cfg, closing, unlock)
	if err != nil {
		return err
	}
	err = enableAuth(ctx, e.Server, creds)
	closing.Store(true)
	e.Close()
	if err != nil {
		unlock()
		return fmt.Errorf("embedded etcd in %s: enabling authentication: %w", c.Dir, err)
	}
	return nil
}

// enableAuth makes creds the password of the root user, with the root
// role, and turns authentication on, through s's own raft log (no client,
// no listener). When authentication is already on with another root
// password, it is switched off in the store first: only the owner of the
// data directory gets here.
func enableAuth(ctx context.Context, s *etcdserver.EtcdServer, creds Credentials) error {
	as := s.AuthStore()
	if as.IsAuthEnabled() {
		if _, err := as.CheckPassword(creds.Username, creds.Password); err == nil {
			return nil
		}
		as.AuthDisable()
	}
	if _, err := s.UserAdd(ctx, &pb.AuthUserAddRequest{Name: creds.Username, Password: creds.Password}); err != nil {
		if !errors.Is(err, auth.ErrUserAlreadyExist) {
			return fmt.Errorf("add user %s: %w", creds.Username, err)
		}
		if _, err := s.UserChangePassword(ctx, &pb.AuthUserChangePasswordRequest{Name: creds.Username, Password: creds.Password}); err != nil {
			return fmt.Errorf("set the password of %s: %w", creds.Username, err)
		}
	}
	if _, err := s.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: "root"}); err != nil && !errors.Is(err, auth.ErrRoleAlreadyExist) {
		return fmt.Errorf("add role root: %w", err)
	}
	if _, err := s.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: creds.Username, Role: "root"}); err != nil {
		return fmt.Errorf("grant role root to %s: %w", creds.Username, err)
	}
	if _, err := s.AuthEnable(ctx, &pb.AuthEnableRequest{}); err != nil {
		return fmt.Errorf("enable: %w", err)
	}
	return nil
}

// keepAuthOn turns etcd authentication back on whenever a client with the
// root password switched it off, until ctx ends.
func (s *Server) keepAuthOn(ctx context.Context) {
	defer s.watchdog.Done()
	t := time.NewTicker(authCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.etcd.Server.AuthStore().IsAuthEnabled() {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := s.etcd.Server.AuthEnable(rctx, &pb.AuthEnableRequest{})
		cancel()
		lg := s.etcd.GetLogger()
		if err != nil {
			lg.Error("etcd authentication was switched off and could not be switched back on", zap.Error(err))
		} else {
			lg.Warn("etcd authentication was switched off by a client; switched it back on")
		}
	}
}

// launch starts etcd with cfg and waits until it is ready. On error the
// server is stopped and release called, possibly later: when ctx ends while
// etcd starts, a goroutine waits for it, stops it, and then calls release.
func launch(ctx context.Context, c Config, cfg *embed.Config, closing *atomic.Bool, release func()) (*embed.Etcd, error) {
	type started struct {
		e   *embed.Etcd
		err error
	}
	ch := make(chan started, 1)
	go func() {
		e, err := embed.StartEtcd(cfg)
		ch <- started{e, err}
	}()
	var e *embed.Etcd
	select {
	case s := <-ch:
		if s.err != nil {
			release()
			return nil, startError(c, s.err)
		}
		e = s.e
	case <-ctx.Done():
		// StartEtcd cannot be interrupted: stop the server once it is up.
		go func() {
			if s := <-ch; s.e != nil {
				closing.Store(true)
				s.e.Close()
			}
			release()
		}()
		return nil, fmt.Errorf("embedded etcd in %s: not started: %w", c.Dir, ctx.Err())
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		closing.Store(true)
		e.Close()
		release()
		return nil, fmt.Errorf("embedded etcd in %s: %w", c.Dir, err)
	case <-ctx.Done():
		closing.Store(true)
		e.Close()
		release()
		return nil, fmt.Errorf("embedded etcd in %s: not ready: %w", c.Dir, ctx.Err())
	}
}

// etcdConfig validates c and returns the etcd configuration: with the
// client and peer listeners when listen is true, with none otherwise.
func (c Config) etcdConfig(listen bool) (*embed.Config, *atomic.Bool, error) {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("embedded etcd: no data directory (Dir)"))
	}
	parse := func(field, s string) url.URL {
		u, err := url.Parse(s)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("embedded etcd: %s %q: %w", field, s, err))
			return url.URL{}
		case u.Scheme != "http":
			errs = append(errs, fmt.Errorf("embedded etcd: %s %q: want http://host:port (TLS is not supported for the embedded server)", field, s))
		case u.Port() == "":
			errs = append(errs, fmt.Errorf("embedded etcd: %s %q has no port", field, s))
		}
		return *u
	}
	client := parse("ClientURL", orDefault(c.ClientURL, DefaultClientURL))
	var peer *url.URL
	if c.PeerURL != "" {
		u := parse("PeerURL", c.PeerURL)
		peer = &u
	}
	if c.AuthTokenTTL < 0 || (c.AuthTokenTTL > 0 && c.AuthTokenTTL < time.Second) {
		errs = append(errs, fmt.Errorf("embedded etcd: AuthTokenTTL %v: want 0 (etcd's default) or at least 1s", c.AuthTokenTTL))
	}
	if err := (etcd.Config{Endpoints: []string{"-"}, Namespace: c.Namespace}).Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	name := orDefault(c.Name, DefaultName)
	advertisedPeer, _ := url.Parse(advertisedPeerURL)
	if peer != nil {
		advertisedPeer = peer
	}
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = c.Dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls, cfg.ListenPeerUrls = nil, nil, nil
	if listen {
		cfg.ListenClientUrls = []url.URL{client}
		cfg.AdvertiseClientUrls = []url.URL{client}
		if peer != nil {
			cfg.ListenPeerUrls = []url.URL{*peer}
		}
	}
	cfg.AdvertisePeerUrls = []url.URL{*advertisedPeer}
	cfg.InitialCluster = name + "=" + advertisedPeer.String()
	cfg.InitialClusterToken = "shardkeeper-" + name
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "1h"
	// etcd's own default (its --warning-unary-request-duration): NewConfig
	// leaves it 0, which logs every request as slow.
	cfg.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	if !listen {
		// Alone, with no listener, the member only has to elect itself:
		// short raft ticks make that take milliseconds instead of up to a
		// second. Ticks are not stored; the served run uses etcd's.
		cfg.TickMs, cfg.ElectionMs = 10, 100
	}
	cfg.AuthToken = "simple"
	if c.MaxRequestBytes > 0 {
		cfg.MaxRequestBytes = uint(c.MaxRequestBytes)
	}
	if c.AuthTokenTTL > 0 {
		cfg.AuthTokenTTL = uint(c.AuthTokenTTL / time.Second)
	}
	// The root password is 256 random bits: key stretching adds nothing to
	// it, and the cheapest bcrypt cost keeps a flood of wrong passwords
	// from burning the node's CPU.
	cfg.BcryptCost = uint(bcrypt.MinCost)
	lg := c.Logger
	if lg == nil {
		zc := zap.NewProductionConfig()
		zc.Level = zap.NewAtomicLevelAt(zap.ErrorLevel)
		zc.Sampling = nil
		var err error
		if lg, err = zc.Build(); err != nil {
			return nil, nil, fmt.Errorf("embedded etcd: logger: %w", err)
		}
	}
	closing := new(atomic.Bool)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg.WithOptions(zap.WrapCore(func(core zapcore.Core) zapcore.Core {
		return &quietCore{Core: core, closing: closing}
	})))
	return cfg, closing, nil
}

// quietCore drops the errors etcd logs about its listeners while it shuts
// down ("setting up serving from embedded etcd failed": "mux: server
// closed", "use of closed network connection"): they are the shutdown
// itself, not a problem.
type quietCore struct {
	zapcore.Core
	closing *atomic.Bool
}

func (q *quietCore) With(fields []zapcore.Field) zapcore.Core {
	return &quietCore{Core: q.Core.With(fields), closing: q.closing}
}

func (q *quietCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if q.closing.Load() && strings.HasPrefix(e.Message, "setting up serving from embedded etcd failed") {
		return ce
	}
	if q.Core.Enabled(e.Level) {
		return ce.AddCore(e, q)
	}
	return ce
}

// startError explains why StartEtcd failed.
func startError(c Config, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use") {
		return fmt.Errorf("embedded etcd: a client or peer port is taken (clientUrl %q, peerUrl %q): stop the other server, or set another clientUrl (or peerUrl) in the mode's repository props: %w",
			orDefault(c.ClientURL, DefaultClientURL), c.PeerURL, err)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return fmt.Errorf("embedded etcd: cannot listen (clientUrl %q, peerUrl %q): %w",
			orDefault(c.ClientURL, DefaultClientURL), c.PeerURL, err)
	}
	return fmt.Errorf("embedded etcd in %s: %w", c.Dir, err)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Endpoints returns the client URLs the server listens on, with the real
// port when the configured one was 0.
func (s *Server) Endpoints() []string { return append([]string(nil), s.endpoints...) }

// Credentials returns the user and password clients reach the server with.
func (s *Server) Credentials() Credentials { return s.credentials }

// Etcd returns the underlying embedded server, for tools that need it.
func (s *Server) Etcd() *embed.Etcd { return s.etcd }

// Close stops the server (clients get errors wrapping
// registry.ErrUnavailable) and releases the data directory. Data stays on
// disk. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		s.watchdog.Wait()
		s.closing.Store(true)
		s.etcd.Close()
		s.unlock()
	})
	return nil
}

// Repo is an etcd repository on an embedded server that it owns.
type Repo struct {
	*etcd.Repo
	server *Server
}

var _ registry.Repository = (*Repo)(nil)

// Open starts the server as Start does and returns a repository on it,
// in c.Namespace. Closing the repository stops the server.
func Open(ctx context.Context, c Config) (*Repo, error) {
	s, err := Start(ctx, c)
	if err != nil {
		return nil, err
	}
	r, err := etcd.Open(ctx, etcd.Config{Endpoints: s.Endpoints(), Namespace: c.Namespace, DialTimeout: 5 * time.Second,
		Username: s.credentials.Username, Password: s.credentials.Password, MaxRequestBytes: c.MaxRequestBytes})
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	return &Repo{Repo: r, server: s}, nil
}

// Server returns the embedded server, for its Endpoints.
func (r *Repo) Server() *Server { return r.server }

// Close implements registry.Repository: it closes the client, then stops
// the server.
func (r *Repo) Close() error {
	err := r.Repo.Close()
	return errors.Join(err, r.server.Close())
}

// ErrDirInUse is wrapped by the error of Start and Open when another process
// runs a server on the data directory.
var ErrDirInUse = errors.New("is in use by another process")

// CheckDir returns an error wrapping ErrDirInUse when another process
// runs a server on dir, nil when none does or dir does not exist yet. It
// takes and releases the lock Start takes, so that a caller can refuse
// early, before it binds ports or writes anything; Start checks again.
func CheckDir(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	unlock()
	return nil
}

// lockDir takes an exclusive advisory lock on dir for the process.
func lockDir(dir string) (unlock func(), err error) {
	abs, _ := filepath.Abs(dir)
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: data dir: %w", err)
	}
	if err := flock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("embedded etcd: data dir %s: %w (another shardkeeper or etcd on the same directory): %v", abs, ErrDirInUse, err)
	}
	return func() { _ = f.Close() }, nil
}
