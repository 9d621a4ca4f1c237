//go:build !linux || !(amd64 || arm64)

package keyserver

import (
	"context"
	"net"
)

// mmsgLoop says serveUDPMmsg exists on this platform: elsewhere one
// goroutine answers one datagram at a time.
const mmsgLoop = false

func serveUDPMmsg(ctx context.Context, uc *net.UDPConn, src Source) error {
	return serveUDPSimple(ctx, uc, src)
}
