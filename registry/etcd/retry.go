package etcd

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// Retry is the connection retry policy, ShardingSphere's ZooKeeper props
// applied to etcd's gRPC connection the way its Curator client applies
// them: a failed connection attempt is followed, after Interval times a
// growing factor (doubling, 20% jitter, at most Interval*MaxRetries), by
// the next; Open gives up after 1+MaxRetries failed attempts (across all
// endpoints) with registry.ErrUnavailable; once open, the client retries
// without limit. AttemptTimeout bounds each attempt (TCP, TLS and HTTP/2
// handshakes; gRPC's MinConnectTimeout), like Curator's connection
// timeout. A zero Interval leaves gRPC's own policy (1 s, doubling up to
// 120 s, 20 s per attempt) and no limit but DialTimeout.
type Retry struct {
	Interval       time.Duration
	MaxRetries     int
	AttemptTimeout time.Duration
}

// dialCounter dials for gRPC, counting the failed attempts in a row until
// Open is done, and gives up when there are more than max.
type dialCounter struct {
	dial   func(ctx context.Context, addr string) (net.Conn, error)
	max    int
	giveUp context.CancelCauseFunc

	mu       sync.Mutex
	failures int
	opened   bool
}

func (d *dialCounter) dialContext(ctx context.Context, addr string) (net.Conn, error) {
	d.mu.Lock()
	gaveUp := !d.opened && d.failures > d.max
	d.mu.Unlock()
	if gaveUp {
		return nil, fmt.Errorf("etcd: gave up connecting")
	}
	c, err := d.dial(ctx, addr)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		d.failures = 0
		return c, nil
	}
	d.failures++
	if !d.opened && d.failures > d.max {
		d.giveUp(fmt.Errorf("gave up after %d connection attempts (1 + maxRetries %d): %w", d.failures, d.max, err))
	}
	return nil, err
}

// open records that Open succeeded: from now on attempts are not limited.
func (d *dialCounter) open() {
	d.mu.Lock()
	d.opened, d.failures = true, 0
	d.mu.Unlock()
}

// dialOptions are the gRPC options of r, dialing through d.
func (r Retry) dialOptions(d *dialCounter) []grpc.DialOption {
	maxDelay := r.Interval * time.Duration(max(r.MaxRetries, 1))
	cp := grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: r.Interval, Multiplier: 2, Jitter: 0.2, MaxDelay: maxDelay},
		MinConnectTimeout: r.AttemptTimeout,
	}
	if cp.MinConnectTimeout == 0 {
		cp.MinConnectTimeout = 20 * time.Second // gRPC's default
	}
	return []grpc.DialOption{grpc.WithConnectParams(cp), grpc.WithContextDialer(d.dialContext)}
}
