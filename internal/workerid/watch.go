package workerid

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Watch follows this holding's fence and reservation until ctx ends (then
// it returns ctx's error) or until either is changed by anyone else or
// disappears: then it returns an error wrapping ErrLost at once, and the
// caller must stop issuing. The holder's own writes (Reserve, Release) are
// recognised by the fence's epoch and holder. A lost watch is re-established
// and the current state checked again; other registry errors are returned
// as they are (the holding may still be valid: Reserve finds out).
func (h *Holding) Watch(ctx context.Context) error {
	fk, _ := paths.Fence(h.WorkerID)
	res, _ := paths.Reservation(h.WorkerID)
	errc := make(chan error, 2)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { errc <- h.follow(ctx, fk, h.checkFence) }()
	go func() { errc <- h.follow(ctx, res, h.checkReservation) }()
	err := <-errc
	cancel()
	if err2 := <-errc; !errors.Is(err, ErrLost) && errors.Is(err2, ErrLost) {
		return err2
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
