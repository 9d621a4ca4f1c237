//go:build !linux

package keyserver

import (
	"context"
	"net"
)

// eventLoops says serveLoops exists on this platform: elsewhere each
// connection has its goroutine.
const eventLoops = false

func serveLoops(ctx context.Context, ln *net.TCPListener, src Source, cl *clients) error {
	return serveGoroutines(ctx, ln, src, cl)
}
