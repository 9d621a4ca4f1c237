package httpapi

import (
	"sync"

	"github.com/shardkeeper/shardkeeper/cluster"
)

// maxHolderRecords bounds the worker-id history a server keeps.
const maxHolderRecords = 8192

// holderSlack is how far outside an observed holding a key's time may fall
// and still be attributed to it: the membership watch sees a claim or a
// release a little after it happened.
const holderSlack = 2000 // ms

// holders remembers which instance held which worker id when, as far as
// this node's membership view saw it (from its start on).
type holders struct {
	mu    sync.Mutex
	recs  []holderRec
	first bool // no observation yet
}

type holderRec struct {
	workerID int
	instance string
	from, to int64 // unix ms; from 0: held before this node started; to 0: still held
}

func newHolders() *holders { return &holders{first: true} }

// observe records the worker ids in list as held at now, and closes the
// holdings that ended.
func (h *holders) observe(list []cluster.Instance, now int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	from := now
	if h.first {
		from, h.first = 0, false
	}
	current := make(map[int]string, len(list))
	for _, inst := range list {
		if inst.WorkerID >= 0 {
			current[inst.WorkerID] = inst.ID
		}
	}
	open := make(map[int]bool, len(current))
	for i := range h.recs {
		r := &h.recs[i]
		if r.to != 0 {
			continue
		}
		if id, ok := current[r.workerID]; ok && id == r.instance {
			open[r.workerID] = true
			continue
		}
		r.to = now
	}
	for wid, id := range current {
		if !open[wid] {
			h.recs = append(h.recs, holderRec{workerID: wid, instance: id, from: from})
		}
	}
	if len(h.recs) > maxHolderRecords {
		h.recs = append(h.recs[:0:0], h.recs[len(h.recs)-maxHolderRecords:]...)
	}
}

// holderAt returns the instance that held workerID at unix ms t, or "" when
// this node does not know.
func (h *holders) holderAt(workerID int, t int64) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	best, bestDist := "", int64(-1)
	for _, r := range h.recs {
		if r.workerID != workerID {
			continue
		}
		// Distance of t outside [from, to]; 0 inside.
		var d int64
		switch {
		case r.from != 0 && t < r.from:
			d = r.from - t
		case r.to != 0 && t > r.to:
			d = t - r.to
		}
		if d > holderSlack {
			continue
		}
		if bestDist < 0 || d < bestDist {
			best, bestDist = r.instance, d
		}
	}
	return best
}
