package main

import (
	"bufio"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/keyclient"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// TestServeUDPAndRESP runs serve with --udp and --resp and fetches keys
// over both ports: they come from the node's one worker id and increase.
func TestServeUDPAndRESP(t *testing.T) {
	dir := embeddedConfDir(t)
	output, stop := startServe(t, "--conf", dir, "--http", "off", "--resp", "127.0.0.1:0", "--udp", "127.0.0.1:0")
	defer stop()
	um := regexp.MustCompile(`datagram key service on udp (127\.0\.0\.1:\d+)`).FindStringSubmatch(output())
	rm := regexp.MustCompile(`Redis-protocol key service on (127\.0\.0\.1:\d+)`).FindStringSubmatch(output())
	if um == nil || rm == nil {
		t.Fatalf("no --udp or --resp address in the serve output:\n%s", output())
	}
	c, err := keyclient.DialUDP(um[1])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testenv.Context(t)
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
	// The Go client of the RESP port, on the same node.
	r, err := keyclient.DialRESP(ctx, rm[1])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	keys, err := r.AppendIDs(ctx, nil, 1000)
	if err != nil || len(keys) != 1000 || keys[0] <= respKey {
		t.Fatalf("RESP AppendIDs(1000) = %d keys from %v, %v", len(keys), keys[:min(1, len(keys))], err)
	}
	if id, err := r.WorkerID(ctx); err != nil || int64(id) != snowflake.Decompose(first).WorkerID {
		t.Fatalf("RESP WorkerID = %d, %v; the keys' worker is %d", id, err, snowflake.Decompose(first).WorkerID)
	}
}

// TestServeBadRESPMaxClients: a --resp-max-clients below 1 is refused
// before serving.
func TestServeBadRESPMaxClients(t *testing.T) {
	for _, n := range []int{0, -1} {
		if _, err := respConfig("127.0.0.1:0", n); err == nil || !strings.Contains(err.Error(), "--resp-max-clients") {
			t.Fatalf("respConfig with --resp-max-clients %d: %v", n, err)
		}
	}
}

// TestServeRESPMaxClients: serve --resp-max-clients 1 serves one
// connection and refuses a second one while the first is open.
func TestServeRESPMaxClients(t *testing.T) {
	dir := embeddedConfDir(t)
	output, stop := startServe(t, "--conf", dir, "--http", "off", "--resp", "127.0.0.1:0", "--resp-max-clients", "1")
	defer stop()
	rm := regexp.MustCompile(`Redis-protocol key service on (127\.0\.0\.1:\d+)`).FindStringSubmatch(output())
	if rm == nil {
		t.Fatalf("no --resp address in the serve output:\n%s", output())
	}
	first, err := net.Dial("tcp", rm[1])
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	_ = first.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(first)
	if _, err := io.WriteString(first, "PING\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); line != "+PONG\r\n" {
		t.Fatalf("first connection: PING = %q, %v", line, err)
	}
	second, err := net.Dial("tcp", rm[1])
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	_ = second.SetDeadline(time.Now().Add(10 * time.Second))
	if got, err := io.ReadAll(second); string(got) != "-ERR max number of clients reached\r\n" {
		t.Fatalf("second connection: %q, %v; want the max clients error and the connection closed", got, err)
	}
}
