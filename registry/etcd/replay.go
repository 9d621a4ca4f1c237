package etcd

import (
	"context"
	"sort"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardkeeper/shardkeeper/registry"
)

// The bounds of a Repo's history (see history): the writes it keeps, and
// the bytes of their keys and values. Past either it forgets the oldest
// revisions, and a replay from before them lists instead.
const (
	historyWrites = 1 << 14
	historyBytes  = 16 << 20
)

// ReplayChanges implements registry.ChangeReplayer from the Repo's history
// of its namespace: one watch of the whole namespace, started by the
// first call (see historySince) and kept from then on, whose
// writes arrive as etcd commits them (a watch that catches up from a
// past revision waits for etcd's sync loop, up to 100 ms, each time; a
// running one does not). A replay then costs the writes made since, not
// the keys the prefix holds (a range read filtered by mod revision reads
// every key of the range on the server). With upTo.Barrier it first puts
// the barrier key (an empty value) and waits until the history holds
// that put: every write committed before the call is at or before it.
// With upTo.Through it waits until the history holds that revision. A
// watch delivers writes in revision order, a revision's writes together,
// so nothing before a write the history holds is missing from it. ok is
// false, with no error, when the history does not reach back to since
// (it started later, or forgot it; a compacted revision), when more than
// max writes below prefix were made since, and when the watch fails or
// the wait is cut off: the caller then lists instead. Only the barrier's
// write reports an error.
func (r *Repo) ReplayChanges(ctx context.Context, prefix string, since registry.Version, upTo registry.ReplayBound, max int) (registry.Replayed, bool, error) {
	c, cancel, err := r.begin(ctx, "list", prefix)
	if err != nil {
		return registry.Replayed{}, true, err
	}
	defer cancel()
	until := int64(upTo.Through)
	if until == 0 {
		if err := registry.ValidateKey(upTo.Barrier); err != nil {
			return registry.Replayed{}, true, &registry.OpError{Op: "put", Key: upTo.Barrier, Err: err}
		}
		resp, err := r.client.Put(c, r.full(upTo.Barrier), "")
		if err != nil {
			return registry.Replayed{}, true, r.convertError(ctx, "put", upTo.Barrier, err)
		}
		until = resp.Header.Revision
	}
	if until <= int64(since) {
		return registry.Replayed{}, false, nil
	}
	h := r.historySince(int64(since), until)
	if h == nil {
		return registry.Replayed{}, false, nil
	}
	events, ok := h.replay(c, prefix, int64(since), until, max)
	if !ok {
		return registry.Replayed{}, false, nil
	}
	return registry.Replayed{Events: events, Rev: registry.Version(until)}, true, nil
}

// historySince returns the Repo's history if it holds every write after
// since, starting one when none runs: from since+1 when until (a
// revision the caller waits for) is at most historyWrites revisions
// later, else from until+1 (a node's first statement on a database
// whose rules last changed long ago would otherwise fetch every write
// made since, to forget most of them), which serves the next call. nil
// when the history starts after since, or the Repo is closed.
func (r *Repo) historySince(since, until int64) *history {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	if h := r.history; h != nil && !h.ended() {
		if h.holds(since) {
			return h
		}
		return nil
	}
	floor := since
	if until-since > historyWrites {
		floor = until
	}
	h := &history{floor: floor, rev: floor, more: make(chan struct{})}
	r.history = h
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		h.follow(r, floor+1)
	}()
	if floor > since {
		return nil
	}
	return h
}

// follow watches r's namespace from revision from into h until the watch
// fails or r is closed, then ends h. It starts the watch itself, not
// under r.mu: starting one waits for the watch stream. A watch refused
// for a stale auth token moves the Repo's watches to a fresh stream (as
// Watch does), for the next history.
func (h *history) follow(r *Repo, from int64) {
	defer h.end()
	ctx, stop := context.WithCancel(r.ctx)
	defer stop()
	base, end := r.below("/")
	gen := r.streamGen.Load()
	for resp := range r.client.Watch(clientv3.WithRequireLeader(streamContext(ctx, gen)), base, clientv3.WithRange(end), clientv3.WithRev(from)) {
		if err := resp.Err(); err != nil || resp.Canceled || resp.CompactRevision != 0 {
			if isStaleToken(err) {
				r.streamGen.CompareAndSwap(gen, gen+1)
			}
			return
		}
		h.append(r, resp.Events)
	}
}

// history is what a Repo's watch of its namespace delivered: every write
// with a revision above floor, up to rev, in revision order (bounded by
// historyWrites and historyBytes: past them floor moves up). Safe for
// concurrent use.
type history struct {
	mu     sync.Mutex
	floor  int64 // every write after floor is held, up to rev
	rev    int64
	writes []historyWrite
	bytes  int
	done   bool          // the watch ended: nothing more arrives
	more   chan struct{} // closed, and replaced, when rev moves or the watch ends
}

type historyWrite struct {
	rev int64
	ev  registry.Event // its key the registry's, not etcd's
}

// append adds the writes of one watch response.
func (h *history) append(r *Repo, events []*clientv3.Event) {
	if len(events) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range events {
		ev := registry.Event{Type: registry.EventPut, KV: registry.KV{Key: r.strip(e.Kv.Key), Value: e.Kv.Value, Version: registry.Version(e.Kv.ModRevision)}}
		if e.Type == clientv3.EventTypeDelete {
			ev = registry.Event{Type: registry.EventDelete, KV: registry.KV{Key: ev.KV.Key}}
		}
		h.writes = append(h.writes, historyWrite{rev: e.Kv.ModRevision, ev: ev})
		h.bytes += len(ev.KV.Key) + len(ev.KV.Value)
		h.rev = e.Kv.ModRevision
	}
	// Forget the oldest revisions, whole, past the bounds.
	drop := 0
	for drop < len(h.writes) && (len(h.writes)-drop > historyWrites || h.bytes > historyBytes) {
		rev := h.writes[drop].rev
		for drop < len(h.writes) && h.writes[drop].rev == rev {
			h.bytes -= len(h.writes[drop].ev.KV.Key) + len(h.writes[drop].ev.KV.Value)
			drop++
		}
		h.floor = rev
	}
	if drop > 0 {
		// Reslice, not copy: append moves the live writes only when it
		// grows the array, so a full history costs O(1) a write.
		clear(h.writes[:drop]) // the forgotten values are not kept reachable
		h.writes = h.writes[drop:]
	}
	close(h.more)
	h.more = make(chan struct{})
}

// end records that the watch ended.
func (h *history) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	close(h.more)
	h.more = make(chan struct{})
}

func (h *history) ended() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.done
}

// holds reports whether h holds every write after since.
func (h *history) holds(since int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return since >= h.floor
}

// replay waits until h holds revision until, then returns its writes
// below prefix (strictly) with revisions in (since, until]; ok is false
// when h does not reach back to since, holds more than max of them, its
// watch ended first, or ctx ended first.
func (h *history) replay(ctx context.Context, prefix string, since, until int64, max int) ([]registry.Event, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.rev < until {
		if h.done {
			return nil, false
		}
		more := h.more
		h.mu.Unlock()
		select {
		case <-more:
		case <-ctx.Done():
			h.mu.Lock()
			return nil, false
		}
		h.mu.Lock()
	}
	if since < h.floor {
		return nil, false
	}
	var out []registry.Event
	for i := sort.Search(len(h.writes), func(i int) bool { return h.writes[i].rev > since }); i < len(h.writes) && h.writes[i].rev <= until; i++ {
		ev := h.writes[i].ev
		if ev.KV.Key == prefix || !registry.IsUnder(ev.KV.Key, prefix) {
			continue // strictly below prefix, as ListChanged
		}
		if out = append(out, ev); len(out) > max {
			return nil, false
		}
	}
	return out, true
}
