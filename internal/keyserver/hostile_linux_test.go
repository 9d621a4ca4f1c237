//go:build linux

package keyserver

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/keyclient"
)

// forgeUDP sends payload to 127.0.0.1:to from a forged source,
// 127.0.0.1:from, through a raw IP socket (root only).
func forgeUDP(t *testing.T, from, to int, payload []byte) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)
	if err != nil {
		t.Fatalf("raw socket: %v", err)
	}
	defer syscall.Close(fd)
	loopback := [4]byte{127, 0, 0, 1}
	pkt := []byte{0x45, 0, 0, 0, 0, 0, 0, 0, 64, syscall.IPPROTO_UDP, 0, 0}
	pkt = append(pkt, loopback[:]...)
	pkt = append(pkt, loopback[:]...)
	// The kernel fills in the total length, the id and the IP checksum;
	// a UDP checksum of 0 means none (IPv4).
	binary.BigEndian.PutUint16(pkt[2:4], uint16(20+8+len(payload)))
	pkt = binary.BigEndian.AppendUint16(pkt, uint16(from))
	pkt = binary.BigEndian.AppendUint16(pkt, uint16(to))
	pkt = binary.BigEndian.AppendUint16(pkt, uint16(8+len(payload)))
	pkt = binary.BigEndian.AppendUint16(pkt, 0)
	pkt = append(pkt, payload...)
	if err := syscall.Sendto(fd, pkt, 0, &syscall.SockaddrInet4{Addr: loopback}); err != nil {
		t.Fatalf("send forged datagram: %v", err)
	}
}

func udpPort(t *testing.T, addr string) int {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return int(ap.Port())
}

// TestHostileUDPForgedSourceLoop: one datagram whose source is forged to
// be the node's own UDP port, or another node's, must not start a loop of
// requests and replies. Each case sends a control first, a forged
// datagram from a port where nothing listens, which must be answered
// (one key): it shows the forged datagrams arrive.
func TestHostileUDPForgedSourceLoop(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("forging a source address needs a raw socket: run as root (CI does)")
	}
	for _, m := range udpModes {
		t.Run(m.name+"/self", func(t *testing.T) {
			src := &countingSource{}
			addr := startUDP(t, src, m.serve)
			port := udpPort(t, addr)
			forgeUDP(t, freeUDPPort(t), port, keyclient.AppendUDPRequest(nil, 1, 1))
			waitIssued(t, src, 1)
			forgeUDP(t, port, port, keyclient.AppendUDPRequest(nil, 2, 1))
			time.Sleep(500 * time.Millisecond)
			if n := src.issued.Load(); n != 1 {
				t.Fatalf("a datagram from the node's own port: %d keys issued in 500 ms, want none (1 for the control)", n-1)
			}
			// Still serving.
			c, err := keyclient.DialUDP(addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := c.NextID(ctx); err != nil {
				t.Fatal(err)
			}
		})
		t.Run(m.name+"/two-nodes", func(t *testing.T) {
			a, b := &countingSource{}, &countingSource{}
			portA := udpPort(t, startUDP(t, a, m.serve))
			portB := udpPort(t, startUDP(t, b, m.serve))
			forgeUDP(t, freeUDPPort(t), portA, keyclient.AppendUDPRequest(nil, 1, 1))
			waitIssued(t, a, 1)
			// A answers B, which must drop the reply.
			forgeUDP(t, portB, portA, keyclient.AppendUDPRequest(nil, 2, 1))
			forgeUDP(t, portA, portB, keyclient.AppendUDPRequest(nil, 3, 1))
			time.Sleep(500 * time.Millisecond)
			if na, nb := a.issued.Load(), b.issued.Load(); na != 2 || nb != 1 {
				t.Fatalf("one datagram forged each way between two nodes: %d and %d keys issued in 500 ms, want 1 and 1 (and A's control)", na-1, nb)
			}
		})
	}
}

// freeUDPPort is a loopback UDP port where nothing listens.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().(*net.UDPAddr).Port
}

func waitIssued(t *testing.T, src *countingSource, n int64) {
	t.Helper()
	for start := time.Now(); src.issued.Load() < n; {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the control datagram was not answered: %d keys issued, want %d", src.issued.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHostileRESPOutOfFiles: connections that arrive while the process
// has no file descriptor left (Accept fails with EMFILE) do not stop the
// RESP server: once descriptors are free again, new connections are
// served. The connections come from another process (this test binary,
// running TestDialerProcess), since this one can open none.
func TestHostileRESPOutOfFiles(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			addr := startWith(t, &countingSource{}, m.serve)
			// Served: the event loops are set up (they open descriptors).
			pingWithin(t, addr, 10*time.Second)
			dialer := exec.Command(os.Args[0], "-test.run=^TestDialerProcess$")
			dialer.Env = append(os.Environ(), dialerEnv+"="+addr)
			stdin, err := dialer.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := dialer.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := dialer.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = dialer.Wait() }()
			defer stdin.Close()

			var limit syscall.Rlimit
			if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
				t.Fatal(err)
			}
			none := limit
			none.Cur = 0
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &none); err != nil {
				t.Fatal(err)
			}
			_, werr := io.WriteString(stdin, "dial\n")
			line, rerr := bufio.NewReader(stdout).ReadString('\n')
			// The server's Accept fails meanwhile.
			time.Sleep(200 * time.Millisecond)
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
				t.Fatal(err)
			}
			if werr != nil || line != "dialed\n" {
				t.Fatalf("dialer process: %q, %v, %v", line, werr, rerr)
			}
			stdin.Close()
			if err := dialer.Wait(); err != nil {
				t.Fatalf("dialer process: %v", err)
			}
			pingWithin(t, addr, 10*time.Second)
		})
	}
}

// dialerEnv names the address TestDialerProcess dials.
const dialerEnv = "KEYSERVER_TEST_DIALER_ADDR"

// TestDialerProcess is TestHostileRESPOutOfFiles's other process: on a
// line from stdin it opens 4 connections to $KEYSERVER_TEST_DIALER_ADDR,
// says "dialed", and holds them until stdin closes. Without the variable
// it does nothing.
func TestDialerProcess(t *testing.T) {
	addr := os.Getenv(dialerEnv)
	if addr == "" {
		return
	}
	r := bufio.NewReader(os.Stdin)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	fmt.Println("dialed")
	_, _ = io.Copy(io.Discard, r)
}
