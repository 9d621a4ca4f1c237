package workerid

import (
	"encoding/json"
	"fmt"
	"time"
)

// Fence is the persistent record of one worker id's write-ahead time
// reservation, at /reservation/worker_id_fence/{workerId}. It is changed
// only by compare-and-set. Every holder of the worker id issues only
// timestamps <= ReservedUntil as committed here, and a new holder starts
// strictly above the previous ReservedUntil, so the timestamp ranges of
// successive holders never overlap.
type Fence struct {
	// Epoch counts the holders: every claim advances it by one. A fence
	// created with the cluster's ledger, never claimed, has epoch 0. A
	// claim of a worker id whose fence was missing or corrupt starts it
	// again at the claim's unix millisecond, so that it does not repeat an
	// epoch of an earlier holder.
	Epoch int64 `json:"epoch"`
	// Holder is the instance id of the holder that wrote the record.
	Holder string `json:"holder"`
	// ReservedUntil is the last unix millisecond the holder may stamp keys
	// with. At a graceful release it is lowered to the last issued stamp.
	ReservedUntil int64 `json:"reservedUntil"`
}

const (
	// MaxReservation bounds how far ahead of its own clock a holder may
	// reserve time (cluster.Config.Reservation).
	MaxReservation = time.Minute
	// MaxClockSkew is the documented bound on the difference between two
	// nodes' clocks. A worker id whose fence is missing or corrupt is
	// claimed with the floor now + MaxReservation + MaxClockSkew: above
	// anything a previous holder whose clock was within this bound of ours
	// may have stamped.
	MaxClockSkew = 5 * time.Second
	// unknownFloorAhead is how far ahead of now an unknown floor lies.
	unknownFloorAhead = MaxReservation + MaxClockSkew
	// maxFenceAhead: a fence reserved further ahead of the reader's clock
	// than this is corrupt (no holder within the clock skew bound wrote it).
	maxFenceAhead = 24 * time.Hour
	// maxReservedUntil is the last unix millisecond a key can carry with
	// ShardingSphere's epoch (2016-11-01) and 41 time bits, in 2086.
	maxReservedUntil = 1477958400000 + 1<<41 - 1
	// maxEpoch keeps epoch+1 far from overflow.
	maxEpoch = 1 << 62
)

func (f Fence) encode() []byte {
	b, _ := json.Marshal(f) // a struct of ints and a string cannot fail
	return b
}

// DecodeFence parses a fence record. Out-of-range values (a negative or
// huge epoch, a reservation below 0 or past 2086) make it corrupt.
func DecodeFence(b []byte) (Fence, error) { return decodeFence(b) }

func decodeFence(b []byte) (Fence, error) {
	var f Fence
	if err := json.Unmarshal(b, &f); err != nil {
		return Fence{}, fmt.Errorf("corrupt fence record %q: %w", b, err)
	}
	if f.Epoch < 0 || f.Epoch > maxEpoch || f.ReservedUntil < 0 || f.ReservedUntil > maxReservedUntil {
		return Fence{}, fmt.Errorf("corrupt fence record %q: epoch must be in [0, 2^62] and reservedUntil in [0, %d]", b, int64(maxReservedUntil))
	}
	return f, nil
}

// ledgerRecord is the value of the ledger (/reservation/worker_id_ledger).
type ledgerRecord struct {
	// CreatedBy is the instance that created the fences and the ledger.
	CreatedBy string `json:"createdBy"`
	// CreatedAt is the unix millisecond of its creation.
	CreatedAt int64 `json:"createdAt"`
	// AbsentFloor is the reservation given to the fences it created: 0 on
	// a cluster that had never issued keys, else an unknown floor.
	AbsentFloor int64 `json:"absentFloor"`
}
