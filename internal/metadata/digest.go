package metadata

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/registry"
)

// RulesDigest is a digest of a database's rules that two nodes compute
// alike when they hold the same rules, whatever order they applied the
// items in. It combines one hash per entry of the rules' content, keyed by
// rule type, field and name: each named entry of a map field (a sharding
// table, an algorithm), each element of a list stored one node per element
// (binding tables, by the name its node has), each other field whole, and
// each rule type. The combination is a sum, so that a node updates it from
// the entries an item changes (see Database.RulesDigest) instead of
// hashing every rule again. It is "" for no rules.
func RulesDigest(rules map[string]config.Rule) string {
	var sum rulesSum
	for typ, r := range rules {
		sum.add(typ, r.Content, 1)
	}
	return sum.digest(len(rules))
}

// RulesDigest returns RulesDigest(d.Rules). A Database a Store built (and
// ReadDatabase's) carries it, updated item by item as the rules changed,
// so that it costs O(1) here; any other Database computes it. It is ""
// for a nil Database.
func (d *Database) RulesDigest() string {
	if d == nil {
		return ""
	}
	if !d.summed {
		return RulesDigest(d.Rules)
	}
	return d.rulesSum.digest(len(d.Rules))
}

// rulesSum is the sum, lane by lane modulo 2^64, of the hashes of the
// entries of a database's rules (see RulesDigest): adding and subtracting
// an entry's hash commute, so the sum does not depend on the order the
// entries came in.
type rulesSum [4]uint64

// add adds (sign 1) or subtracts (sign -1) the hashes of rule typ's
// presence and of every entry of its content.
func (s *rulesSum) add(typ string, content map[string]any, sign int) {
	s.entry(sign, typ, "", 't', "", nil)
	for f, v := range content {
		s.field(sign, typ, f, v)
	}
}

// field adds or subtracts the hashes of the entries of field f of rule
// typ, whose value is v.
func (s *rulesSum) field(sign int, typ, f string, v any) {
	switch x := v.(type) {
	case map[string]any:
		if has(namedFields, typ, f) {
			for name, e := range x {
				s.entry(sign, typ, f, 'm', name, e)
			}
			return
		}
	case []any:
		if has(keyListFields, typ, f) {
			for _, e := range x {
				text := fmt.Sprint(e)
				s.entry(sign, typ, f, 'l', bindingItemName(text), text)
			}
			return
		}
	}
	s.entry(sign, typ, f, 'u', "", v)
}

// named adds or subtracts the hash of the entry of field f of rule typ
// (content) that the item named name (not "") stands for: the map entry.
// It reports false, adding nothing, when the field is not a map of named
// entries (an edit of the item then changes the field as a whole: a list
// of binding tables is hashed again whole).
func (s *rulesSum) named(sign int, typ string, content map[string]any, f, name string) bool {
	if !has(namedFields, typ, f) {
		return false
	}
	v, ok := content[f]
	if !ok {
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if e, ok := m[name]; ok {
		s.entry(sign, typ, f, 'm', name, e)
	}
	return true
}

// entry adds or subtracts the hash of one entry: rule type, field, kind
// ('t' the rule's presence, 'm' a map entry, 'l' a list element, 'u' a
// whole field), name and value.
func (s *rulesSum) entry(sign int, typ, f string, kind byte, name string, v any) {
	h := sha256.New()
	w := bufio.NewWriterSize(h, 512)
	_, _ = w.WriteString(typ)
	_ = w.WriteByte(0)
	_, _ = w.WriteString(f)
	_ = w.WriteByte(0)
	_ = w.WriteByte(kind)
	_, _ = w.WriteString(name)
	_ = w.WriteByte(0)
	canonical(w, v)
	_ = w.Flush()
	var b [sha256.Size]byte
	h.Sum(b[:0])
	for i := range s {
		x := binary.LittleEndian.Uint64(b[8*i:])
		if sign < 0 {
			x = -x
		}
		s[i] += x
	}
}

// digest is the digest of a sum over n rule types: "" when n is 0.
func (s *rulesSum) digest(n int) string {
	if n == 0 {
		return ""
	}
	var b [32]byte
	for i, x := range s {
		binary.LittleEndian.PutUint64(b[8*i:], x)
	}
	sum := sha256.Sum256(b[:])
	return hex.EncodeToString(sum[:8])
}

// canonical writes v, a rule content value, in one encoding that does not
// depend on map order: a tag, then the value (strings and collections
// prefixed by their length, map entries by key).
func canonical(w *bufio.Writer, v any) {
	str := func(tag byte, s string) {
		_ = w.WriteByte(tag)
		_, _ = w.WriteString(strconv.Itoa(len(s)))
		_ = w.WriteByte(':')
		_, _ = w.WriteString(s)
	}
	switch x := v.(type) {
	case nil:
		_ = w.WriteByte('n')
	case string:
		str('s', x)
	case bool:
		str('b', strconv.FormatBool(x))
	case int:
		str('i', strconv.Itoa(x))
	case int64:
		str('i', strconv.FormatInt(x, 10))
	case uint64:
		str('i', strconv.FormatUint(x, 10))
	case float64:
		str('f', strconv.FormatFloat(x, 'g', -1, 64))
	case map[string]any:
		str('m', strconv.Itoa(len(x)))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			str('k', k)
			canonical(w, x[k])
		}
	case map[any]any:
		canonical(w, stringMap(x))
	case []any:
		str('l', strconv.Itoa(len(x)))
		for _, e := range x {
			canonical(w, e)
		}
	case []string:
		str('l', strconv.Itoa(len(x)))
		for _, e := range x {
			str('s', e)
		}
	default:
		str('x', fmt.Sprintf("%T:%v", x, x))
	}
}

// GlobalRulesDigest is RulesDigest for the global rules (by type, as a
// Snapshot's GlobalRules holds them): each rule in the encoding
// GlobalWrites writes. It is "" for no rules.
func GlobalRulesDigest(rules map[string]config.Rule) string {
	return digest(rules, func(w io.Writer, r config.Rule) {
		_, _ = w.Write(encodeGlobalRule(r))
		_, _ = io.WriteString(w, "\x00")
	})
}

// digest hashes rules in type order, each rule's type and then what
// encode writes of it; it is "" for no rules.
func digest(rules map[string]config.Rule, encode func(w io.Writer, r config.Rule)) string {
	if len(rules) == 0 {
		return ""
	}
	h := sha256.New()
	for _, typ := range slices.Sorted(maps.Keys(rules)) {
		_, _ = io.WriteString(h, typ+"\x00")
		encode(h, rules[typ])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ReadGlobalRules reads the global rules from the registry as a node's
// Store applies them, and the keys under /rules it read them from (see
// DecodeGlobalRules). ctx bounds the read.
func ReadGlobalRules(ctx context.Context, repo registry.Repository) (map[string]config.Rule, []registry.KV, error) {
	kvs, err := repo.List(ctx, paths.GlobalRulesRoot)
	if err != nil && !errors.Is(err, registry.ErrNotFound) {
		return nil, nil, err
	}
	return DecodeGlobalRules(kvs), kvs, nil
}

// DecodeGlobalRules decodes the global rules from kvs, keys under /rules,
// as a node's Store applies them; a corrupt rule is skipped.
func DecodeGlobalRules(kvs []registry.KV) map[string]config.Rule {
	return decodeAll(kvs).GlobalRules
}

// ReadDatabase reads database db's storage units and rules from the
// registry as a node's Store would apply them (no schemas), and the keys
// under /metadata/{db}/rules it read them from (see RuleWritesFrom,
// DecodeRules). It returns ErrNoDatabase (wrapped) when the database does
// not exist. ctx bounds the reads.
func ReadDatabase(ctx context.Context, repo registry.Repository, db string) (*Database, []registry.KV, error) {
	units, rules, err := readDatabaseKeys(ctx, repo, db)
	if err != nil {
		return nil, nil, err
	}
	d := decode(db, append(slices.Clip(units), rules...))
	if d == nil {
		d = &Database{Name: db, Rules: map[string]config.Rule{}, summed: true}
	}
	if d.Units == nil {
		d.Units = map[string]config.DataSource{}
	}
	return d, rules, nil
}

// ReadRules reads every key under /metadata/{db}/rules (see DecodeRules,
// RuleWritesFrom). ctx bounds the read.
func ReadRules(ctx context.Context, repo registry.Repository, db string) ([]registry.KV, error) {
	key, err := paths.Database(db)
	if err != nil {
		return nil, err
	}
	return repo.List(ctx, key+"/rules")
}

func decode(db string, kvs []registry.KV) *Database {
	return decodeAll(kvs).Databases[db]
}

// decodeAll is the snapshot a node's Store builds from kvs alone, corrupt
// values skipped without a word.
func decodeAll(kvs []registry.KV) *Snapshot {
	events := make([]registry.Event, 0, len(kvs))
	for _, kv := range kvs {
		events = append(events, registry.Event{Type: registry.EventPut, KV: kv})
	}
	ap := newApplier(nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	d := newDraft(emptySnapshot())
	ap.apply(context.Background(), d, events, false)
	return d.s
}

// DecodeRules decodes the rules of database db from kvs, keys under
// /metadata/{db}/rules as ReadDatabase reads them, as a node's Store applies
// them; a corrupt item is skipped, as the Store skips it.
func DecodeRules(db string, kvs []registry.KV) map[string]config.Rule {
	if d := decode(db, kvs); d != nil {
		return d.Rules
	}
	return nil
}

// DecodeChanges returns database base, decoded from before (keys under
// /metadata/{db}/rules, as ReadDatabase and ReadRules read them), as a
// node's Store holds it once those keys are now's: only the keys that
// differ (added, removed, or with another version or value) are decoded
// and applied, so that its cost is O(len(before)+len(now)) comparisons
// plus the decoding of what changed, and its RulesDigest is updated from
// the changed items. base is not modified; a corrupt item is skipped, as
// the Store skips it.
func DecodeChanges(base *Database, before, now []registry.KV) *Database {
	old := make(map[string]registry.KV, len(before))
	for _, kv := range before {
		old[kv.Key] = kv
	}
	var events []registry.Event
	present := make(map[string]bool, len(now))
	for _, kv := range now {
		present[kv.Key] = true
		if o, ok := old[kv.Key]; !ok || o.Version != kv.Version || !bytes.Equal(o.Value, kv.Value) {
			events = append(events, registry.Event{Type: registry.EventPut, KV: kv})
		}
	}
	for _, kv := range before {
		if !present[kv.Key] {
			events = append(events, registry.Event{Type: registry.EventDelete, KV: registry.KV{Key: kv.Key}})
		}
	}
	return applyRuleEvents(base, old, events)
}

// applyRuleEvents returns database base, decoded from the rule keys old
// (by key), with events applied as a node's Store applies them. base is
// not modified. The applier reads old for the nodes the events touch (and
// their items' other placements) only, which keysOfNodes finds.
func applyRuleEvents(base *Database, old map[string]registry.KV, events []registry.Event) *Database {
	if !base.summed || base.Rules == nil {
		c := *base
		if c.Rules == nil {
			c.Rules = map[string]config.Rule{}
		}
		c.rulesSum, c.summed = rulesSum{}, true
		for typ, r := range c.Rules {
			c.rulesSum.add(typ, r.Content, 1)
		}
		base = &c
	}
	if len(events) == 0 {
		return base
	}
	ap := newApplier(nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	ap.mirror = old
	// The versions base applied, for the nodes whose keys were only
	// deleted (the applier removes an item whose applied active version
	// goes); a node with a put is applied again whatever its version.
	put := map[string]bool{}
	for _, ev := range events {
		if k, ok := paths.ParseKey(ev.KV.Key); ok && ev.Type == registry.EventPut {
			put[k.Node] = true
		}
	}
	for _, ev := range events {
		k, ok := paths.ParseKey(ev.KV.Key)
		if !ok || k.Node == "" || put[k.Node] {
			continue
		}
		if av, ok := old[paths.ActiveVersion(k.Node)]; ok {
			if n, err := strconv.Atoi(strings.TrimSpace(string(av.Value))); err == nil {
				if _, ok := old[paths.Version(k.Node, n)]; ok {
					ap.active[k.Node] = n
				}
			}
		}
	}
	snap := emptySnapshot()
	snap.Databases[base.Name] = base
	d := newDraft(snap)
	ap.apply(context.Background(), d, events, false)
	if out := d.s.Databases[base.Name]; out != nil {
		return out
	}
	return &Database{Name: base.Name, Units: base.Units, Rules: map[string]config.Rule{}, Schemas: base.Schemas, summed: true}
}

// AfterOps returns kvs as they are once ops (of a committed transaction)
// applied: puts replace or add keys, deletes remove them.
func AfterOps(kvs []registry.KV, ops []registry.Op) []registry.KV {
	m := make(map[string]registry.KV, len(kvs)+len(ops))
	for _, kv := range kvs {
		m[kv.Key] = kv
	}
	for _, op := range ops {
		if op.Delete {
			delete(m, op.Key)
		} else {
			m[op.Key] = registry.KV{Key: op.Key, Value: op.Value}
		}
	}
	out := make([]registry.KV, 0, len(m))
	for _, kv := range m {
		out = append(out, kv)
	}
	slices.SortFunc(out, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// RuleCache keeps, for the databases read through it, the database last
// decoded and the rule keys it was decoded from, so that the next
// ReadDatabase decodes only the rule keys that changed since (see
// DecodeChanges) instead of every rule item. Where the registry lists by
// revision (registry.ChangeLister: etcd, memory) it reads only what
// changed since its last read, and learns of deletions by the count:
// reading a database of thousands of sharding tables then costs what
// changed and a copy of the keys' list. Elsewhere (ZooKeeper) it lists
// the rules and compares their keys. It holds at most MaxCachedDatabases
// databases. The zero value is not usable; a nil *RuleCache reads without
// one. Safe for concurrent use.
type RuleCache struct {
	mu    sync.Mutex
	dbs   map[string]cachedDatabase
	memos map[string]*rule.Memo
}

// Memo returns the rule.Memo of database db's checks, kept with the
// database (nil for a nil cache).
func (c *RuleCache) Memo(db string) *rule.Memo {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.memos[db]
	if !ok {
		if len(c.memos) >= MaxCachedDatabases {
			clear(c.memos)
		}
		m = rule.NewMemo()
		c.memos[db] = m
	}
	return m
}

type cachedDatabase struct {
	d   *Database
	kvs []registry.KV // sorted by key
	rev registry.Version
}

// maxChangedKeys bounds the keys a RuleCache reads as changed since its
// last read; more, and it lists the rules whole.
const maxChangedKeys = 1000

// RuleRead is a database as RuleCache.Read read it: the database (its
// units and rules; shared, not to be modified), the keys under
// /metadata/{db}/rules it was decoded from, sorted by key, and the
// revision they were read at (0 when the registry does not list by
// revision).
type RuleRead struct {
	DB  *Database
	KVs []registry.KV
	rev registry.Version
}

// MaxCachedDatabases bounds the databases a RuleCache keeps.
const MaxCachedDatabases = 64

// NewRuleCache returns an empty RuleCache.
func NewRuleCache() *RuleCache {
	return &RuleCache{dbs: map[string]cachedDatabase{}, memos: map[string]*rule.Memo{}}
}

// ReadDatabase is metadata.ReadDatabase (the same reads, result and
// errors) with the rules decoded from what changed since the cache's last
// read of db. The Database returned may be shared with other reads: it
// must not be modified. ctx bounds the reads.
func (c *RuleCache) ReadDatabase(ctx context.Context, repo registry.Repository, db string) (*Database, []registry.KV, error) {
	r, err := c.Read(ctx, repo, db)
	return r.DB, r.KVs, err
}

// Read is ReadDatabase, with the revision of the rules read, for After.
func (c *RuleCache) Read(ctx context.Context, repo registry.Repository, db string) (RuleRead, error) {
	if c == nil {
		d, kvs, err := ReadDatabase(ctx, repo, db)
		return RuleRead{DB: d, KVs: kvs}, err
	}
	key, err := paths.Database(db)
	if err != nil {
		return RuleRead{}, err
	}
	if err := requireDatabase(ctx, repo, db); err != nil {
		return RuleRead{}, err
	}
	units, err := repo.List(ctx, key+"/data_sources")
	if err != nil {
		return RuleRead{}, err
	}
	c.mu.Lock()
	prev, ok := c.dbs[db]
	c.mu.Unlock()
	var cur cachedDatabase
	if ok && prev.rev != 0 {
		ch, listed, err := registry.ListChanged(ctx, repo, key+"/rules", prev.rev, maxChangedKeys)
		if err != nil {
			return RuleRead{}, err
		}
		switch {
		case listed && len(ch.KVs) == 0 && ch.Count == len(prev.kvs) && !ch.Truncated:
			cur = cachedDatabase{d: prev.d, kvs: prev.kvs, rev: ch.Rev} // nothing changed
		case listed && !ch.Truncated:
			if kvs := mergeKVs(prev.kvs, nil, ch.KVs); len(kvs) == ch.Count {
				events := putEvents(nil, ch.KVs)
				cur = cachedDatabase{d: applyRuleEvents(prev.d, keysOfNodes(prev.kvs, events), events), kvs: kvs, rev: ch.Rev}
			}
		}
	}
	if cur.d == nil {
		rules, rev, err := readRulesToFollow(ctx, repo, key+"/rules")
		if err != nil {
			return RuleRead{}, err
		}
		cur = cachedDatabase{kvs: rules, rev: rev}
		if ok {
			cur.d = DecodeChanges(prev.d, prev.kvs, rules)
		} else if cur.d = decode(db, rules); cur.d == nil {
			cur.d = &Database{Name: db, Rules: map[string]config.Rule{}, summed: true}
		}
	}
	c.keep(db, cur)
	out := *cur.d
	out.Units = map[string]config.DataSource{}
	if u := decode(db, units); u != nil && u.Units != nil {
		out.Units = u.Units
	}
	return RuleRead{DB: &out, KVs: cur.kvs, rev: cur.rev}, nil
}

// After returns the database of r (a Read) as the registry holds it after
// a committed transaction of ops over r.KVs: the rules read again, since
// another change (of another rule) may have added items between the read
// and the commit, which the transaction's conditions do not cover. Where
// the registry lists by revision it reads only what changed since r (the
// transaction's writes, and anything else), and keeps the result for the
// next Read; when that read fails it is r with ops applied. Only the keys
// that changed are decoded, so that it costs what the change changed plus
// a copy of the keys' list.
func (c *RuleCache) After(ctx context.Context, repo registry.Repository, r RuleRead, ops []registry.Op) *Database {
	key, err := paths.Database(r.DB.Name)
	if err != nil {
		return DecodeChanges(r.DB, r.KVs, AfterOps(r.KVs, ops))
	}
	if c != nil && r.rev != 0 {
		ch, listed, err := registry.ListChanged(ctx, repo, key+"/rules", r.rev, maxChangedKeys)
		if err == nil && listed && !ch.Truncated {
			var deleted []string
			for _, op := range ops {
				if op.Delete {
					deleted = append(deleted, op.Key)
				}
			}
			if kvs := mergeKVs(r.KVs, deleted, ch.KVs); len(kvs) == ch.Count {
				events := putEvents(deleted, ch.KVs)
				d := applyRuleEvents(r.DB, keysOfNodes(r.KVs, events), events)
				c.keep(r.DB.Name, cachedDatabase{d: d, kvs: kvs, rev: ch.Rev})
				return d
			}
		}
	}
	now, err := ReadRules(ctx, repo, r.DB.Name)
	if err != nil {
		now = AfterOps(r.KVs, ops)
	}
	return DecodeChanges(r.DB, r.KVs, now)
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
	c.dbs[db] = cachedDatabase{d: cur.d, kvs: cur.kvs, rev: cur.rev}
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

// mergeKVs returns before (sorted by key, as List returns it) without
// the keys deleted and with changed (sorted by key) put in, sorted by
// key.
func mergeKVs(before []registry.KV, deleted []string, changed []registry.KV) []registry.KV {
	gone := make(map[string]bool, len(deleted))
	for _, k := range deleted {
		gone[k] = true
	}
	out := make([]registry.KV, 0, len(before)+len(changed))
	i := 0
	for _, kv := range before {
		for i < len(changed) && changed[i].Key < kv.Key {
			out = append(out, changed[i])
			i++
		}
		if i < len(changed) && changed[i].Key == kv.Key {
			out = append(out, changed[i])
			i++
			continue
		}
		if !gone[kv.Key] {
			out = append(out, kv)
		}
	}
	return append(out, changed[i:]...)
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

// keysOfNodes returns the keys of before (sorted by key) that are at or
// under the item nodes events touch, or under another placement of their
// items: what applyRuleEvents reads of the keys before the events. It
// finds each node's keys by binary search, so that it costs the keys it
// returns, not a pass over before.
func keysOfNodes(before []registry.KV, events []registry.Event) map[string]registry.KV {
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
		i, _ := slices.BinarySearchFunc(before, n, func(kv registry.KV, n string) int { return strings.Compare(kv.Key, n) })
		for ; i < len(before) && strings.HasPrefix(before[i].Key, n); i++ {
			if k := before[i].Key; len(k) == len(n) || k[len(n)] == '/' {
				out[k] = before[i]
			}
		}
	}
	return out
}

// readDatabaseKeys reads database db's storage-unit keys and its rule keys,
// the reads ReadDatabase and RuleCache.ReadDatabase decode. It returns
// ErrNoDatabase (wrapped) when the database does not exist.
func readDatabaseKeys(ctx context.Context, repo registry.Repository, db string) (units, rules []registry.KV, err error) {
	key, err := paths.Database(db)
	if err != nil {
		return nil, nil, err
	}
	if err := requireDatabase(ctx, repo, db); err != nil {
		return nil, nil, err
	}
	if units, err = repo.List(ctx, key+"/data_sources"); err != nil {
		return nil, nil, err
	}
	if rules, err = ReadRules(ctx, repo, db); err != nil {
		return nil, nil, err
	}
	return units, rules, nil
}
