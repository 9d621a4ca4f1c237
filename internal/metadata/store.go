package metadata

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// WatchedPrefixes are the subtrees Run follows, one watch each.
var WatchedPrefixes = []string{paths.MetadataRoot, paths.GlobalRulesRoot, paths.PropsRoot, paths.StatesRoot, paths.QualifiedDataSourcesRoot}

// maxProblems bounds how many corrupt-value reports a Store keeps.
const maxProblems = 100

// Store holds a node's current metadata Snapshot and keeps it in step with
// the registry while Run is running. Current, Subscribe, Wait and Problems
// are safe for concurrent use; Run must be called at most once at a time.
type Store struct {
	repo registry.Repository
	log  *slog.Logger
	ap   *applier
	cur  atomic.Pointer[Snapshot]

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every publish
	subs     map[int]func(*Snapshot, []Change)
	nextSub  int
	problems []error
	running  atomic.Bool
	seeds    chan seedRequest // RuleKeys' requests, served by Run between batches
}

// seedRequest asks Run for what the Store holds of a database's rules.
type seedRequest struct {
	db    string
	reply chan<- seed
}

// seed is a database as the Store holds it and the rule keys it was
// decoded from, as of one batch.
type seed struct {
	d   *Database
	kvs []registry.KV
}

func newStore(repo registry.Repository, log *slog.Logger) *Store {
	if log == nil {
		log = slog.Default()
	}
	s := &Store{repo: repo, log: log, changed: make(chan struct{}), subs: map[int]func(*Snapshot, []Change){}, seeds: make(chan seedRequest)}
	s.ap = newApplier(repo, log, s.addProblem)
	s.cur.Store(emptySnapshot())
	return s
}

// Current returns the latest snapshot. It never returns nil and never
// blocks.
func (s *Store) Current() *Snapshot { return s.cur.Load() }

// Subscribe calls fn after every published change with the new snapshot
// and what changed, on Run's goroutine: fn must be quick and must not call
// Subscribe or cancel. cancel stops the calls.
func (s *Store) Subscribe(fn func(snap *Snapshot, changes []Change)) (cancel func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextSub
	s.nextSub++
	s.subs[id] = fn
	return func() {
		s.mu.Lock()
		delete(s.subs, id)
		s.mu.Unlock()
	}
}

// Wait returns the first snapshot (the current one included) for which cond
// holds, or ctx's error when ctx ends first.
func (s *Store) Wait(ctx context.Context, cond func(*Snapshot) bool) (*Snapshot, error) {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if snap := s.Current(); cond(snap) {
			return snap, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

// Problems returns the latest corrupt values found in the registry (at most
// 100), each naming its key. They were skipped.
func (s *Store) Problems() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.problems...)
}

func (s *Store) addProblem(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.problems) == maxProblems {
		s.problems = s.problems[1:]
	}
	s.problems = append(s.problems, err)
}

// publish swaps in the draft if it changed anything and notifies.
func (s *Store) publish(d *draft) {
	if len(d.changes) == 0 {
		return
	}
	d.s.Seq = s.Current().Seq + 1
	s.cur.Store(d.s)
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	subs := make([]func(*Snapshot, []Change), 0, len(s.subs))
	for _, fn := range s.subs {
		subs = append(subs, fn)
	}
	s.mu.Unlock()
	for _, fn := range subs {
		fn(d.s, d.changes)
	}
}

// load reads every watched prefix once and publishes the result.
func (s *Store) load(ctx context.Context) error {
	var events []registry.Event
	for _, prefix := range WatchedPrefixes {
		kvs, err := snapshotOf(ctx, s.repo, prefix)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			events = append(events, registry.Event{Type: registry.EventPut, KV: kv})
		}
	}
	d := newDraft(s.Current())
	s.ap.apply(ctx, d, events, false)
	s.publish(d)
	return nil
}

// snapshotOf returns every key at or under prefix: the prefix's own key,
// then a List of its subtree (one range read on etcd; pipelined reads on
// ZooKeeper, which arm no watches). Run's watches reconcile whatever
// changes between these reads and their own.
func snapshotOf(ctx context.Context, repo registry.Repository, prefix string) ([]registry.KV, error) {
	var kvs []registry.KV
	kv, err := repo.Get(ctx, prefix)
	switch {
	case err == nil:
		kvs = append(kvs, kv)
	case !errors.Is(err, registry.ErrNotFound):
		return nil, err
	}
	below, err := repo.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	return append(kvs, below...), nil
}

// Run keeps Current in step with the registry until ctx ends, with one
// watch per prefix in WatchedPrefixes. Events are applied in batches: each
// batch becomes one new snapshot. After a lost watch it watches again and
// reconciles, emitting deletes for keys that vanished meanwhile. It returns
// ctx.Err() when ctx ends.
func (s *Store) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		panic("metadata: Store.Run called twice at once")
	}
	defer s.running.Store(false)
	q := newQueue()
	seen := make([]map[string]registry.Version, len(WatchedPrefixes))
	for i, prefix := range WatchedPrefixes {
		seen[i] = map[string]registry.Version{}
		for key, kv := range s.ap.mirror {
			if registry.IsUnder(key, prefix) {
				seen[i][key] = kv.Version
			}
		}
	}
	var wg sync.WaitGroup
	for i, prefix := range WatchedPrefixes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = registry.FollowFrom(ctx, s.repo, prefix, seen[i], q.push)
		}()
	}
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case req := <-s.seeds:
			req.reply <- s.seedOf(req.db)
			continue
		case <-q.wake:
		}
		batch := q.drain()
		for _, ev := range batch {
			if ev.Err != nil {
				s.log.Warn("metadata: watch lost; resyncing", "err", ev.Err)
			}
		}
		d := newDraft(s.Current())
		s.ap.apply(ctx, d, batch, true)
		s.publish(d)
	}
}

// maxSeedWait bounds how long RuleKeys waits for Run to finish the batch
// it is applying.
const maxSeedWait = time.Second

// RuleKeys returns database db as the Store holds it (its rules; no
// schemas) and the keys under /metadata/{db}/rules it was decoded from,
// sorted by key, both as of one applied batch: what a RuleCache starts
// from instead of reading and decoding every rule item again (see
// NewStoreRuleCache). The Database is shared: it must not be modified. ok
// is false when Run is not running, db is not held (or is being dropped),
// or Run did not answer within maxSeedWait or before ctx ended.
func (s *Store) RuleKeys(ctx context.Context, db string) (d *Database, kvs []registry.KV, ok bool) {
	if !s.running.Load() {
		return nil, nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, maxSeedWait)
	defer cancel()
	reply := make(chan seed, 1)
	select {
	case s.seeds <- seedRequest{db: db, reply: reply}:
	case <-ctx.Done():
		return nil, nil, false
	}
	select {
	case got := <-reply:
		return got.d, got.kvs, got.d != nil
	case <-ctx.Done():
		return nil, nil, false
	}
}

// seedOf is RuleKeys' answer, on Run's goroutine between batches.
func (s *Store) seedOf(db string) seed {
	held := s.Current().Databases[db]
	key, err := paths.Database(db)
	if held == nil || err != nil || s.ap.hidden[db] || s.ap.dropAnnounced(db) {
		return seed{}
	}
	prefix := key + "/rules/"
	var kvs []registry.KV
	for k, kv := range s.ap.mirror {
		if strings.HasPrefix(k, prefix) {
			kvs = append(kvs, kv)
		}
	}
	slices.SortFunc(kvs, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) })
	d := *held
	d.Schemas = nil
	return seed{d: &d, kvs: kvs}
}

// queue is an unbounded FIFO of events with a wake-up signal.
type queue struct {
	mu     sync.Mutex
	events []registry.Event
	wake   chan struct{}
}

func newQueue() *queue { return &queue{wake: make(chan struct{}, 1)} }

func (q *queue) push(ev registry.Event) {
	q.mu.Lock()
	q.events = append(q.events, ev)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue) drain() []registry.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.events
	q.events = nil
	return out
}
