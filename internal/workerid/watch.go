package workerid

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Watch follows this holding's fence, its reservation
// (/reservation/worker_id/{id}) and its instance's worker_id node
// (/nodes/compute_nodes/worker_id/{instanceId}) until ctx ends (then it
// returns ctx's error) or until any of them disappears, the reservation or
// the worker_id node is written by anyone (even with the same value), or
// the fence gets another epoch or holder: then it returns an error wrapping
// ErrLost as soon as the registry delivers the change, and the caller must
// stop issuing. A ShardingSphere node on etcd
// reserves an id with a plain leased put that overwrites ours; this is how
// a holder learns of it before its next renewal. The holder's own writes
// (Reserve, Release) are recognised by the fence's epoch and holder. A lost
// watch is re-established and the current state checked again; other
// registry errors are returned as they are (the holding may still be
// valid: Reserve finds out).
func (h *Holding) Watch(ctx context.Context) error {
	fk, _ := paths.Fence(h.WorkerID)
	res, _ := paths.Reservation(h.WorkerID)
	node, _ := paths.WorkerID(h.InstanceID)
	follows := []struct {
		key   string
		check func(kv registry.KV, present bool) error
	}{{fk, h.checkFence}, {res, h.checkReservation}, {node, h.checkNode}}
	errc := make(chan error, len(follows))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, f := range follows {
		go func() { errc <- h.follow(ctx, f.key, f.check) }()
	}
	err := <-errc
	cancel()
	for range follows[1:] {
		if err2 := <-errc; !errors.Is(err, ErrLost) && errors.Is(err2, ErrLost) {
			err = err2
		}
	}
	return err
}

// follow watches key (exactly; not its name-prefix siblings) and calls
// check on its value after every change (present false: deleted) until
// check fails.
func (h *Holding) follow(ctx context.Context, key string, check func(kv registry.KV, present bool) error) error {
	for {
		initial, changes, err := h.repo.Watch(ctx, key)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("watch worker id %d: %w", h.WorkerID, err)
		}
		var cur registry.KV
		found := false
		for _, kv := range initial {
			if kv.Key == key {
				cur, found = kv, true
			}
		}
		if err := check(cur, found); err != nil {
			return err
		}
	events:
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case ev, ok := <-changes:
				switch {
				case !ok:
					if ctx.Err() != nil {
						return ctx.Err()
					}
					break events
				case ev.Err != nil:
					break events // lost: watch again and re-check
				case ev.KV.Key != key:
				case ev.Type == registry.EventDelete:
					return check(registry.KV{}, false)
				default:
					if err := check(ev.KV, true); err != nil {
						return err
					}
				}
			}
		}
	}
}

func (h *Holding) checkFence(kv registry.KV, present bool) error {
	if !present {
		return fmt.Errorf("worker id %d: %w: its fence was deleted", h.WorkerID, ErrLost)
	}
	f, err := decodeFence(kv.Value)
	if err != nil || f.Epoch != h.Epoch || f.Holder != h.InstanceID {
		return fmt.Errorf("worker id %d: %w: its fence was overwritten with %q", h.WorkerID, ErrLost, kv.Value)
	}
	return nil
}

func (h *Holding) checkReservation(kv registry.KV, present bool) error {
	if !present {
		return fmt.Errorf("worker id %d: %w: its reservation was deleted", h.WorkerID, ErrLost)
	}
	if kv.Version != h.resVersion || string(kv.Value) != h.InstanceID {
		return fmt.Errorf("worker id %d: %w: its reservation was overwritten with %q", h.WorkerID, ErrLost, kv.Value)
	}
	return nil
}

func (h *Holding) checkNode(kv registry.KV, present bool) error {
	if !present {
		return fmt.Errorf("worker id %d: %w: the worker_id node of %s was deleted", h.WorkerID, ErrLost, h.InstanceID)
	}
	if kv.Version != h.nodeVersion || string(kv.Value) != strconv.Itoa(h.WorkerID) {
		return fmt.Errorf("worker id %d: %w: the worker_id node of %s was overwritten with %q", h.WorkerID, ErrLost, h.InstanceID, kv.Value)
	}
	return nil
}
