package registry

import (
	"context"
	"errors"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/retry"
)

// Follow keeps a consumer in step with every key under prefix until ctx
// ends, across lost watches. fn first receives the initial snapshot as
// EventPut events, then every change. When the backend loses the watch (or
// Watch fails), fn receives one Event with Err set and no key, Follow waits a
// short backoff, watches again and reconciles: keys that are new or changed
// arrive as EventPut, keys that vanished meanwhile as synthetic EventDelete.
// So a consumer that applies events in order always ends up with the
// registry's state. fn runs on the calling goroutine, one event at a time.
// Follow returns ctx.Err() when ctx ends, and an error wrapping ErrClosed
// when the repository is closed.
func Follow(ctx context.Context, r Repository, prefix string, fn func(Event)) error {
	return FollowFrom(ctx, r, prefix, nil, fn)
}

// FollowFrom is Follow for a consumer that already knows some keys under
// prefix, with their versions (a snapshot loaded before): the first
// watch's snapshot then yields only the keys that are new or changed, and
// synthetic deletes for known keys that are gone. FollowFrom takes
// ownership of known.
func FollowFrom(ctx context.Context, r Repository, prefix string, known map[string]Version, fn func(Event)) error {
	seen := known
	if seen == nil {
		seen = map[string]Version{}
	}
	attempt := 0 // failed Watch calls in a row
	for {
		initial, changes, err := r.Watch(ctx, prefix)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, ErrClosed) {
				return err
			}
			fn(Event{Err: err})
			if !retry.Sleep(ctx, followBackoff(attempt)) {
				return ctx.Err()
			}
			attempt++
			continue
		}
		attempt = 0
		present := make(map[string]Version, len(initial))
		for _, kv := range initial {
			present[kv.Key] = kv.Version
			if v, ok := seen[kv.Key]; !ok || v != kv.Version {
				fn(Event{Type: EventPut, KV: kv})
			}
		}
		for key := range seen {
			if _, ok := present[key]; !ok {
				fn(Event{Type: EventDelete, KV: KV{Key: key}})
			}
		}
		seen = present
		var lost error
		for ev := range changes {
			if ev.Err != nil {
				if ctx.Err() == nil {
					fn(ev)
				}
				lost = ev.Err
				continue // the channel closes right after
			}
			switch ev.Type {
			case EventPut:
				seen[ev.KV.Key] = ev.KV.Version
			case EventDelete:
				delete(seen, ev.KV.Key)
			}
			fn(ev)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(lost, ErrClosed) {
			return lost
		}
		if !retry.Sleep(ctx, followBackoff(attempt)) {
			return ctx.Err()
		}
	}
}

// followBackoff is the pause before watching again after attempt failed
// Watch calls in a row.
func followBackoff(attempt int) time.Duration {
	return retry.Backoff(attempt, 50*time.Millisecond, 5*time.Second)
}
