// Package connect opens the registry a configuration names. It is the one
// place that knows every backend: an explicit switch, no plug-in loader.
package connect

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/embedded"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
)

// Open connects to the registry c describes and returns a ready
// repository. ctx bounds the connection attempt, together with
// c.ConnectTimeout. For Embedded it starts the in-process etcd server on
// c.DataDir first; closing the repository stops it.
func Open(ctx context.Context, c config.Repository) (registry.Repository, error) {
	switch c.Type {
	case config.RepositoryEtcd:
		tlsConfig, err := loadTLS(c)
		if err != nil {
			return nil, err
		}
		return etcd.Open(ctx, etcd.Config{
			Endpoints:   c.ServerLists,
			Namespace:   c.Namespace,
			Username:    c.Username,
			Password:    c.Password,
			TLS:         tlsConfig,
			DialTimeout: c.ConnectTimeout,
		})
	case config.RepositoryZooKeeper:
		return zookeeper.Open(ctx, zookeeper.Config{
			Servers:        c.ServerLists,
			Namespace:      c.Namespace,
			SessionTimeout: c.TimeToLive,
			ConnectTimeout: c.ConnectTimeout,
			Digest:         c.Digest,
		})
	case config.RepositoryEmbedded:
		dir, err := filepath.Abs(c.DataDir)
		if err != nil {
			return nil, err
		}
		return embedded.Open(ctx, embedded.Config{
			Dir:       dir,
			ClientURL: c.ClientURL,
			PeerURL:   c.PeerURL,
			Namespace: c.Namespace,
		})
	default:
		return nil, fmt.Errorf("unknown repository type %q (want etcd, ZooKeeper or Embedded)", c.Type)
	}
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
		return fmt.Sprintf("embedded etcd listening on %s, data in %s, namespace %q", strings.Join(listen, ","), dir, c.Namespace)
	default:
		return redact.Text(fmt.Sprintf("%s at %v, namespace %q", c.Type, c.ServerLists, c.Namespace))
	}
}

func loadTLS(c config.Repository) (*tls.Config, error) {
	if c.CAFile == "" && c.CertFile == "" {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("caFile: %w", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("caFile %s: no PEM certificate in it", c.CAFile)
		}
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("certFile/keyFile: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}
