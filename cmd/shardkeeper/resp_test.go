package main

import (
	"context"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/keyserver"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// TestServeUDPAndRESPIO runs serve with --udp and --resp-io io_uring (epoll
// where the kernel has no io_uring) and fetches keys over both ports: they
// come from the node's one worker id and increase.
func TestServeUDPAndRESPIO(t *testing.T) {
	dir := embeddedConfDir(t)
	respIO := "io_uring"
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- keyserver.ServeIO(ctx, ln, nil, keyserver.IOUring) }()
		time.Sleep(50 * time.Millisecond)
		cancel()
		if err := <-errc; err != nil {
			t.Logf("no io_uring here (%v): --resp-io epoll", err)
			respIO = "epoll"
		}
	}
	output, stop := startServe(t, "--conf", dir, "--http", "off", "--resp", "127.0.0.1:0", "--resp-io", respIO, "--udp", "127.0.0.1:0")
	defer stop()
	um := regexp.MustCompile(`datagram key service on udp (127\.0\.0\.1:\d+)`).FindStringSubmatch(output())
	rm := regexp.MustCompile(`Redis-protocol key service on (127\.0\.0\.1:\d+)`).FindStringSubmatch(output())
	if um == nil || rm == nil {
		t.Fatalf("no --udp or --resp address in the serve output:\n%s", output())
	}
	c, err := keyserver.DialUDP(um[1])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first, err := c.NextID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.AppendIDs(ctx, nil, 100)
	if err != nil || len(batch) != 100 || batch[0] <= first {
		t.Fatalf("AppendIDs(100) = %d keys from %v, %v", len(batch), batch[:min(1, len(batch))], err)
	}
	respKey := respIncr(t, rm[1])
	if respKey <= batch[99] || snowflake.Decompose(respKey).WorkerID != snowflake.Decompose(first).WorkerID {
		t.Fatalf("RESP key %d after UDP key %d: want a larger key of the same worker", respKey, batch[99])
	}
}

// TestServeBadRESPIO: an unknown --resp-io is refused before serving.
func TestServeBadRESPIO(t *testing.T) {
	if _, err := startRESP("127.0.0.1:0", "kqueue", nil, new(strings.Builder)); err == nil || !strings.Contains(err.Error(), "--resp-io") {
		t.Fatalf("startRESP with --resp-io kqueue: %v", err)
	}
}
