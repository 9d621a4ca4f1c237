package metadata

import (
	"maps"

	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// Built is what a rule change built that it gives up to RuleCache.After
// once committed: the maps of the named fields of the change's result
// that are the change's own (fresh copies of the rule read's field maps,
// config.CopyFields, that the result still holds and nothing else does),
// with the change's Diff. After applies the written items to those maps
// in place instead of copying each field map of the rule read again: a
// change of one table of thousands then copies the tables once (for the
// change), not twice.
//
// The database After returns is the same as without a Built, entry for
// entry and digest for digest: the maps are first brought back to the
// rule read's entries (the Diff's changed entries restored, O(changed)),
// and then every written item is decoded and applied to them as to a
// copy. A Built is used at most once; After leaves it unused (and the
// maps as the change left them) where the rule read is not the one the
// change started from, or where a map does not come back to the rule
// read's entries.
type Built struct {
	// Type is the rule's type.
	Type string
	// Old is the content of the rule read (the database RuleCache.Read
	// returned holds it as Rules[Type].Content): checked by identity.
	Old map[string]any
	// Fields are the named fields' maps the change owns, by field.
	Fields map[string]map[string]any
	// Diff is DiffOf(Type, Old, the change's result).
	Diff *Diff

	used bool
}

// FieldMaps returns the map fields of content, by field: taken of
// config.CopyFields of the rule read before the change runs, the maps
// that are the change's caller's own.
func FieldMaps(content map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for f, v := range content {
		if m, ok := v.(map[string]any); ok {
			out[f] = m
		}
	}
	return out
}

// OwnedFields returns, of fresh (FieldMaps of the copy a change started
// from), the maps that next (the change's result) still holds under
// their own field: what the change's caller may give up in a Built.
func OwnedFields(fresh map[string]map[string]any, next map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for f, m := range fresh {
		if rule.Same(m, next[f]) {
			out[f] = m
		}
	}
	return out
}

// seed gives d, a draft over base, b's maps as the fields of base's rule
// b.Type, brought back to the entries base holds and owned by the draft
// (so that the items applied next change them in place), and reports
// whether it did. It does nothing when b is nil or used, when base's rule
// is not b.Old, or when no map comes back to base's entries.
func (b *Built) seed(d *draft, base *Database) bool {
	if b == nil || b.used || b.Diff == nil {
		return false
	}
	b.used = true
	r, ok := base.Rules[b.Type]
	if !ok || r.Content == nil || !rule.Same(r.Content, b.Old) {
		return false
	}
	byField := map[string][]string{}
	for k := range b.Diff.Changed {
		byField[k[0]] = append(byField[k[0]], k[1])
	}
	owned := map[string]map[string]any{}
	for f, m := range b.Fields {
		om, ok := r.Content[f].(map[string]any)
		if !ok || m == nil || !has(namedFields, b.Type, f) || has(keyListFields, b.Type, f) {
			continue
		}
		for _, name := range byField[f] {
			if ov, had := om[name]; had {
				m[name] = ov
			} else {
				delete(m, name)
			}
		}
		if len(m) != len(om) { // not the copy of om the Diff was taken of
			continue
		}
		owned[f] = m
	}
	if len(owned) == 0 {
		return false
	}
	db := d.db(base.Name, false)
	content := maps.Clone(r.Content)
	id := db.Name + "\x00" + b.Type
	for f, m := range owned {
		content[f] = m
		d.fields[id+"\x00"+f] = true
	}
	r.Content = content
	db.Rules[b.Type] = r
	d.rules[id] = true
	return true
}
