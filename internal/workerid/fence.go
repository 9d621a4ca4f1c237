package workerid

import (
	"encoding/json"
	"fmt"
)

// Fence is the persistent record of one worker id's write-ahead time
// reservation, at /reservation/worker_id_fence/{workerId}. It is changed
// only by compare-and-set. Every holder of the worker id issues only
// timestamps <= ReservedUntil as committed here, and a new holder starts
// strictly above the previous ReservedUntil, so the timestamp ranges of
// successive holders never overlap.
type Fence struct {
	// Epoch counts the holders: every claim advances it by one.
	Epoch int64 `json:"epoch"`
	// Holder is the instance id of the holder that wrote the record.
	Holder string `json:"holder"`
	// ReservedUntil is the last unix millisecond the holder may stamp keys
	// with. At a graceful release it is lowered to the last issued stamp.
	ReservedUntil int64 `json:"reservedUntil"`
}

func (f Fence) encode() []byte {
	b, _ := json.Marshal(f) // a struct of ints and a string cannot fail
	return b
}

func decodeFence(b []byte) (Fence, error) {
	var f Fence
	if err := json.Unmarshal(b, &f); err != nil {
		return Fence{}, fmt.Errorf("corrupt fence record %q: %w", b, err)
	}
	if f.Epoch < 1 || f.ReservedUntil < 0 {
		return Fence{}, fmt.Errorf("corrupt fence record %q: epoch must be >= 1 and reservedUntil >= 0", b)
	}
	return f, nil
}
