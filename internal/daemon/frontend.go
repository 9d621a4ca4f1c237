package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/httpapi"
	"github.com/shardkeeper/shardkeeper/internal/keyserver"
)

// frontend is one port the daemon serves: HTTP, the Redis protocol, UDP
// datagrams, the DistSQL consoles. A front end for another wire protocol
// plugs in the same way: a Config field, a bind in Start, a serve method
// taking what it serves (called by Daemon.serve), and these two methods.
//
// Start binds every front end before it touches the registry (a busy port
// fails the start before any registry write) and calls serve once the node
// holds a worker id and the metadata is loaded; serve answers on
// goroutines of its own. Close calls drain on every front end, then closes
// the node, then calls stop on every front end.
type frontend interface {
	// drain stops taking new key requests. A front end that only issues
	// keys stops answering, closes its port and waits for its goroutines
	// (bounded by ctx); one that also reports the node's state (HTTP)
	// keeps its port and answers that the node is shutting down. A key
	// request still in flight fails once the node closes: the node issues
	// no key after Close has revoked its worker id.
	drain(ctx context.Context)
	// stop closes the port and waits for requests in flight, bounded by
	// ctx. It closes the bound port of a front end that never served.
	// Idempotent.
	stop(ctx context.Context)
}

// HTTPConfig configures the daemon's HTTP server (see internal/httpapi).
type HTTPConfig struct {
	// Addr is the listen address, e.g. 127.0.0.1:8080.
	Addr string
	// FallbackAddr, when set, is tried (with a warning) when Addr is in
	// use; serve sets it for its default address only.
	FallbackAddr string
	// Token is the bearer token mutations need; empty refuses them.
	Token string
	// OpenReads lets GETs through without the token.
	OpenReads bool
	// AllowedHosts are the host names the API answers to besides
	// localhost and IP addresses (see httpapi.Config.AllowedHosts); the
	// host of Addr, when it is a name, is added.
	AllowedHosts []string
	// TLS, when set, serves HTTPS.
	TLS *tls.Config
	// MaxConnections caps the connections held at once; 0 means
	// httpapi.DefaultMaxConnections (see httpapi.Config.MaxConnections).
	MaxConnections int
}

// RESPConfig configures the Redis-protocol key service (see
// internal/keyserver).
type RESPConfig struct {
	// Addr is the listen address, e.g. 127.0.0.1:6380.
	Addr string
	// MaxClients caps the connections served at once; 0 means
	// keyserver.DefaultMaxClients.
	MaxClients int
}

// UDPConfig configures the datagram key service (see internal/keyserver).
type UDPConfig struct {
	// Addr is the listen address, e.g. 127.0.0.1:6381.
	Addr string
}

// httpFrontend serves the HTTP API, status page, metrics and probes.
type httpFrontend struct {
	c    *HTTPConfig
	ln   net.Listener
	log  *slog.Logger
	srv  *httpapi.Server
	done chan struct{} // closed when Serve returned; nil before serve
}

// bindHTTP checks c and binds its address, or the fallback when the
// address is in use and a fallback is configured.
func bindHTTP(c *HTTPConfig, log *slog.Logger) (*httpFrontend, error) {
	if err := httpapi.CheckAllowedHosts(c.AllowedHosts); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil && c.FallbackAddr != "" && errors.Is(err, syscall.EADDRINUSE) {
		log.Warn("http address in use; using another port", "addr", c.Addr, "fallback", c.FallbackAddr)
		ln, err = net.Listen("tcp", c.FallbackAddr)
	}
	if err != nil {
		return nil, fmt.Errorf("http: listen on %s: %w", c.Addr, err)
	}
	return &httpFrontend{c: c, ln: ln}, nil
}

// serve makes the HTTP server of c and serves it on the bound port.
func (h *httpFrontend) serve(c httpapi.Config) (*httpapi.Server, error) {
	srv, err := httpapi.New(c)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	h.srv, h.log, h.done = srv, c.Logger, done
	go func() {
		defer close(done)
		if err := srv.Serve(h.ln); err != nil {
			h.log.Error("http server stopped", "err", err)
		}
	}()
	h.log.Info("http api listening", "addr", h.ln.Addr().String(), "tls", h.c.TLS != nil, "open_reads", h.c.OpenReads, "token", h.c.Token != "")
	return srv, nil
}

// drain makes /readyz answer 503 and key requests fail with 503 while the
// port stays open, so that probes and the status page see the shutdown
// instead of a refused connection.
func (h *httpFrontend) drain(context.Context) {
	if h.srv != nil {
		h.srv.Drain()
	}
}

// stop shuts the server down: no new connections, requests in flight
// finish within ctx or 5 seconds, event streams are cut.
func (h *httpFrontend) stop(ctx context.Context) {
	if h.srv == nil {
		_ = h.ln.Close()
		return
	}
	if h.done == nil {
		return
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(hctx); err != nil {
		h.log.Warn("http server did not drain", "err", err)
	}
	<-h.done
	h.done = nil
}

// allowedHosts is c.AllowedHosts plus the host of c.Addr when it is a
// name (such as node1.example.com:8080).
func allowedHosts(c *HTTPConfig) []string {
	hosts := slices.Clone(c.AllowedHosts)
	if host, _, err := net.SplitHostPort(c.Addr); err == nil && host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			hosts = append(hosts, host)
		}
	}
	return hosts
}

// keyFrontend serves keys on a bound port with a keyserver loop: the
// Redis protocol on a TCP listener or datagrams on a UDP socket.
type keyFrontend struct {
	addr    string                                                // bound address (host:port)
	name    string                                                // for logs: "resp" or "udp"
	run     func(ctx context.Context, src keyserver.Source) error // serves until ctx ends; closes the port
	close   func() error                                          // closes the port when run never ran
	metrics *keyserver.Metrics                                    // what the port served (keyPortCollector)
	cancel  context.CancelFunc
	done    chan struct{} // closed when run returned; nil before serve
}

// bindRESP checks c and binds its TCP address.
func bindRESP(c *RESPConfig) (*keyFrontend, error) {
	if c.MaxClients < 0 {
		return nil, fmt.Errorf("resp: MaxClients %d: want 0 (the default, %d) or more", c.MaxClients, keyserver.DefaultMaxClients)
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return nil, fmt.Errorf("resp: listen on %s: %w", c.Addr, err)
	}
	cfg := keyserver.Config{MaxClients: c.MaxClients, Metrics: &keyserver.Metrics{}}
	return &keyFrontend{
		addr:    ln.Addr().String(),
		name:    "resp",
		run:     func(ctx context.Context, src keyserver.Source) error { return keyserver.ServeConfig(ctx, ln, src, cfg) },
		close:   ln.Close,
		metrics: cfg.Metrics,
	}, nil
}

// bindUDP binds c's UDP address.
func bindUDP(c *UDPConfig) (*keyFrontend, error) {
	pc, err := net.ListenPacket("udp", c.Addr)
	if err != nil {
		return nil, fmt.Errorf("udp: listen on %s: %w", c.Addr, err)
	}
	cfg := keyserver.Config{Metrics: &keyserver.Metrics{}}
	return &keyFrontend{
		addr: pc.LocalAddr().String(),
		name: "udp",
		run: func(ctx context.Context, src keyserver.Source) error {
			return keyserver.ServeUDPConfig(ctx, pc, src, cfg)
		},
		close:   pc.Close,
		metrics: cfg.Metrics,
	}, nil
}

// serve answers key requests on the bound port with keys from src.
func (k *keyFrontend) serve(src keyserver.Source, log *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	k.cancel, k.done = cancel, done
	go func() {
		defer close(done)
		if err := k.run(ctx, src); err != nil {
			log.Error(k.name+" key service stopped", "err", err)
		}
	}()
}

// drain stops the key service: the port closes, no request is answered
// after it returns (ctx bounds the wait for the serving goroutines).
func (k *keyFrontend) drain(ctx context.Context) {
	k.stop(ctx)
}

func (k *keyFrontend) stop(ctx context.Context) {
	if k.done == nil {
		if k.close != nil {
			_ = k.close()
			k.close = nil
		}
		return
	}
	k.cancel()
	select {
	case <-k.done:
		k.done, k.close = nil, nil
	case <-ctx.Done():
	}
}
