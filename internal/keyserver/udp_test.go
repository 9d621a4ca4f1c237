package keyserver

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/keyclient"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

func startUDP(t *testing.T, src Source, serve func(context.Context, net.PacketConn, Source) error) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, pc, src) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeUDP: %v", err)
		}
	})
	return pc.LocalAddr().String()
}

var udpModes = []struct {
	name  string
	serve func(context.Context, net.PacketConn, Source) error
}{
	{"ServeUDP", ServeUDP},
}

func TestUDPKeysUnique(t *testing.T) {
	for _, m := range udpModes {
		t.Run(m.name, func(t *testing.T) {
			addr := startUDP(t, newSource(t), m.serve)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var (
				mu   sync.Mutex
				seen = map[int64]bool{}
				wg   sync.WaitGroup
			)
			for range 8 {
				c, err := keyclient.DialUDP(addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				wg.Go(func() {
					var last int64
					for i := range 500 {
						n := 1 + i%3*50 // 1, 51, 101 keys
						keys, err := c.AppendIDs(ctx, nil, n)
						if err != nil {
							t.Error(err)
							return
						}
						if len(keys) != n {
							t.Errorf("%d keys, want %d", len(keys), n)
							return
						}
						mu.Lock()
						for _, k := range keys {
							if seen[k] || k <= last || snowflake.Decompose(k).WorkerID != 7 {
								t.Errorf("key %d: duplicate, not increasing or not worker 7", k)
							}
							seen[k] = true
							last = k
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if len(seen) != 8*(167*1+167*51+166*101) {
				t.Fatalf("%d keys", len(seen))
			}
		})
	}
}

func TestUDPNotIssuingAndBadRequests(t *testing.T) {
	addr := startUDP(t, &genSource{err: errors.New("cluster: not issuing keys")}, ServeUDP)
	c, err := keyclient.DialUDP(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	// The reason is cut so that the error reply stays within three times
	// the 16-byte request.
	if _, err := c.NextID(ctx); !errors.Is(err, keyclient.ErrNotIssuing) || err.Error() != "node is not issuing keys: cluster: not issuing " {
		t.Fatalf("NextID = %v, want keyclient.ErrNotIssuing with the start of the node's reason", err)
	}
	if _, err := c.AppendIDs(ctx, nil, MaxUDPCount+1); err == nil {
		t.Fatal("count past MaxUDPCount accepted by the client")
	}

	// The server answers an out-of-range count with an error, and drops
	// what is not a request.
	ok := startUDP(t, newSource(t), ServeUDP)
	raw, err := net.Dial("udp", ok)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_, _ = raw.Write([]byte("garbage"))
	_, _ = raw.Write(keyclient.AppendUDPRequest(nil, 42, 0))
	_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1024)
	n, err := raw.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if want := string(appendUDPError(nil, 42, "ERR count must be an integer in [1, 1000]", udpRequestSize)); string(buf[:n]) != want {
		t.Fatalf("reply %q, want %q", buf[:n], want)
	}
}

// TestUDPNoAmplification checks that a forged-source flood gets no
// amplification: a request not padded for its count gets a short error and
// no keys; replies are at most 1.5 times a request, errors 3 times.
func TestUDPNoAmplification(t *testing.T) {
	for _, m := range udpModes {
		t.Run(m.name, func(t *testing.T) {
			addr := startUDP(t, newSource(t), m.serve)
			raw, err := net.Dial("udp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			buf := make([]byte, 65536)
			ask := func(req []byte) []byte {
				t.Helper()
				if _, err := raw.Write(req); err != nil {
					t.Fatal(err)
				}
				_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, err := raw.Read(buf)
				if err != nil {
					t.Fatal(err)
				}
				return buf[:n]
			}
			for _, count := range []int{1, 2, 180, MaxUDPCount} {
				unpadded := keyclient.AppendUDPRequest(nil, 1, count)[:udpRequestSize]
				reply := ask(unpadded)
				if count > 1 && (len(reply) > 3*len(unpadded) || string(reply[12:16]) != "\x00\x00\x00\x00") {
					t.Fatalf("unpadded request for %d keys: %d-byte reply %q, want a short error", count, len(reply), reply)
				}
				padded := keyclient.AppendUDPRequest(nil, 2, count)
				reply = ask(padded)
				if len(reply) != udpHeaderSize+8*count || 2*len(reply) > 3*len(padded) {
					t.Fatalf("padded %d-byte request for %d keys: %d-byte reply", len(padded), count, len(reply))
				}
			}
		})
	}
}

// TestOwnAddress: the server's port on a loopback, unspecified or local
// interface address is its own; another port, or a remote address, is not.
func TestOwnAddress(t *testing.T) {
	o := newOwnAddress(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7001})
	cases := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:7001", true},
		{"127.0.0.53:7001", true},
		{"[::1]:7001", true},
		{"[::ffff:127.0.0.1]:7001", true},
		{"0.0.0.0:7001", true},
		{"127.0.0.1:7002", false},
	}
	local := map[string]bool{}
	ifaddrs, _ := net.InterfaceAddrs()
	for _, ia := range ifaddrs {
		if ipn, ok := ia.(*net.IPNet); ok && !ipn.IP.IsLoopback() {
			local[ipn.IP.String()] = true
			cases = append(cases, struct {
				addr string
				want bool
			}{net.JoinHostPort(ipn.IP.String(), "7001"), true})
		}
	}
	// Documentation addresses that are not this host's.
	for _, remote := range []string{"203.0.113.7", "198.51.100.7", "2001:db8::7"} {
		if !local[remote] {
			cases = append(cases, struct {
				addr string
				want bool
			}{net.JoinHostPort(remote, "7001"), false})
		}
	}
	for _, c := range cases {
		ap := netip.MustParseAddrPort(c.addr)
		if got := o.is(ap.Addr(), ap.Port()); got != c.want {
			t.Errorf("%s: own address %v, want %v", c.addr, got, c.want)
		}
	}
	if newOwnAddress(nil).is(netip.MustParseAddr("127.0.0.1"), 0) {
		t.Error("port 0 taken for the server's own")
	}
}

// TestServeUDPConfigEnds: a socket that fails under the server (closed
// by another) ends ServeUDPConfig with an error, every reader stopped; a
// cancelled ctx ends it with nil and the socket closed.
func TestServeUDPConfigEnds(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ServeUDPConfig(context.Background(), pc, newSource(t), Config{}) }()
	c, err := keyclient.DialUDP(pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.NextID(context.Background()); err != nil {
		t.Fatalf("NextID: %v", err)
	}
	_ = pc.Close()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "keyserver: udp") {
			t.Fatalf("a closed socket: %v, want the read error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeUDPConfig did not return after its socket failed")
	}

	pc, err = net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- ServeUDPConfig(ctx, pc, newSource(t), Config{}) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("cancelled: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeUDPConfig did not return after ctx ended")
	}
	if _, err := pc.WriteTo([]byte("x"), pc.LocalAddr()); err == nil {
		t.Fatal("the socket is still open after ServeUDPConfig returned")
	}
}
