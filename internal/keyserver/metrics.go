package keyserver

import (
	"context"
	"sync/atomic"
)

// Metrics counts what one key port served: requests, keys, error replies
// and, for RESP, connections. Give the same *Metrics to one ServeConfig or
// ServeUDPConfig (Config.Metrics) and read it with Counts. Safe for
// concurrent use; a nil *Metrics counts nothing.
type Metrics struct {
	requests      atomic.Uint64
	keys          atomic.Uint64
	requestErrors atomic.Uint64
	notIssuing    atomic.Uint64
	accepted      atomic.Uint64
	refused       atomic.Uint64
	open          atomic.Int64
}

// Counts is what a Metrics counted so far.
type Counts struct {
	// Requests is the commands (RESP) or datagram requests (UDP) answered.
	Requests uint64
	// Keys is the keys issued for them.
	Keys uint64
	// RequestErrors is the requests answered with an error of the
	// client's making: an unknown command, wrong arguments, a count out
	// of range, a malformed request (a RESP protocol error also closes
	// the connection).
	RequestErrors uint64
	// NotIssuing is the requests answered NOTISSUING: the node could not
	// issue keys (no worker id, shutting down, the generator's wait).
	NotIssuing uint64
	// Accepted and Refused are the RESP connections accepted and those
	// refused over Config.MaxClients; Open is those open now.
	Accepted, Refused uint64
	Open              int64
}

// Counts returns the counts so far (zero for a nil m).
func (m *Metrics) Counts() Counts {
	if m == nil {
		return Counts{}
	}
	return Counts{Requests: m.requests.Load(), Keys: m.keys.Load(), RequestErrors: m.requestErrors.Load(),
		NotIssuing: m.notIssuing.Load(), Accepted: m.accepted.Load(), Refused: m.refused.Load(), Open: m.open.Load()}
}

func (m *Metrics) request() {
	if m != nil {
		m.requests.Add(1)
	}
}

func (m *Metrics) requestError() {
	if m != nil {
		m.requestErrors.Add(1)
	}
}

func (m *Metrics) notIssued() {
	if m != nil {
		m.notIssuing.Add(1)
	}
}

// metered is the Source a port with Metrics serves from: it counts the
// keys issued, and carries the Metrics to every connection newConn makes,
// whichever loop makes it.
type metered struct {
	Source
	m *Metrics
}

// AppendIDs is the Source's, counting the keys it appended.
func (s metered) AppendIDs(ctx context.Context, dst []int64, count int) ([]int64, error) {
	out, err := s.Source.AppendIDs(ctx, dst, count)
	s.m.keys.Add(uint64(len(out) - len(dst)))
	return out, err
}

// withMetrics returns src counting into m, or src itself when m is nil.
func withMetrics(src Source, m *Metrics) Source {
	if m == nil {
		return src
	}
	return metered{Source: src, m: m}
}

// metricsOf returns the Metrics src counts into, or nil.
func metricsOf(src Source) *Metrics {
	if s, ok := src.(metered); ok {
		return s.m
	}
	return nil
}
