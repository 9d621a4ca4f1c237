package memory

import (
	"context"
	"slices"
	"sort"
	"sync"

	"github.com/shardkeeper/shardkeeper/registry"
)

// watcher queues events without bound so writers never block on a slow
// consumer; one goroutine per watch delivers them in order.
type watcher struct {
	prefix string
	mu     sync.Mutex
	queue  []registry.Event
	wake   chan struct{}
	ended  bool
}

// Watch implements registry.Repository.
func (r *Repo) Watch(ctx context.Context, prefix string) ([]registry.KV, <-chan registry.Event, error) {
	if err := r.check(ctx, "watch", prefix); err != nil {
		return nil, nil, err
	}
	w := &watcher{prefix: prefix, wake: make(chan struct{}, 1)}
	r.st.mu.Lock()
	var initial []registry.KV
	for k, e := range r.st.kv {
		if registry.IsUnder(k, prefix) {
			initial = append(initial, registry.KV{Key: k, Value: slices.Clone(e.value), Version: registry.Version(e.version)})
		}
	}
	r.st.watchers[w] = struct{}{}
	r.st.mu.Unlock()
	sort.Slice(initial, func(i, j int) bool { return initial[i].Key < initial[j].Key })

	r.mu.Lock()
	r.watchs[w] = struct{}{}
	r.mu.Unlock()

	out := make(chan registry.Event)
	go func() {
		defer close(out)
		defer func() {
			r.st.mu.Lock()
			delete(r.st.watchers, w)
			r.st.mu.Unlock()
			r.mu.Lock()
			delete(r.watchs, w)
			r.mu.Unlock()
		}()
		for {
			w.mu.Lock()
			batch := w.queue
			w.queue = nil
			ended := w.ended
			w.mu.Unlock()
			for _, ev := range batch {
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
				if ev.Err != nil {
					return
				}
			}
			if ended && len(batch) == 0 {
				return
			}
			select {
			case <-w.wake:
			case <-ctx.Done():
				return
			}
		}
	}()
	return initial, out, nil
}

// notify queues ev for every watcher whose prefix covers it. Called with
// st.mu held, so all watchers see writes in the store's order.
func (st *store) notify(ev registry.Event) {
	for w := range st.watchers {
		if registry.IsUnder(ev.KV.Key, w.prefix) {
			w.push(ev)
		}
	}
}

func (w *watcher) push(ev registry.Event) {
	w.mu.Lock()
	if !w.ended {
		w.queue = append(w.queue, ev)
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// lose ends the watch with a final error event.
func (w *watcher) lose(err error) {
	w.mu.Lock()
	if !w.ended {
		w.queue = append(w.queue, registry.Event{Err: err})
		w.ended = true
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}
