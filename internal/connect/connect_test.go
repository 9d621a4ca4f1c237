package connect

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
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
			_, err := Open(t.Context(), c.repo)
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
