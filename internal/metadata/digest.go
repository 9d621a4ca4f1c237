package metadata

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// RulesDigest is a digest of a database's rules that two nodes compute
// alike when they hold the same rules, whatever order they applied the
// items in: the items of each rule (sorted by type, item and name) in one
// canonical encoding, as the default layout and as the 5.5.4 layout place
// them (the 5.5.4 layout keeps what the older ones fold together: a
// rule-level key generate strategy beside a table's own). It is "" for no
// rules. A rule a layout cannot encode counts there by its content's JSON.
func RulesDigest(rules map[string]config.Rule) string {
	return digest(rules, func(w io.Writer, r config.Rule) {
		for _, layout := range []paths.Layout{paths.DefaultLayout, paths.Layout554} {
			_, _ = io.WriteString(w, layout.String()+"\x00")
			items, err := ruleItems(layout, r)
			if err != nil {
				b, _ := json.Marshal(r.Content)
				_, _ = w.Write(b)
				_, _ = io.WriteString(w, "\x00")
				continue
			}
			slices.SortFunc(items, func(a, b ruleItem) int {
				if c := strings.Compare(a.Item, b.Item); c != 0 {
					return c
				}
				return strings.Compare(a.Name, b.Name)
			})
			for _, it := range items {
				_, _ = io.WriteString(w, it.Item+"\x00"+it.Name+"\x00")
				_, _ = w.Write(it.Value)
				_, _ = io.WriteString(w, "\x00")
			}
		}
	})
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
	key, err := paths.Database(db)
	if err != nil {
		return nil, nil, err
	}
	if err := requireDatabase(ctx, repo, db); err != nil {
		return nil, nil, err
	}
	units, err := repo.List(ctx, key+"/data_sources")
	if err != nil {
		return nil, nil, err
	}
	rules, err := ReadRules(ctx, repo, db)
	if err != nil {
		return nil, nil, err
	}
	d := decode(db, append(slices.Clip(units), rules...))
	if d == nil {
		d = &Database{Name: db}
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
