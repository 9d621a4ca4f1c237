package main

import (
	"fmt"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/daemon"
	"github.com/shardkeeper/shardkeeper/internal/keyserver"
)

// respConfig is the Redis-protocol key service of serve --resp addr
// --resp-max-clients maxClients; nil when addr is "" or "off".
func respConfig(addr string, maxClients int) (*daemon.RESPConfig, error) {
	if addr == "" || strings.EqualFold(addr, "off") {
		return nil, nil
	}
	if maxClients < 1 {
		return nil, fmt.Errorf("--resp-max-clients %d: want 1 or more (default %d)", maxClients, keyserver.DefaultMaxClients)
	}
	return &daemon.RESPConfig{Addr: addr, MaxClients: maxClients}, nil
}

// udpConfig is the datagram key service of serve --udp addr; nil when
// addr is "" or "off".
func udpConfig(addr string) *daemon.UDPConfig {
	if addr == "" || strings.EqualFold(addr, "off") {
		return nil
	}
	return &daemon.UDPConfig{Addr: addr}
}
