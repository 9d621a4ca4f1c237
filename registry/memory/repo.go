// Package memory is an in-process registry backend for deterministic
// simulation tests. It is not a stand-in for etcd or ZooKeeper: the
// conformance suite runs against those real servers, and this backend passes
// the same suite so that simulations over it mean something.
//
// Semantics follow etcd: keys are flat (no implicit parent keys), versions
// come from one global revision counter (they never repeat), and a session
// lives until it or its client is closed, or it is expired with Expire.
// Session TTLs are not enforced by a clock; a simulation decides when a
// session expires.
package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Repo is a client of an in-memory store. Clients made with Clone share the
// store, as two processes share one registry. Safe for concurrent use.
type Repo struct {
	st       *store
	closed   atomic.Bool
	mu       sync.Mutex
	watchs   map[*watcher]struct{} // this client's watches
	sessions map[*session]struct{} // this client's sessions not ended yet
}

var _ registry.Repository = (*Repo)(nil)

type store struct {
	mu       sync.Mutex
	rev      int64
	kv       map[string]*entry
	watchers map[*watcher]struct{}
	locks    map[string]*lockState
	nextSess int64
}

type entry struct {
	value   []byte
	version int64
	owner   *session // nil for persistent keys
}

// New returns a client of a new, empty store. It does no I/O.
func New() *Repo {
	return newClient(&store{
		kv:       map[string]*entry{},
		watchers: map[*watcher]struct{}{},
		locks:    map[string]*lockState{},
	})
}

func newClient(st *store) *Repo {
	return &Repo{st: st, watchs: map[*watcher]struct{}{}, sessions: map[*session]struct{}{}}
}

// Clone returns another client of the same store, closed independently.
func (r *Repo) Clone() *Repo { return newClient(r.st) }

// DropWatches ends every watch opened through this client as a lost watch:
// each channel delivers a final event wrapping registry.ErrWatchLost.
func (r *Repo) DropWatches() {
	r.mu.Lock()
	ws := make([]*watcher, 0, len(r.watchs))
	for w := range r.watchs {
		ws = append(ws, w)
	}
	r.mu.Unlock()
	for _, w := range ws {
		w.lose(&registry.OpError{Op: "watch", Key: w.prefix, Err: registry.ErrWatchLost})
	}
}

// Close implements registry.Repository. It ends this client's watches, and
// its sessions as their Close would: their ephemerals and locks go at once.
func (r *Repo) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	r.mu.Lock()
	ws := make([]*watcher, 0, len(r.watchs))
	for w := range r.watchs {
		ws = append(ws, w)
	}
	ss := make([]*session, 0, len(r.sessions))
	for s := range r.sessions {
		ss = append(ss, s)
	}
	r.mu.Unlock()
	for _, s := range ss {
		s.end(fmt.Errorf("memory session %d: %w", s.id, registry.ErrClosed))
	}
	for _, w := range ws {
		w.lose(&registry.OpError{Op: "watch", Key: w.prefix, Err: registry.ErrClosed})
	}
	return nil
}

// check validates key and the client's state before an operation.
func (r *Repo) check(ctx context.Context, op, key string) error {
	if err := registry.ValidateKey(key); err != nil {
		return &registry.OpError{Op: op, Key: key, Err: err}
	}
	if r.closed.Load() {
		return &registry.OpError{Op: op, Key: key, Err: registry.ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return &registry.OpError{Op: op, Key: key, Err: err}
	}
	return nil
}

// MaxRequestBytes is the most one write carries (keys and values, see
// registry.Txn.Size), etcd's default request limit: a larger one is
// refused with registry.ErrTooLarge, as the real registries refuse it, so
// that simulations meet the same bound.
const MaxRequestBytes = 1536 << 10

// checkSize refuses a write of size bytes beyond MaxRequestBytes.
func (r *Repo) checkSize(op, key string, size int) error {
	return registry.CheckSize(op, key, size, MaxRequestBytes, "the memory registry's request limit (etcd's default)")
}

// write stores key under st.mu at a new revision and notifies watchers; it
// returns the new version.
func (st *store) write(key string, value []byte, owner *session) int64 {
	st.rev++
	st.writeAt(key, value, owner, st.rev)
	return st.rev
}

// writeAt stores key with version rev (a transaction writes all its keys at
// one revision).
func (st *store) writeAt(key string, value []byte, owner *session, rev int64) {
	if old, ok := st.kv[key]; ok && old.owner != nil && old.owner != owner {
		delete(old.owner.keys, key)
	}
	st.kv[key] = &entry{value: slices.Clone(value), version: rev, owner: owner}
	if owner != nil {
		owner.keys[key] = struct{}{}
	}
	st.notify(registry.Event{Type: registry.EventPut, KV: registry.KV{Key: key, Value: slices.Clone(value), Version: registry.Version(rev)}})
}

// remove deletes key under st.mu at a new revision and notifies watchers.
func (st *store) remove(key string) {
	if _, ok := st.kv[key]; !ok {
		return
	}
	st.rev++
	st.removeAt(key, st.rev)
}

func (st *store) removeAt(key string, rev int64) {
	e, ok := st.kv[key]
	if !ok {
		return
	}
	if e.owner != nil {
		delete(e.owner.keys, key)
	}
	delete(st.kv, key)
	st.notify(registry.Event{Type: registry.EventDelete, KV: registry.KV{Key: key, Version: registry.Version(rev)}})
}
