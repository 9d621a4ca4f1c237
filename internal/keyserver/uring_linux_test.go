//go:build linux

package keyserver

import (
	"context"
	"net"
	"runtime"
)

// uringModes is the io_uring way of serving, when this kernel has it.
func uringModes() []serveMode {
	ok := make(chan bool)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r, err := newRing()
		if err == nil {
			r.close()
		}
		ok <- err == nil
	}()
	if !<-ok {
		return nil
	}
	return []serveMode{{"io_uring", IOUring, func(ctx context.Context, ln net.Listener, src Source) error {
		return ServeConfig(ctx, ln, src, Config{IO: IOUring})
	}}}
}
