package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestServeNotifiesSystemd runs serve on real etcd as systemd runs a
// Type=notify service, with $NOTIFY_SOCKET naming a unix datagram socket
// the test listens on: READY=1 comes once the node serves (its /readyz
// answers 200 when the message arrives) and before nothing else;
// SIGTERM brings STOPPING=1, then a clean exit.
func TestServeNotifiesSystemd(t *testing.T) {
	conf := writeConf(t, "etcd", strings.Join(testenv.EtcdEndpoints(t), ","))
	socket := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	url := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	cmd := exec.Command(testenv.ShardkeeperBinary(t), "serve", "--conf", conf, "--instance-id", "e2e-sdnotify",
		"--http", strings.TrimPrefix(url, "http://"))
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+socket)
	var stdout, stderr testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-done
	}()
	next := func(what string) string {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(testenv.Timeout))
		buf := make([]byte, 4096)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("waiting for %s on NOTIFY_SOCKET: %v\nstdout:\n%s\nstderr:\n%s", what, err, stdout.String(), stderr.String())
		}
		return string(buf[:n])
	}

	ready := next("READY=1")
	resp, err := client.Get(url + "/readyz")
	if err != nil {
		t.Fatalf("/readyz when READY=1 arrived: %v", err)
	}
	resp.Body.Close()
	if lines := strings.Split(ready, "\n"); lines[0] != "READY=1" || resp.StatusCode != http.StatusOK {
		t.Fatalf("first notification %q with /readyz %d; want READY=1 once the node answers 200", ready, resp.StatusCode)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if stopping := next("STOPPING=1"); !strings.HasPrefix(stopping, "STOPPING=1\n") {
		t.Fatalf("notification after SIGTERM %q; want STOPPING=1", stopping)
	}
	select {
	case err := <-done:
		done <- err
		if err != nil || !strings.Contains(stdout.String(), "shardkeeper: stopped") {
			t.Fatalf("exit after SIGTERM: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(testenv.Timeout):
		t.Fatalf("serve did not exit after SIGTERM\nstdout:\n%s", stdout.String())
	}
}
