package netns_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/tools/chaos/chaostest"
	"github.com/shardkeeper/shardkeeper/tools/chaos/netns"
)

// echoServer listens on h:port and echoes lines with "echo " in front; it
// sends every received line to got.
func echoServer(t *testing.T, h *netns.Host, port int) (got chan string) {
	t.Helper()
	l, err := h.Listen("tcp", netip.AddrPortFrom(h.Addr, uint16(port)).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	got = make(chan string, 100)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					got <- sc.Text()
					if _, err := fmt.Fprintf(c, "echo %s\n", sc.Text()); err != nil {
						return
					}
				}
			}()
		}
	}()
	return got
}

func dialFrom(h *netns.Host, to *netns.Host, port int, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return h.Dial(ctx, "tcp", netip.AddrPortFrom(to.Addr, uint16(port)).String())
}

// roundTrip sends line on c and waits up to timeout for its echo.
func roundTrip(c net.Conn, line string, timeout time.Duration) error {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(c, "%s\n", line); err != nil {
		return err
	}
	answer, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if answer != "echo "+line+"\n" {
		return fmt.Errorf("answer %q to %q", answer, line)
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

func TestNetworkReach(t *testing.T) {
	chaostest.RequireTools(t)
	n, hs := chaostest.Network(t, "a", "b")
	a, b := hs[0], hs[1]
	if a.NS != n.Prefix()+"-a" || a.Addr != n.Subnet().Addr().Next() || b.Addr != a.Addr.Next() {
		t.Fatalf("hosts %+v %+v in %v", a, b, n.Subnet())
	}
	if _, err := n.AddHost("a"); err == nil {
		t.Error("AddHost of an existing name succeeded")
	}
	if _, err := n.AddHost("waytoolongname"); err == nil {
		t.Error("AddHost with a name over 15 characters succeeded")
	}

	got := echoServer(t, a, 7000)
	c, err := dialFrom(b, a, 7000, 2*time.Second)
	if err != nil {
		t.Fatalf("b -> a: %v", err)
	}
	defer c.Close()
	if err := roundTrip(c, "hello", 2*time.Second); err != nil {
		t.Fatalf("b -> a: %v", err)
	}
	if line := <-got; line != "hello" {
		t.Errorf("a got %q", line)
	}
	if c.LocalAddr().(*net.TCPAddr).AddrPort().Addr() != b.Addr {
		t.Errorf("connection from %v, want from %v", c.LocalAddr(), b.Addr)
	}

	// The root namespace reaches the hosts over the bridge.
	rc, err := net.DialTimeout("tcp", netip.AddrPortFrom(a.Addr, 7000).String(), 2*time.Second)
	if err != nil {
		t.Fatalf("root -> a: %v", err)
	}
	rc.Close()

	// Command runs inside the namespace, in its own process group.
	cmd := b.Command(context.Background(), "ip", "-o", "-4", "addr", "show", "dev", "eth0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), b.Addr.String()+"/24") {
		t.Errorf("ip addr in %s: %s", b.NS, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sleep := b.Command(ctx, "sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	if pgid, err := syscall.Getpgid(sleep.Process.Pid); err != nil || pgid != sleep.Process.Pid {
		t.Errorf("pgid %d, %v; want own group %d", pgid, err, sleep.Process.Pid)
	}
	cancel()
	start := time.Now()
	if err := sleep.Wait(); err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("sleep after cancel: %v after %v", err, time.Since(start))
	}
}

func TestNetworkPartition(t *testing.T) {
	chaostest.RequireTools(t)
	n, hs := chaostest.Network(t, "a", "b", "c")
	a, b, c := hs[0], hs[1], hs[2]
	echoServer(t, a, 7000)
	echoServer(t, b, 7000)
	established, err := dialFrom(b, a, 7000, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer established.Close()

	heal, err := n.Partition(a, b)
	if err != nil {
		t.Fatal(err)
	}
	// New connections time out silently in both directions.
	if _, err := dialFrom(b, a, 7000, 500*time.Millisecond); !isTimeout(err) {
		t.Errorf("b -> a during partition: %v, want timeout", err)
	}
	if _, err := dialFrom(a, b, 7000, 500*time.Millisecond); !isTimeout(err) {
		t.Errorf("a -> b during partition: %v, want timeout", err)
	}
	// Established connections stall.
	if err := roundTrip(established, "stalled", 500*time.Millisecond); !isTimeout(err) {
		t.Errorf("established b -> a during partition: %v, want timeout", err)
	}
	// Other hosts and the root namespace are not affected.
	if cc, err := dialFrom(c, a, 7000, 2*time.Second); err != nil {
		t.Errorf("c -> a during partition: %v", err)
	} else {
		cc.Close()
	}
	if rc, err := net.DialTimeout("tcp", netip.AddrPortFrom(b.Addr, 7000).String(), 2*time.Second); err != nil {
		t.Errorf("root -> b during partition: %v", err)
	} else {
		rc.Close()
	}

	if err := heal(); err != nil {
		t.Fatal(err)
	}
	if err := heal(); err != nil {
		t.Errorf("second heal: %v", err)
	}
	if cc, err := dialFrom(b, a, 7000, 2*time.Second); err != nil {
		t.Errorf("b -> a after heal: %v", err)
	} else {
		cc.Close()
	}
	// The stalled request is retransmitted and answered.
	if err := established.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if answer, err := bufio.NewReader(established).ReadString('\n'); err != nil || answer != "echo stalled\n" {
		t.Errorf("established after heal: %q, %v", answer, err)
	}
}

func TestNetworkBlackhole(t *testing.T) {
	chaostest.RequireTools(t)
	n, hs := chaostest.Network(t, "a", "b")
	a, b := hs[0], hs[1]
	echoServer(t, a, 7000)
	undo1, err := n.Blackhole(b, a.Addr)
	if err != nil {
		t.Fatal(err)
	}
	undo2, err := n.Blackhole(b, a.Addr) // overlapping fault: reference counted
	if err != nil {
		t.Fatal(err)
	}
	// The kernel fails a local sender's connect at once with EINVAL.
	if _, err := dialFrom(b, a, 7000, time.Second); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("b -> a through a blackhole: %v, want EINVAL", err)
	}
	if err := undo1(); err != nil {
		t.Fatal(err)
	}
	if _, err := dialFrom(b, a, 7000, time.Second); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("b -> a with one of two blackholes undone: %v, want EINVAL", err)
	}
	if err := undo2(); err != nil {
		t.Fatal(err)
	}
	if c, err := dialFrom(b, a, 7000, 2*time.Second); err != nil {
		t.Errorf("b -> a after undo: %v", err)
	} else {
		c.Close()
	}
}

func TestNetworkDropReplies(t *testing.T) {
	chaostest.RequireTools(t)
	n, hs := chaostest.Network(t, "s1", "s2", "cl")
	s1, s2, cl := hs[0], hs[1], hs[2]
	got := echoServer(t, s1, 7000)
	echoServer(t, s2, 7000)
	established, err := dialFrom(cl, s1, 7000, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer established.Close()

	heal, err := n.DropReplies([]*netns.Host{s1, s2}, cl)
	if err != nil {
		t.Fatal(err)
	}
	// The request reaches the server, the reply never arrives.
	if err := roundTrip(established, "renew", time.Second); !isTimeout(err) {
		t.Errorf("request during DropReplies: %v, want timeout", err)
	}
	select {
	case line := <-got:
		if line != "renew" {
			t.Errorf("server got %q", line)
		}
	case <-time.After(2 * time.Second):
		t.Error("request did not reach the server")
	}
	// A new connection's SYN reaches the server (SYN_RECV there) but the
	// SYN-ACK is lost.
	if _, err := dialFrom(cl, s2, 7000, 500*time.Millisecond); !isTimeout(err) {
		t.Errorf("new connection during DropReplies: %v, want timeout", err)
	}
	if !hasSynRecv(t, s2, cl.Addr) {
		t.Error("no SYN_RECV connection from the client on the server")
	}
	// The servers still reach each other and the client still reaches others.
	if c, err := dialFrom(s2, s1, 7000, 2*time.Second); err != nil {
		t.Errorf("s2 -> s1 during DropReplies: %v", err)
	} else {
		c.Close()
	}

	if err := heal(); err != nil {
		t.Fatal(err)
	}
	if err := established.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if answer, err := bufio.NewReader(established).ReadString('\n'); err != nil || answer != "echo renew\n" {
		t.Errorf("reply after heal: %q, %v", answer, err)
	}
}

// hasSynRecv reports whether h's namespace has a TCP socket in SYN_RECV
// from addr, read from /proc/net/tcp inside the namespace.
func hasSynRecv(t *testing.T, h *netns.Host, from netip.Addr) bool {
	t.Helper()
	out, err := h.Command(context.Background(), "cat", "/proc/net/tcp").Output()
	if err != nil {
		t.Fatal(err)
	}
	a := from.As4()
	remote := fmt.Sprintf("%02X%02X%02X%02X:", a[3], a[2], a[1], a[0]) // little-endian hex
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasPrefix(f[2], remote) && f[3] == "03" {
			return true
		}
	}
	return false
}

func TestNetworkCleanup(t *testing.T) {
	chaostest.RequireTools(t, "sleep")
	// Close removes everything and kills what still runs in the hosts.
	n, hs := chaostest.Network(t, "a", "g10")
	sleep := hs[1].Command(context.Background(), "sleep", "300")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	assertExited(t, sleep)
	chaostest.AssertNoLeftovers(t, n.Prefix())
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := n.AddHost("late"); err == nil {
		t.Error("AddHost after Close succeeded")
	}

	// A run that crashed without Close is removed by netns.CleanupStale.
	stale, hs := chaostest.Network(t, "e1", "g1")
	sleep = hs[0].Command(context.Background(), "sleep", "300")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := stale.Partition(hs[0], hs[1]); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(os.TempDir(), netns.TempDirPrefix+hs[0].NS+"-etcd-123")
	if err := os.MkdirAll(filepath.Join(tmp, "e1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := netns.CleanupStale(stale.Prefix()); err != nil {
		t.Fatal(err)
	}
	assertExited(t, sleep)
	chaostest.AssertNoLeftovers(t, stale.Prefix())
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary directory %s after netns.CleanupStale: %v", tmp, err)
	}
	if err := netns.CleanupStale(""); err == nil {
		t.Error("netns.CleanupStale with an empty prefix succeeded")
	}
}

func assertExited(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Errorf("process %d still running", cmd.Process.Pid)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
