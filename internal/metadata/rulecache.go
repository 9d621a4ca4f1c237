package metadata

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule/sharding"
	"github.com/shardkeeper/shardkeeper/registry"
)

// RuleCache keeps, for the databases read through it, the database last
// decoded and the rule keys it was decoded from, so that the next
// ReadDatabase decodes only the rule keys that changed since (see
// DecodeChanges) instead of every rule item. Where the registry replays
// its history (etcd) it replays the writes since its last read; where it
// lists by revision (registry.ChangeLister: memory; ZooKeeper over the
// memo of its List cache, which re-reads only the znodes whose watches
// fired) it reads only what changed since its last read, and learns of
// deletions by the count: reading a database of thousands of sharding
// tables then costs what changed, its keys being brought forward as
// RuleKeys (an overlay of what changed over a shared base:
// RuleKeys.With). Elsewhere it lists the
// rules and compares their keys. It holds at most MaxCachedDatabases
// databases. The zero value is not usable; a nil *RuleCache reads without
// one. Safe for concurrent use.
type RuleCache struct {
	mu    sync.Mutex
	dbs   map[string]cachedDatabase
	store *Store // what a first read starts from; nil reads the registry
}

type cachedDatabase struct {
	d     *Database
	kvs   RuleKeys
	rev   registry.Version
	names sharding.Tally // of d's sharding rule
}

// maxChangedKeys bounds the keys a RuleCache reads as changed since its
// last read; more, and it lists the rules whole.
const maxChangedKeys = 1000

// RuleRead is a database as RuleCache.Read read it: the database (its
// units and rules; shared, not to be modified), the keys under
// /metadata/{db}/rules it was decoded from, and the revision they were
// read at (0 when the registry does not list by revision).
type RuleRead struct {
	DB      *Database
	Keys    RuleKeys
	rev     registry.Version
	names   sharding.Tally
	counted bool // names is kept (a read through a cache)
}

// ShardingNames is how many names the expressions of the sharding rule
// read stand for (sharding.Tally of DB's sharding rule), kept from read
// to read by recounting only the tables that changed: what the rule's
// name bound needs of the rule as read (rule.Database.BeforeNames). A
// read without a cache (a nil *RuleCache) keeps no count: 0.
func (r RuleRead) ShardingNames() int { return r.names.Total() }

// ShardingUses counts the references by name of the sharding rule read
// (sharding.Tally.Uses), kept from read to read as ShardingNames is:
// what rule.Database.BeforeUses hands a change and its check. A read
// without a cache keeps no count: nil.
func (r RuleRead) ShardingUses() func(section, name string) int {
	if !r.counted {
		return nil
	}
	return r.names.Uses
}

// ShardingNotPlain is how many table names of the sharding rule read are
// not plain, by section (sharding.Tally.NotPlain: a new map), kept from
// read to read as ShardingNames is: what a change needs to find a table
// by name in any case without a scan (rule.Database.ShardingNotPlain).
// A read without a cache keeps no count: nil.
func (r RuleRead) ShardingNotPlain() map[string]int {
	if !r.counted {
		return nil
	}
	return r.names.NotPlain()
}

// MaxCachedDatabases bounds the databases a RuleCache keeps.
const MaxCachedDatabases = 64

// NewRuleCache returns an empty RuleCache.
func NewRuleCache() *RuleCache {
	return &RuleCache{dbs: map[string]cachedDatabase{}}
}

// NewStoreRuleCache returns an empty RuleCache whose first read of a
// database starts from what the node's store holds of it
// (Store.RuleKeys: the database it decoded and the keys, as of one
// batch), then reads what changed since, where the registry lists by
// revision: a node's first rule statement next to thousands of tables
// does not read and decode them all again. Without an answer from the
// store it reads the registry as NewRuleCache's does. A nil store is
// NewRuleCache.
func NewStoreRuleCache(store *Store) *RuleCache {
	c := NewRuleCache()
	c.store = store
	return c
}

// ReadDatabase is metadata.ReadDatabase (the same reads, result and
// errors) with the rules decoded from what changed since the cache's last
// read of db. The Database returned may be shared with other reads: it
// must not be modified, nor the keys (sorted by key). ctx bounds the
// reads. Unlike Read, it materializes the keys as one slice
// (RuleKeys.Sorted): O(number of rule keys) once per version read.
func (c *RuleCache) ReadDatabase(ctx context.Context, repo registry.Repository, db string) (*Database, []registry.KV, error) {
	r, err := c.Read(ctx, repo, db)
	return r.DB, r.Keys.Sorted(), err
}

// Read is ReadDatabase, with the revision of the rules read, for After.
func (c *RuleCache) Read(ctx context.Context, repo registry.Repository, db string) (RuleRead, error) {
	if c == nil {
		d, kvs, err := ReadDatabase(ctx, repo, db)
		return RuleRead{DB: d, Keys: NewRuleKeys(kvs)}, err // no count kept (ShardingNames)
	}
	key, units, err := readUnits(ctx, repo, db)
	if err != nil {
		return RuleRead{}, err
	}
	c.mu.Lock()
	prev, ok := c.dbs[db]
	c.mu.Unlock()
	if !ok && c.store != nil {
		if d, kvs, seeded := c.store.RuleKeys(ctx, db); seeded {
			prev, ok = cachedDatabase{d: d, kvs: NewRuleKeys(kvs), rev: listedRev(repo, kvs), names: shardingTally(d)}, true
		}
	}
	var cur cachedDatabase
	if ok {
		if cur, _, err = follow(ctx, repo, key+"/rules", prev, nil, registry.ReplayBound{Barrier: paths.RulesReadBarrier}, nil); err != nil { // cur.d nil: not followed
			return RuleRead{}, err
		}
	}
	if cur.d == nil {
		rules, rev, err := readRulesToFollow(ctx, repo, key+"/rules")
		if err != nil {
			return RuleRead{}, err
		}
		cur = cachedDatabase{kvs: NewRuleKeys(rules), rev: rev}
		if ok {
			cur.d = DecodeChanges(prev.d, prev.kvs.Sorted(), rules)
		} else if cur.d = decode(db, rules); cur.d == nil {
			cur.d = &Database{Name: db, Rules: map[string]config.Rule{}, summed: true}
		}
		cur.names = shardingTally(cur.d)
	}
	c.keep(db, cur)
	out := *cur.d
	out.Units = map[string]config.DataSource{}
	if u := decode(db, units); u != nil && u.Units != nil {
		out.Units = u.Units
	}
	return RuleRead{DB: &out, Keys: cur.kvs, rev: cur.rev, names: cur.names, counted: true}, nil
}

// After returns the database of r (a Read) as the registry holds it after
// a committed transaction of ops over r.Keys, committed at version
// committed (0 when not known): the rules read again, since another
// change (of another rule) may have added items between the read and the
// commit, which the transaction's conditions do not cover. Where the
// registry replays its history (etcd) it replays what was written since r
// up to the commit, exactly the registry's state after it; where it
// lists by revision it reads only what changed since r (the
// transaction's writes, and anything else); either way it keeps the
// result for the next Read. When that read fails it is r with ops
// applied. Only the keys that changed are decoded, and the keys' list is
// brought forward by RuleKeys.With, so that it costs what the change
// changed (amortized), not the number of rule keys; only the fallbacks
// (a registry that neither replays nor lists by revision, a failed read)
// list or copy every key. built, when not nil, is the change's result
// that the caller gives up (Built): the written items are then applied
// to its field maps in place rather than to copies of the rule read's,
// with the same result.
func (c *RuleCache) After(ctx context.Context, repo registry.Repository, r RuleRead, ops []registry.Op, committed registry.Version, built *Built) *Database {
	key, err := paths.Database(r.DB.Name)
	if err != nil {
		return DecodeChanges(r.DB, r.Keys.Sorted(), AfterOps(r.Keys.Sorted(), ops))
	}
	if c != nil {
		var deleted []string
		for _, op := range ops {
			if op.Delete {
				deleted = append(deleted, op.Key)
			}
		}
		read := cachedDatabase{d: r.DB, kvs: r.Keys, rev: r.rev, names: r.names}
		upTo := registry.ReplayBound{Through: committed, Barrier: paths.RulesReadBarrier}
		if cur, followed, err := follow(ctx, repo, key+"/rules", read, deleted, upTo, built); err == nil && followed {
			c.keep(r.DB.Name, cur)
			return cur.d
		}
	}
	now, err := ReadRules(ctx, repo, r.DB.Name)
	if err != nil {
		now = AfterOps(r.Keys.Sorted(), ops)
	}
	return DecodeChanges(r.DB, r.Keys.Sorted(), now)
}

// follow returns base (a database, the rule keys under prefix it was
// decoded from, and the revision they were read at)
// brought to what the registry holds now, or up to upTo.Through, with
// deleted (the caller's own deletions since base) gone: only the keys
// written since base.rev are read and decoded. Where the registry
// replays its history (registry.ReplayChanges, up to upTo) it replays the
// writes since base.rev; otherwise, where it lists by revision, it reads
// the keys written since and learns of deletions by the count. followed
// is false, with no error, when the registry does neither, more than
// maxChangedKeys keys changed, or the count shows a deletion that
// deleted does not name: the caller then lists the rules whole. The
// keys are brought forward with RuleKeys.With: it costs what changed,
// not the number of keys.
func follow(ctx context.Context, repo registry.Repository, prefix string, base cachedDatabase, deleted []string, upTo registry.ReplayBound, built *Built) (cur cachedDatabase, followed bool, err error) {
	if base.rev == 0 {
		return cachedDatabase{}, false, nil
	}
	rp, replayed, err := registry.ReplayChanges(ctx, repo, prefix, base.rev, upTo, maxChangedKeys)
	if err != nil {
		return cachedDatabase{}, false, err
	}
	if replayed {
		return replay(base, rp, built), true, nil
	}
	ch, listed, err := registry.ListChanged(ctx, repo, prefix, base.rev, maxChangedKeys)
	if err != nil || !listed || ch.Truncated {
		return cachedDatabase{}, false, err
	}
	if len(ch.KVs) == 0 && len(deleted) == 0 && ch.Count == base.kvs.Len() {
		return cachedDatabase{d: base.d, kvs: base.kvs, rev: ch.Rev, names: base.names}, true, nil // nothing changed
	}
	kvs := base.kvs.With(deleted, ch.KVs)
	if kvs.Len() != ch.Count {
		return cachedDatabase{}, false, nil
	}
	events := putEvents(deleted, ch.KVs)
	d := applyRuleEvents(base.d, keysOfNodes(base.kvs, events), events, built)
	return cachedDatabase{d: d, kvs: kvs, rev: ch.Rev, names: recountSharding(base.names, base.d, d, events)}, true, nil
}

// replay is base brought to rp.Rev by rp's events, every write below
// the rules since base.rev: each key as its last event left it.
func replay(base cachedDatabase, rp registry.Replayed, built *Built) cachedDatabase {
	if len(rp.Events) == 0 {
		return cachedDatabase{d: base.d, kvs: base.kvs, rev: rp.Rev, names: base.names}
	}
	last := map[string]registry.Event{}
	for _, ev := range rp.Events {
		last[ev.KV.Key] = ev
	}
	var deleted []string
	var changed []registry.KV
	for k, ev := range last {
		switch {
		case ev.Type == registry.EventPut:
			changed = append(changed, ev.KV)
		case base.kvs.Has(k):
			deleted = append(deleted, k)
		}
	}
	slices.SortFunc(changed, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) })
	events := putEvents(deleted, changed)
	d := applyRuleEvents(base.d, keysOfNodes(base.kvs, events), events, built)
	return cachedDatabase{d: d, kvs: base.kvs.With(deleted, changed), rev: rp.Rev, names: recountSharding(base.names, base.d, d, events)}
}

// shardingTally counts the sharding rule of d (sharding.TallyOf).
func shardingTally(d *Database) sharding.Tally {
	return sharding.TallyOf(d.Rules[sharding.Type].Content)
}

// recountSharding is names, the sharding.Tally of before's sharding rule,
// recounted for after, which events (rule keys written or deleted) made
// of before: only the tables they name are recounted; an event of the
// rule that names no table (the rule's own node, an item without a name)
// recounts the whole rule.
func recountSharding(names sharding.Tally, before, after *Database, events []registry.Event) sharding.Tally {
	tables := map[[2]string]bool{}
	for _, ev := range events {
		k, ok := paths.ParseKey(ev.KV.Key)
		if !ok || k.RuleType != sharding.Type {
			continue
		}
		if k.Kind != paths.KindRuleItem || k.ItemName == "" {
			return shardingTally(after)
		}
		tables[[2]string{camel(k.RuleItem), k.ItemName}] = true
	}
	old, next := before.Rules[sharding.Type].Content, after.Rules[sharding.Type].Content
	for t := range tables {
		names = names.Table(old, next, t[0], t[1])
	}
	return names
}

// keep stores cur as db's, unless the cache holds a later read of db.
func (c *RuleCache) keep(db string, cur cachedDatabase) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.dbs[db]; ok && prev.rev != 0 && cur.rev != 0 && prev.rev > cur.rev {
		return
	}
	if _, ok := c.dbs[db]; !ok && len(c.dbs) >= MaxCachedDatabases {
		for name := range c.dbs {
			delete(c.dbs, name) // any one: the cache only saves decoding
			break
		}
	}
	c.dbs[db] = cur
}

// readRulesToFollow lists prefix whole, as a RuleCache that follows it
// reads it: with List where it is one range read (etcd, memory, which
// page it), else through registry.ListChanged since nothing where the
// registry lists by revision (ZooKeeper, whose List cache then follows
// the prefix from this read on, instead of from a second full read);
// rev is the revision to follow it from (0 when the registry does not
// list by revision).
func readRulesToFollow(ctx context.Context, repo registry.Repository, prefix string) (kvs []registry.KV, rev registry.Version, err error) {
	if !registry.ListIsRangeRead(repo) {
		ch, listed, err := registry.ListChanged(ctx, repo, prefix, 0, math.MaxInt-1)
		if err != nil {
			return nil, 0, err
		}
		if listed && !ch.Truncated && len(ch.KVs) == ch.Count {
			return ch.KVs, ch.Rev, nil
		}
	}
	if kvs, err = repo.List(ctx, prefix); err != nil {
		return nil, 0, err
	}
	return kvs, listedRev(repo, kvs), nil
}

// listedRev is the revision a List of kvs on repo can be followed from
// with registry.ListChanged: its highest version (every write after the
// List is above it, and a deletion shows in the count), 0 when repo does
// not list by revision.
func listedRev(repo registry.Repository, kvs []registry.KV) registry.Version {
	if _, ok := repo.(registry.ChangeLister); !ok {
		return 0
	}
	var rev registry.Version
	for _, kv := range kvs {
		rev = max(rev, kv.Version)
	}
	return rev
}

// putEvents are the events that delete the keys deleted and write
// changed: the deletions first, so that a key deleted and written again
// is there.
func putEvents(deleted []string, changed []registry.KV) []registry.Event {
	events := make([]registry.Event, 0, len(deleted)+len(changed))
	for _, k := range deleted {
		events = append(events, registry.Event{Type: registry.EventDelete, KV: registry.KV{Key: k}})
	}
	for _, kv := range changed {
		events = append(events, registry.Event{Type: registry.EventPut, KV: kv})
	}
	return events
}

// keysOfNodes returns the keys of before that are at or under the item
// nodes events touch, or under another placement of their items: what
// applyRuleEvents reads of the keys before the events. It finds each
// node's keys by binary search (RuleKeys.Under), so that it costs the
// keys it returns, not a pass over before.
func keysOfNodes(before RuleKeys, events []registry.Event) map[string]registry.KV {
	nodes := map[string]bool{}
	for _, ev := range events {
		k, ok := paths.ParseKey(ev.KV.Key)
		if !ok || k.Node == "" {
			continue
		}
		nodes[k.Node] = true
		if all, err := paths.RuleItemPlacements(k.Database, k.RuleType, k.RuleItem, k.ItemName); err == nil {
			for _, n := range all {
				nodes[n] = true
			}
		}
	}
	out := map[string]registry.KV{}
	for n := range nodes {
		maps.Copy(out, before.Under(n))
	}
	return out
}
