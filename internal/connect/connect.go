// Package connect opens the registry a configuration names. It is the one
// place that knows every backend: an explicit switch, no plug-in loader.
package connect

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/internal/zapslog"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/embedded"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
)

// Open connects to the registry c describes and returns a ready
// repository. ctx bounds the connection attempt, together with
// c.ConnectTimeout; for etcd and ZooKeeper, c.RetryInterval, c.MaxRetries
// and c.OperationTimeout pace and limit the connection attempts
// (etcd.Retry, zookeeper.Backoff). For Embedded it starts the in-process etcd server on
// c.DataDir first, its logs going to log (see zapslog; nil means
// slog.Default()); closing the repository stops it. For etcd without a
// username but with c.DataDir, it uses the credentials of the embedded
// registry kept in that directory (see embedded.LoadCredentials).
func Open(ctx context.Context, c config.Repository, log *slog.Logger) (registry.Repository, error) {
	return OpenCounting(ctx, c, log, nil)
}

// OpenCounting is Open that, for Embedded, logs the embedded etcd's
// slow-request messages at debug and counts them in slow (see
// zapslog.CountingLogger); nil slow is Open.
func OpenCounting(ctx context.Context, c config.Repository, log *slog.Logger, slow *zapslog.Slow) (registry.Repository, error) {
	switch c.Type {
	case config.RepositoryEtcd:
		tlsConfig, err := loadTLS(ctx, c)
		if err != nil {
			return nil, err
		}
		user, password := c.Username, c.Password
		if user == "" && c.DataDir != "" {
			creds, err := embedded.LoadCredentials(c.DataDir)
			if err != nil {
				return nil, fmt.Errorf("etcd: the data dir %s should hold the embedded registry's credentials: %w", c.DataDir, err)
			}
			user, password = creds.Username, creds.Password
		}
		return etcd.Open(ctx, etcd.Config{
			Endpoints:       c.ServerLists,
			Namespace:       c.Namespace,
			Username:        user,
			Password:        password,
			TLS:             tlsConfig,
			DialTimeout:     c.ConnectTimeout,
			Retry:           etcd.Retry{Interval: c.RetryInterval, MaxRetries: c.MaxRetries, AttemptTimeout: c.OperationTimeout},
			MaxRequestBytes: c.MaxRequestBytes,
		})
	case config.RepositoryZooKeeper:
		return zookeeper.Open(ctx, zookeeper.Config{
			Servers:         c.ServerLists,
			Namespace:       c.Namespace,
			SessionTimeout:  c.TimeToLive,
			ConnectTimeout:  c.ConnectTimeout,
			Digest:          c.Digest,
			Retry:           zookeeper.Backoff{Interval: c.RetryInterval, MaxRetries: c.MaxRetries},
			AttemptTimeout:  c.OperationTimeout,
			MaxRequestBytes: c.MaxRequestBytes,
		})
	case config.RepositoryEmbedded:
		if log == nil {
			log = slog.Default()
		}
		dir, err := filepath.Abs(c.DataDir)
		if err != nil {
			return nil, err
		}
		return embedded.Open(ctx, embedded.Config{
			Dir:       dir,
			ClientURL: c.ClientURL,
			PeerURL:   c.PeerURL,
			Namespace: c.Namespace,
			// The server's limit and the client's check of it.
			MaxRequestBytes: c.MaxRequestBytes,
			Logger:          embeddedLogger(log, slow),
		})
	default:
		return nil, fmt.Errorf("unknown repository type %q (want etcd, ZooKeeper or Embedded)", c.Type)
	}
}

// OpenAdmin is Open for admin tools. When c is Embedded and another
// process (a running node) holds c.DataDir, it reaches that process's
// embedded etcd as a client instead: at the client URLs the node listed in
// c.DataDir (else c.ClientURL), with the credentials in c.DataDir.
func OpenAdmin(ctx context.Context, c config.Repository, log *slog.Logger) (registry.Repository, error) {
	r, err := Open(ctx, c, log)
	if err == nil || c.Type != config.RepositoryEmbedded || !errors.Is(err, embedded.ErrDirInUse) {
		return r, err
	}
	urls, uerr := embedded.RunningClientURLs(c.DataDir)
	if uerr != nil {
		urls = []string{c.ClientURL}
		if c.ClientURL == "" {
			urls = []string{embedded.DefaultClientURL}
		}
	}
	ec := c
	ec.Type = config.RepositoryEtcd
	ec.ServerLists = urls
	ec.Username, ec.Password = "", ""
	r, cerr := Open(ctx, ec, log)
	if cerr != nil {
		return nil, fmt.Errorf("%w\nreaching the embedded etcd of the node on it at %v: %w", err, urls, cerr)
	}
	return r, nil
}

// Describe says in one line which registry c names, for logs; given the
// repository Open returned, it names the embedded server's real endpoints.
func Describe(c config.Repository, r registry.Repository) string {
	switch c.Type {
	case config.RepositoryEmbedded:
		dir, _ := filepath.Abs(c.DataDir)
		listen := []string{c.ClientURL}
		if e, ok := r.(*embedded.Repo); ok {
			listen = e.Server().Endpoints()
		}
		return fmt.Sprintf("embedded etcd listening on %s, data in %s, namespace %q, clients need the credentials in %s",
			strings.Join(listen, ","), dir, c.Namespace, embedded.CredentialsPath(dir))
	default:
		return redact.Text(fmt.Sprintf("%s at %v, namespace %q", c.Type, c.ServerLists, c.Namespace))
	}
}

// loadTLS reads the etcd TLS files c names, each as config.ReadFile does
// (a regular file of at most config.MaxFileSize bytes); ctx bounds the
// reads. It returns nil when c names none.
func loadTLS(ctx context.Context, c config.Repository) (*tls.Config, error) {
	if c.CAFile == "" && c.CertFile == "" {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := config.ReadFile(ctx, c.CAFile, config.MaxFileSize)
		if err != nil {
			return nil, fmt.Errorf("caFile: %w", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("caFile %s: no PEM certificate in it", c.CAFile)
		}
	}
	if c.CertFile != "" {
		certPEM, err := config.ReadFile(ctx, c.CertFile, config.MaxFileSize)
		if err != nil {
			return nil, fmt.Errorf("certFile: %w", err)
		}
		keyPEM, err := config.ReadFile(ctx, c.KeyFile, config.MaxFileSize)
		if err != nil {
			return nil, fmt.Errorf("keyFile: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("certFile/keyFile: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

func embeddedLogger(log *slog.Logger, slow *zapslog.Slow) *zap.Logger {
	if slow == nil {
		return zapslog.Logger(log)
	}
	return zapslog.CountingLogger(log, slow)
}
