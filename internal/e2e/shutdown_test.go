package e2e

import (
	"context"
	"errors"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/keyclient"
	"github.com/shardkeeper/shardkeeper/registry"
)

// TestSIGTERMClosesEveryPort runs serve on real etcd with the HTTP API, the
// Redis-protocol port and the UDP port, sends SIGTERM, and checks that the
// process exits cleanly with every port closed (TCP connects refused, UDP
// requests unanswered) and its online node gone from the registry.
func TestSIGTERMClosesEveryPort(t *testing.T) {
	conf := writeConf(t, "etcd", strings.Join(testenv.EtcdEndpoints(t), ","))
	p := startServe(t, conf, "e2e-sigterm", 3399, "--resp", "127.0.0.1:0", "--udp", "127.0.0.1:0")
	// The ports' lines come after the HTTP API answers: wait for the last.
	testenv.Eventually(t, "serve's \"running\" line", func() bool { return strings.Contains(p.stdout.String(), "shardkeeper: running") })
	out := p.stdout.String()
	rm := regexp.MustCompile(`Redis-protocol key service on (127\.0\.0\.1:\d+)`).FindStringSubmatch(out)
	um := regexp.MustCompile(`datagram key service on udp (127\.0\.0\.1:\d+)`).FindStringSubmatch(out)
	if rm == nil || um == nil {
		t.Fatalf("no --resp or --udp address in the serve output:\n%s", out)
	}
	httpAddr := strings.TrimPrefix(p.url, "http://")
	respAddr, udpAddr := rm[1], um[1]

	ctx := testenv.Context(t)
	c, err := config.Load(ctx, conf)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := connect.Open(ctx, c.Mode.Repository, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	online, err := paths.Online(paths.Proxy, p.id)
	if err != nil {
		t.Fatal(err)
	}

	// Running: every port answers and the node is online.
	if _, err := repo.Get(ctx, online); err != nil {
		t.Fatalf("online node %s while running: %v", online, err)
	}
	for _, addr := range []string{httpAddr, respAddr} {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connect to %s while running: %v", addr, err)
		}
		conn.Close()
	}
	respIncr(t, respAddr)
	if _, err := udpKey(udpAddr, 5*time.Second); err != nil {
		t.Fatalf("UDP key from %s while running: %v", udpAddr, err)
	}

	if err := p.stop(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v\nstdout:\n%s\nstderr:\n%s", err, p.stdout.String(), p.stderr.String())
	}
	if !strings.Contains(p.stdout.String(), "shardkeeper: stopped") {
		t.Fatalf("no \"stopped\" line after SIGTERM:\n%s", p.stdout.String())
	}

	// Stopped: TCP connects are refused, UDP requests go unanswered, the
	// online node is gone.
	testenv.TCPRefused(t, httpAddr, respAddr)
	if k, err := udpKey(udpAddr, time.Second); err == nil {
		t.Fatalf("UDP key %d from %s after SIGTERM", k, udpAddr)
	}
	if kv, err := repo.Get(ctx, online); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("online node %s after SIGTERM: %q, %v; want it gone", online, kv.Value, err)
	}
}

// udpKey asks addr for one key over the datagram protocol, waiting at
// most wait for the answer.
func udpKey(addr string, wait time.Duration) (int64, error) {
	c, err := keyclient.DialUDP(addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return c.NextID(ctx)
}

// respIncr sends INCR to the Redis-protocol port at addr and fails the
// test unless a key comes back.
func respIncr(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("INCR k\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := conn.Read(buf)
	if err != nil || n < 2 || buf[0] != ':' {
		t.Fatalf("INCR on %s = %q, %v; want an integer reply", addr, buf[:n], err)
	}
}
