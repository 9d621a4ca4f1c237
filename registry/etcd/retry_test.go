package etcd_test

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
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
)

// dialLog is an etcd.Config.Dialer that records each attempt (when, and
// the time its ctx allows) and refuses the first refuse of them before
// dialing for real.
type dialLog struct {
	mu      sync.Mutex
	at      []time.Time
	allowed []time.Duration
	refuse  int
}

func (d *dialLog) dial(ctx context.Context, addr string) (net.Conn, error) {
	d.mu.Lock()
	now := time.Now()
	d.at = append(d.at, now)
	if dl, ok := ctx.Deadline(); ok {
		d.allowed = append(d.allowed, dl.Sub(now))
	} else {
		d.allowed = append(d.allowed, -1)
	}
	n := len(d.at)
	d.mu.Unlock()
	if n <= d.refuse {
		return nil, fmt.Errorf("attempt %d refused by the test", n)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", addr)
}

func (d *dialLog) attempts() ([]time.Time, []time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.at...), append([]time.Duration(nil), d.allowed...)
}

// TestRetryActsOnRealServer: maxRetries, retryIntervalMilliseconds and
// operationTimeoutMilliseconds act on the etcd client's connection as on
// ZooKeeper's: Open on a real server whose first attempts fail succeeds
// when they are at most maxRetries, with pauses of at least (80% of, the
// jitter) the interval, each attempt allowed at least the operation
// timeout; with one failure more it gives up after exactly 1+maxRetries
// attempts, well before the dial timeout.
func TestRetryActsOnRealServer(t *testing.T) {
	es := etcdtest.New(t)
	const interval, attemptTimeout = 40 * time.Millisecond, 700 * time.Millisecond
	for _, c := range []struct {
		maxRetries, refuse int
		ok                 bool
	}{{3, 3, true}, {2, 3, false}, {0, 1, false}} {
		t.Run(fmt.Sprintf("maxRetries=%d,refused=%d", c.maxRetries, c.refuse), func(t *testing.T) {
			d := &dialLog{refuse: c.refuse}
			cfg := es.Config(testenv.Namespace("sk_retry_"))
			cfg.Dialer, cfg.DialTimeout = d.dial, time.Minute
			cfg.Retry = etcd.Retry{Interval: interval, MaxRetries: c.maxRetries, AttemptTimeout: attemptTimeout}
			r, err := etcd.Open(testenv.Context(t), cfg)
			at, allowed := d.attempts()
			if c.ok {
				if err != nil {
					t.Fatalf("Open after %d refused attempts with maxRetries %d: %v", c.refuse, c.maxRetries, err)
				}
				_ = r.Close()
				if len(at) < c.refuse+1 {
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
			for i := 1; i <= c.refuse && i < len(at); i++ {
				if gap := at[i].Sub(at[i-1]); gap < interval*8/10 {
					t.Errorf("attempt %d came %v after the one before, want at least the interval %v (less 20%% jitter)", i+1, gap, interval)
				}
			}
			for i, a := range allowed {
				if a < attemptTimeout*9/10 || a > attemptTimeout+10*time.Second {
					t.Errorf("attempt %d was allowed %v, want about operationTimeout %v", i+1, a, attemptTimeout)
				}
			}
		})
	}
}

// TestRetryGivesUpOnUnreachableServer: nothing listens at the endpoint;
// Open gives up after 1+maxRetries attempts, naming the endpoint, instead
// of waiting for the dial timeout.
func TestRetryGivesUpOnUnreachableServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := "http://" + l.Addr().String()
	l.Close()
	d := &dialLog{}
	_, err = etcd.Open(context.Background(), etcd.Config{Endpoints: []string{ep}, DialTimeout: time.Minute, Dialer: d.dial,
		Retry: etcd.Retry{Interval: 20 * time.Millisecond, MaxRetries: 4}})
	if !errors.Is(err, registry.ErrUnavailable) || !strings.Contains(err.Error(), ep) || !strings.Contains(err.Error(), "gave up after 5 connection attempts") {
		t.Fatalf("Open = %v, want ErrUnavailable naming %s after 5 attempts", err, ep)
	}
	if at, _ := d.attempts(); len(at) != 5 {
		t.Fatalf("%d attempts, want 5", len(at))
	}
}
