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
// --resp; "" or "off" serves nothing) with at most maxClients connections
// (serve --resp-max-clients) until the returned stop is called.
func startRESP(addr string, maxClients int, node *cluster.Node, out io.Writer) (stop func(), err error) {
	if addr == "" || strings.EqualFold(addr, "off") {
		return func() {}, nil
	}
	if maxClients < 1 {
		return nil, fmt.Errorf("--resp-max-clients %d: want 1 or more (default %d)", maxClients, keyserver.DefaultMaxClients)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--resp %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := keyserver.ServeConfig(ctx, ln, node, keyserver.Config{MaxClients: maxClients}); err != nil {
			fmt.Fprintf(out, "shardkeeper: Redis-protocol key service stopped: %v\n", err)
		}
	}()
	fmt.Fprintf(out, "shardkeeper: Redis-protocol key service on %s (INCR any, NEXTID [n], NEXTIDB n; no authentication)\n", ln.Addr())
	return func() { cancel(); <-done }, nil
}

// startUDP serves node's keys over the datagram protocol on addr (serve
// --udp; "" or "off" serves nothing) until the returned stop is called.
func startUDP(addr string, node *cluster.Node, out io.Writer) (stop func(), err error) {
	if addr == "" || strings.EqualFold(addr, "off") {
		return func() {}, nil
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("--udp %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := keyserver.ServeUDP(ctx, pc, node); err != nil {
			fmt.Fprintf(out, "shardkeeper: datagram key service stopped: %v\n", err)
		}
	}()
	fmt.Fprintf(out, "shardkeeper: datagram key service on udp %s (one request, one reply per datagram; no authentication)\n", pc.LocalAddr())
	return func() { cancel(); <-done }, nil
}
