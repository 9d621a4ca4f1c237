package cluster

import "sync/atomic"

// Stats are a node's counters since Open, for logs and metrics.
type Stats struct {
	WorkerID        int   // -1 while not issuing
	Issuing         bool  // the node holds a worker id with a reservation
	ReservedUntilMs int64 // last committed reservation (unix ms)
	Keys            int64 // keys issued
	Acquisitions    int64 // worker ids acquired (1 + re-acquisitions)
	Losses          int64 // worker ids lost (session or fence): issuing stopped
	Renewals        int64 // reservations committed
	RenewalFailures int64 // renewals with an unknown outcome
	Refused         int64 // key requests refused while not issuing
	Stalls          int64 // key requests that ran out of reserved time
	CorruptValues   int64 // registry values reported and skipped
	ClockStepsBack  int64 // steps back of the wall clock of at least ClockStepBack
}

type counters struct {
	keys, acquisitions, losses, renewals, renewalFailures, refused, stalls, clockStepsBack atomic.Int64
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	s := Stats{
		WorkerID:        n.WorkerID(),
		Issuing:         n.gen.Load() != nil,
		Keys:            n.stats.keys.Load(),
		Acquisitions:    n.stats.acquisitions.Load(),
		Losses:          n.stats.losses.Load(),
		Renewals:        n.stats.renewals.Load(),
		RenewalFailures: n.stats.renewalFailures.Load(),
		Refused:         n.stats.refused.Load(),
		Stalls:          n.stats.stalls.Load(),
		CorruptValues:   n.members.corrupt.Load(),
		ClockStepsBack:  n.stats.clockStepsBack.Load(),
	}
	if h := n.current.Load(); h != nil {
		s.ReservedUntilMs = h.h.ReservedUntil()
	}
	return s
}
