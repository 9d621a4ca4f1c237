package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/keyserver"
)

// startRESP serves node's keys over the Redis protocol on addr (serve
// --resp; "" or "off" serves nothing) until the returned stop is called.
func startRESP(addr string, node *cluster.Node, out io.Writer) (stop func(), err error) {
	if addr == "" || strings.EqualFold(addr, "off") {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--resp %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = keyserver.Serve(ctx, ln, node)
	}()
	fmt.Fprintf(out, "shardkeeper: Redis-protocol key service on %s (INCR any, NEXTID [n], NEXTIDB n; no authentication)\n", ln.Addr())
	return func() { cancel(); <-done }, nil
}
