package metadata

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// RulesDigest is a digest of a database's rules that two nodes compute
// alike when they hold the same rules, whatever order they applied the
// items in: the items of each rule (sorted by type, item and name) in one
// canonical encoding. It is "" for no rules. A rule that cannot be
// encoded counts by its type alone.
func RulesDigest(rules map[string]config.Rule) string {
	if len(rules) == 0 {
		return ""
	}
	h := sha256.New()
	for _, typ := range slices.Sorted(func(yield func(string) bool) {
		for k := range rules {
			if !yield(k) {
				return
			}
		}
	}) {
		_, _ = io.WriteString(h, typ+"\x00")
		items, err := ruleItems(paths.DefaultLayout, rules[typ])
		if err != nil {
			continue
		}
		slices.SortFunc(items, func(a, b ruleItem) int {
			if c := strings.Compare(a.Item, b.Item); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
		for _, it := range items {
			_, _ = io.WriteString(h, it.Item+"\x00"+it.Name+"\x00")
			_, _ = h.Write(it.Value)
			_, _ = io.WriteString(h, "\x00")
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ReadRules reads the rules of database db from the registry as a node's
// Store would apply them (nil when the database has none). ctx bounds the
// reads.
func ReadRules(ctx context.Context, repo registry.Repository, db string) (map[string]config.Rule, error) {
	key, err := paths.Database(db)
	if err != nil {
		return nil, err
	}
	kvs, err := repo.List(ctx, key+"/rules")
	if err != nil {
		return nil, err
	}
	events := make([]registry.Event, 0, len(kvs))
	for _, kv := range kvs {
		events = append(events, registry.Event{Type: registry.EventPut, KV: kv})
	}
	ap := newApplier(repo, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	d := newDraft(emptySnapshot())
	ap.apply(ctx, d, events, false)
	if d.s.Databases[db] == nil {
		return nil, nil
	}
	return d.s.Databases[db].Rules, nil
}
