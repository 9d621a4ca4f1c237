package keyserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/keyclient"
)

// TestRESPMetrics serves RESP with Metrics and checks the
// counts a client's traffic leaves: requests, keys, errors of the client's
// making, NOTISSUING replies, connections accepted, refused over
// MaxClients, and open.
func TestRESPMetrics(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			src := &failable{Source: newSource(t)}
			m := &Metrics{}
			addr := startWith(t, src, func(ctx context.Context, ln net.Listener, src Source) error {
				return ServeConfig(ctx, ln, src, Config{MaxClients: 1, Metrics: m})
			})
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(c)
			// Three pipelined INCRs (one batch), NEXTID 5, an unknown
			// command, a count out of range: 6 requests, 8 keys, 2 errors.
			if _, err := io.WriteString(c, command("INCR", "k")+command("INCR", "k")+command("INCR", "k")+
				command("NEXTID", "5")+command("FLUSHALL")+command("NEXTID", "0")); err != nil {
				t.Fatal(err)
			}
			for range 6 {
				reply(t, r)
			}
			got := m.Counts()
			want := Counts{Requests: 6, Keys: 8, RequestErrors: 2, Accepted: 1, Open: 1}
			if got != want {
				t.Fatalf("after the first client's commands: %+v, want %+v", got, want)
			}
			// A second client is over MaxClients 1: refused.
			c2, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			if e, ok := reply(t, bufio.NewReader(c2)).(error); !ok || e.Error() != "ERR max number of clients reached" {
				t.Fatalf("second client: %v", e)
			}
			c2.Close()
			// The generator fails: NOTISSUING.
			src.fail.Store(true)
			if _, err := io.WriteString(c, command("NEXTID")); err != nil {
				t.Fatal(err)
			}
			reply(t, r)
			c.Close()
			testenv.Eventually(t, "the closed connection counted", func() bool { return m.Counts().Open == 0 })
			got = m.Counts()
			want = Counts{Requests: 7, Keys: 8, RequestErrors: 2, NotIssuing: 1, Accepted: 1, Refused: 1}
			if got != want {
				t.Fatalf("at the end: %+v, want %+v", got, want)
			}
		})
	}
}

// failable is a Source that fails once fail is set.
type failable struct {
	Source
	fail atomic.Bool
}

func (s *failable) AppendIDs(ctx context.Context, dst []int64, n int) ([]int64, error) {
	if s.fail.Load() {
		return dst, errors.New("no worker id")
	}
	return s.Source.AppendIDs(ctx, dst, n)
}

// TestUDPMetrics serves datagrams with Metrics: a request
// for 3 keys, one with a count out of range and one not padded count as 3
// requests, 3 keys and 2 errors; a datagram that is not a request counts
// nothing; a failing generator counts NOTISSUING.
func TestUDPMetrics(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			src := &failable{Source: newSource(t)}
			m := &Metrics{}
			addr := startUDP(t, src, func(ctx context.Context, pc net.PacketConn, src Source) error {
				return ServeUDPConfig(ctx, pc, src, Config{Metrics: m})
			})
			c, err := net.Dial("udp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ask := func(d []byte, answered bool) {
				t.Helper()
				if _, err := c.Write(d); err != nil {
					t.Fatal(err)
				}
				if !answered {
					return
				}
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				buf := make([]byte, 9000)
				if _, err := c.Read(buf); err != nil {
					t.Fatal(err)
				}
			}
			ask(keyclient.AppendUDPRequest(nil, 1, 3), true)
			ask(keyclient.AppendUDPRequest(nil, 2, MaxUDPCount+1), true)
			ask(keyclient.AppendUDPRequest(nil, 3, 10)[:udpRequestSize], true)
			ask([]byte("not a request at all"), false)
			ask(keyclient.AppendUDPRequest(nil, 4, 1), true) // after the dropped one: it was read
			src.fail.Store(true)
			ask(keyclient.AppendUDPRequest(nil, 5, 1), true)
			want := Counts{Requests: 5, Keys: 4, RequestErrors: 2, NotIssuing: 1}
			if got := m.Counts(); got != want {
				t.Fatalf("%+v, want %+v", got, want)
			}
		})
	}
}

// TestNilMetrics checks that a server without Metrics counts nothing and
// a nil *Metrics reads as zero.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.request()
	m.requestError()
	m.notIssued()
	if m.Counts() != (Counts{}) {
		t.Fatal("a nil Metrics counted")
	}
	if metricsOf(withMetrics(newSource(t), nil)) != nil {
		t.Fatal("a Source without Metrics carries some")
	}
}
