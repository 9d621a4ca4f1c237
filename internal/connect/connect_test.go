package connect

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/registry"
)

// TestOpenRefusesSpecialTLSFiles: etcd TLS files that are a named pipe or
// a device are refused at once with their path, before any connection.
func TestOpenRefusesSpecialTLSFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "ca.pem")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		repo config.Repository
		want string
	}{
		{config.Repository{CAFile: fifo}, "caFile: " + fifo + " is a named pipe (FIFO)"},
		{config.Repository{CertFile: "/dev/zero", KeyFile: "/dev/zero"}, "certFile: /dev/zero is a character device"},
	} {
		c.repo.Type, c.repo.ServerLists, c.repo.Namespace = config.RepositoryEtcd, []string{"http://127.0.0.1:1"}, "ns"
		done := make(chan error, 1)
		go func() {
			_, err := Open(t.Context(), c.repo, nil)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Open = %v, want %q", err, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Open with %+v still running after 10s", c.repo)
		}
	}
}

// TestRetryPropsReachTheClients: the mode props retryIntervalMilliseconds
// and maxRetries reach the etcd and ZooKeeper clients: with nothing
// listening, Open gives up after 1+maxRetries attempts, long before the
// connect timeout, and says so.
func TestRetryPropsReachTheClients(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, c := range []config.Repository{
		{Type: config.RepositoryEtcd, ServerLists: []string{"http://" + addr}, Namespace: "ns"},
		{Type: config.RepositoryZooKeeper, ServerLists: []string{addr}, Namespace: "ns"},
	} {
		c.ConnectTimeout, c.RetryInterval, c.MaxRetries, c.OperationTimeout = time.Minute, 10*time.Millisecond, 2, time.Second
		_, err := Open(t.Context(), c, nil)
		if !errors.Is(err, registry.ErrUnavailable) || !strings.Contains(err.Error(), "gave up after 3 connection attempts") {
			t.Errorf("%s: Open = %v, want it to give up after 1 + maxRetries = 3 attempts", c.Type, err)
		}
	}
}
