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
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
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
	return applyRuleEvents(base, old, events, nil)
}

// applyRuleEvents returns database base, decoded from the rule keys old
// (by key), with events applied as a node's Store applies them. base is
// not modified. The applier reads old for the nodes the events touch (and
// their items' other placements) only, which keysOfNodes finds. built,
// when not nil, is a change's result over base that the events apply to
// in place (Built.seed) instead of to a copy of base's rule.
func applyRuleEvents(base *Database, old map[string]registry.KV, events []registry.Event, built *Built) *Database {
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
	built.seed(d, base)
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

// readDatabaseKeys reads database db's storage-unit keys and its rule keys,
// the reads ReadDatabase decodes (RuleCache.Read reads the units alike,
// readUnits, and only what changed of the rules). It returns
// ErrNoDatabase (wrapped) when the database does not exist.
func readDatabaseKeys(ctx context.Context, repo registry.Repository, db string) (units, rules []registry.KV, err error) {
	if _, units, err = readUnits(ctx, repo, db); err != nil {
		return nil, nil, err
	}
	if rules, err = ReadRules(ctx, repo, db); err != nil {
		return nil, nil, err
	}
	return units, rules, nil
}

// readUnits checks that database db exists (ErrNoDatabase, wrapped, when
// it does not) and reads its storage-unit keys; key is its
// /metadata/{db} node.
func readUnits(ctx context.Context, repo registry.Repository, db string) (key string, units []registry.KV, err error) {
	if key, err = paths.Database(db); err != nil {
		return "", nil, err
	}
	if err := requireDatabase(ctx, repo, db); err != nil {
		return "", nil, err
	}
	if units, err = repo.List(ctx, key+"/data_sources"); err != nil {
		return "", nil, err
	}
	return key, units, nil
}
