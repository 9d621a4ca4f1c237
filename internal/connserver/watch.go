package connserver

import (
	"errors"
	"net"
	"os"
	"time"
)

// WatchedConn is a client connection whose end can be noticed while the
// session runs a statement and reads nothing: a client that closes its
// connection (a killed client, a driver's timeout) then cancels its
// statement instead of leaving it to run to its end.
//
// Between Watch and its stop nothing else may read the connection; its
// reads go through WatchedConn, which returns first what a watch read.
type WatchedConn struct {
	net.Conn
	pending []byte // read by a watch, not yet returned
	err     error  // the watch's read error, returned after pending
}

// Watch reads the connection in the background until stop is called and
// calls gone, once, from that goroutine, when the read ends with end of
// stream or another error than a deadline (the client closed or reset
// the connection, or it was closed): the client can no longer get the
// answer. A byte the client sends meanwhile (a pipelined request) ends
// the watch without calling gone and is kept for the next Read, as is
// the error. stop clears the read deadline, so that the watch may last,
// and ends the watch before it returns, leaving no deadline; the caller
// sets its own for its next read.
func (c *WatchedConn) Watch(gone func()) (stop func()) {
	if len(c.pending) > 0 || c.err != nil {
		return func() {} // the next Read has its answer already
	}
	_ = c.Conn.SetReadDeadline(time.Time{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [1]byte
		n, err := c.Conn.Read(b[:])
		c.pending = append(c.pending, b[:n]...)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			c.err = err
			gone()
		}
	}()
	return func() {
		_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
		<-done
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
}

// Read returns first what a watch read, then reads the connection.
func (c *WatchedConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	if c.err != nil {
		return 0, c.err
	}
	return c.Conn.Read(p)
}

var _ net.Conn = (*WatchedConn)(nil)
