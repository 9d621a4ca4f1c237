package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// dialLog is a zk.Dialer that records each attempt (when, with which
// timeout) and refuses the first refuse of them before dialing for real.
type dialLog struct {
	mu       sync.Mutex
	at       []time.Time
	timeouts []time.Duration
	refuse   int
}

func (d *dialLog) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	d.at = append(d.at, time.Now())
	d.timeouts = append(d.timeouts, timeout)
	n := len(d.at)
	d.mu.Unlock()
	if n <= d.refuse {
		return nil, fmt.Errorf("attempt %d refused by the test", n)
	}
	return net.DialTimeout(network, addr, timeout)
}

func (d *dialLog) attempts() ([]time.Time, []time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.at...), append([]time.Duration(nil), d.timeouts...)
}

// TestRetryActsOnRealServer: maxRetries, retryIntervalMilliseconds and
// operationTimeoutMilliseconds act as ShardingSphere's Curator client uses
// them. The first connection to a real server whose first attempts fail
// succeeds when they are at most maxRetries, with pauses of at least the
// interval between attempts, each attempt bounded by the operation
// timeout; with one failure more it gives up after exactly 1+maxRetries
// attempts, well before the connect timeout.
func TestRetryActsOnRealServer(t *testing.T) {
	zs := zktest.New(t)
	const interval, attemptTimeout = 40 * time.Millisecond, 700 * time.Millisecond
	for _, c := range []struct {
		maxRetries, refuse int
		ok                 bool
	}{{3, 3, true}, {2, 3, false}, {0, 1, false}} {
		t.Run(fmt.Sprintf("maxRetries=%d,refused=%d", c.maxRetries, c.refuse), func(t *testing.T) {
			d := &dialLog{refuse: c.refuse}
			cfg := zs.Config(zs.Namespace(t, "sk_retry_"))
			cfg.Dialer, cfg.ConnectTimeout = d.dial, time.Minute
			cfg.Retry = zookeeper.Backoff{Interval: interval, MaxRetries: c.maxRetries}
			cfg.AttemptTimeout = attemptTimeout
			r, err := zookeeper.Open(testenv.Context(t), cfg)
			at, timeouts := d.attempts()
			if c.ok {
				if err != nil {
					t.Fatalf("Open after %d refused attempts with maxRetries %d: %v", c.refuse, c.maxRetries, err)
				}
				_ = r.Close()
				if len(at) != c.refuse+1 {
					t.Fatalf("%d attempts, want %d", len(at), c.refuse+1)
				}
			} else {
				if !errors.Is(err, registry.ErrUnavailable) || !strings.Contains(err.Error(), fmt.Sprintf("gave up after %d connection attempts", c.maxRetries+1)) {
					t.Fatalf("Open = %v, want ErrUnavailable after %d attempts", err, c.maxRetries+1)
				}
				if len(at) != c.maxRetries+1 {
					t.Fatalf("%d attempts, want 1 + maxRetries = %d", len(at), c.maxRetries+1)
				}
			}
			for i := 1; i < len(at); i++ {
				if gap := at[i].Sub(at[i-1]); gap < interval {
					t.Errorf("attempt %d came %v after the one before, want at least the interval %v", i+1, gap, interval)
				}
			}
			for i, to := range timeouts {
				if to != attemptTimeout {
					t.Errorf("attempt %d dialed with timeout %v, want operationTimeout %v", i+1, to, attemptTimeout)
				}
			}
		})
	}
}

// TestRetryGivesUpOnUnreachableServer: nothing listens at the address;
// the first connection gives up after 1+maxRetries attempts, naming the
// server, instead of waiting for the connect timeout.
func TestRetryGivesUpOnUnreachableServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	d := &dialLog{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = zookeeper.Open(ctx, zookeeper.Config{Servers: []string{addr}, Namespace: "ns", ConnectTimeout: time.Minute, Dialer: d.dial,
		Retry: zookeeper.Backoff{Interval: 20 * time.Millisecond, MaxRetries: 4}})
	if !errors.Is(err, registry.ErrUnavailable) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "gave up after 5 connection attempts") {
		t.Fatalf("Open = %v, want ErrUnavailable naming %s after 5 attempts", err, addr)
	}
	if at, _ := d.attempts(); len(at) != 5 {
		t.Fatalf("%d attempts, want 5", len(at))
	}
}
