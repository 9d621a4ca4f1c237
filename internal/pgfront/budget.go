package pgfront

import (
	"context"
	"encoding/binary"
	"net"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/connserver"
)

// msgReader sits under a session's pgproto3.Backend and follows the
// message framing (a type byte and a 4-byte length that counts itself)
// of the bytes it passes up. Once stmts is set, each message's declared
// length is taken from the node's statement budget before its body
// reaches the Backend (held), and given back at the next read that starts
// a new message: the Backend reads only inside Receive, which the session
// calls once the messages before are answered. Messages up to
// connserver.Small are not counted; a counted one must arrive within
// connserver.BodyTimeout.
type msgReader struct {
	r     net.Conn
	max   int64 // the Backend's MaxBodyLen: a longer message is its to refuse
	stmts *connserver.Budget
	ctx   context.Context
	held  int64

	hdr       [5]byte
	nhdr      int   // header bytes seen of the current message
	remaining int64 // body bytes left of the current message
	err       error
}

func (m *msgReader) Read(p []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	if m.held > 0 && m.nhdr == 0 && m.remaining == 0 {
		m.release()
	}
	n, err := m.r.Read(p)
	for b := p[:n]; len(b) > 0; {
		if m.remaining == 0 {
			k := copy(m.hdr[m.nhdr:], b)
			m.nhdr += k
			b = b[k:]
			if m.nhdr < len(m.hdr) {
				break
			}
			m.nhdr = 0
			m.remaining = int64(int32(binary.BigEndian.Uint32(m.hdr[1:]))) - 4
			if m.remaining <= 0 {
				m.remaining = 0 // no body, or a bad length the Backend refuses
				continue
			}
			if m.stmts.Counts(m.remaining) && m.remaining <= m.max {
				if e := m.stmts.Acquire(m.ctx, m.remaining); e != nil {
					m.remaining = 0
					m.err = &fatal{"53200", "out of memory: " + e.Error()}
					return 0, m.err
				}
				m.held += m.remaining
				_ = m.r.SetReadDeadline(time.Now().Add(connserver.BodyTimeout))
			}
			continue
		}
		k := min(m.remaining, int64(len(b)))
		m.remaining -= k
		b = b[k:]
	}
	return n, err
}

// release gives back what the session holds of the budget.
func (m *msgReader) release() {
	m.stmts.Release(m.held)
	m.held = 0
}
