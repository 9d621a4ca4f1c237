package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"syscall"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/connserver"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/process"
)

// consoleServer is a DistSQL console server of one wire protocol
// (mysqlfront.Server, pgfront.Server).
type consoleServer interface {
	Serve(ln net.Listener) error
	Close(ctx context.Context) error
}

// consoleFrontend serves the DistSQL console over one wire protocol.
type consoleFrontend struct {
	name    string // the protocol in logs and errors: mysql, postgresql
	version string // the server version clients see
	tls     bool
	ln      net.Listener
	// open makes the server once the node serves.
	open func(consoleDeps) (consoleServer, error)
	log  *slog.Logger
	srv  consoleServer
	done chan struct{} // closed when Serve returned; nil before serve
}

// bindConsole binds addr, or fallback (with a warning) when addr is in
// use and fallback is set.
func bindConsole(name, addr, fallback string, log *slog.Logger) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil && fallback != "" && errors.Is(err, syscall.EADDRINUSE) {
		log.Warn(name+" address in use; using another port", "addr", addr, "fallback", fallback)
		ln, err = net.Listen("tcp", fallback)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s: %w", name, addr, err)
	}
	return ln, nil
}

// port is the bound port.
func (f *consoleFrontend) port() int { return f.ln.Addr().(*net.TCPAddr).Port }

// consoleDeps are what a console serves: the engine that runs its
// statements, the users it lets in, the table its sessions register in.
type consoleDeps struct {
	executor  console.Executor
	users     func() (*authority.Users, error)
	processes *process.Table
	budget    *connserver.Budget // the statements of both consoles together
	metrics   *console.Metrics   // both consoles' sessions, logins and refusals (statements: executor)
	log       *slog.Logger
}

// serve makes the console server with deps and serves it on the bound
// port.
func (f *consoleFrontend) serve(deps consoleDeps) error {
	srv, err := f.open(deps)
	if err != nil {
		return err
	}
	log := deps.log
	done := make(chan struct{})
	f.srv, f.log, f.done = srv, log, done
	go func() {
		defer close(done)
		if err := srv.Serve(f.ln); err != nil && !errors.Is(err, connserver.ErrServerClosed) {
			log.Error(f.name+" console stopped", "err", err)
		}
	}()
	addr := f.ln.Addr().String()
	users, err := deps.users()
	switch {
	case err != nil:
		log.Error(f.name+" console: the authority rule's users cannot be read: every login is refused until it is fixed", "err", err)
	case users.Empty():
		// On a loopback address, as by default, only local clients could
		// reach it anyway: said once, not a warning.
		level := slog.LevelWarn
		if ap, err := netip.ParseAddrPort(addr); err == nil && ap.Addr().IsLoopback() {
			level = slog.LevelInfo
		}
		log.Log(context.Background(), level, f.name+" console: no users in the authority rule: only loopback clients are accepted, under any user name, without a password, and every local process is an admin (imports, exports, server files, every session's statements); add users to the authority rule to restrict it", "addr", addr)
	}
	log.Info(f.name+" console listening", "addr", addr, "tls", f.tls, "version", f.version)
	return nil
}

// drain ends the console: the port closes and every session ends, its
// running statement cancelled (ctx bounds the wait for them).
func (f *consoleFrontend) drain(ctx context.Context) {
	f.stop(ctx)
}

func (f *consoleFrontend) stop(ctx context.Context) {
	if f.srv == nil {
		_ = f.ln.Close()
		return
	}
	if f.done == nil {
		return
	}
	if err := f.srv.Close(ctx); err != nil {
		f.log.Warn(f.name+" console did not drain", "err", err)
	}
	select {
	case <-f.done:
		f.done = nil
	case <-ctx.Done():
	}
}
