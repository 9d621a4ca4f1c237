package metadata

import (
	"fmt"
	"maps"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/registry"
)

// A rule statement changes a few named entries of a rule (a sharding
// table, an algorithm) next to possibly thousands it leaves alone. The
// change works on config.CopyFields of the rule as read, so the entries
// it leaves alone are the very values read, and the ones it changes are
// new values: RuleChangeWrites tells them apart by identity and converts,
// checks and compares only what changed.

// NotWritableError is a rule that layout's release cannot store (see
// RuleAsWritten); nothing was written.
type NotWritableError struct {
	Err error
}

func (e *NotWritableError) Error() string { return e.Err.Error() }
func (e *NotWritableError) Unwrap() error { return e.Err }

// RuleChangeWrites returns RuleWritesFrom(layout, db, kvs, old, next),
// the same conditions and writes, for a next rule that a change computed
// from config.CopyFields(old.Content): it converts (RuleAsWritten) and
// compares only the named entries whose values are not old's own (by
// identity, see ChangedEntries) and the rule's other fields, so that a
// change of one table of thousands converts and encodes that table. Where
// a partial conversion could answer otherwise than the whole one (it
// fails, or it derives an entry, such as Layout554's key generate
// strategy of a table, that old already has), it converts the whole rule
// as RuleWritesFrom does. A rule next's release cannot store is a
// *NotWritableError.
func RuleChangeWrites(layout paths.Layout, db string, kvs []registry.KV, old, next config.Rule) ([]registry.Cond, []registry.Op, error) {
	if old.Type == "" {
		old.Type = next.Type
	}
	var diff *Diff
	if old.Content != nil && next.Content != nil && old.Type == next.Type {
		diff = DiffOf(next.Type, old.Content, next.Content)
	}
	return RuleDiffWrites(layout, db, NewRuleKeys(kvs), old, next, diff)
}

// Diff is what differs between a rule's content before a change and
// after it (ChangedEntries): the named entries that differ, by field and
// name, and both contents cut down to them.
type Diff struct {
	Changed               map[[2]string]bool
	SparseOld, SparseNext map[string]any
}

// DiffOf is ChangedEntries of rule type typ as a Diff; nil where
// ChangedEntries is not ok (the whole rule is then compared).
func DiffOf(typ string, old, next map[string]any) *Diff {
	changed, sparseOld, sparseNext, ok := ChangedEntries(typ, old, next)
	if !ok {
		return nil
	}
	return &Diff{Changed: changed, SparseOld: sparseOld, SparseNext: sparseNext}
}

// RuleDiffWrites is RuleChangeWrites for a caller that computed the
// change's Diff already (DiffOf(next.Type, old.Content, next.Content);
// nil: the whole rule is converted), so that a statement compares the
// rule's entries once, over keys (the rule keys read, as RuleCache.Read
// returns them): where the change is sparse (diff) it looks up only the
// keys of the items that differ, so that it costs what changed, not the
// number of rule keys.
func RuleDiffWrites(layout paths.Layout, db string, keys RuleKeys, old, next config.Rule, diff *Diff) ([]registry.Cond, []registry.Op, error) {
	if old.Type == "" {
		old.Type = next.Type
	}
	if diff != nil && old.Content != nil && next.Content != nil && old.Type == next.Type {
		conds, ops, ok, err := sparseRuleWrites(layout, db, keys, old, next, diff)
		if ok || err != nil {
			return conds, ops, err
		}
	}
	written := next
	if next.Content != nil {
		var err error
		if written, err = RuleAsWritten(layout, next); err != nil {
			return nil, nil, &NotWritableError{Err: err}
		}
	}
	return RuleWritesFromWritten(layout, db, keys, old, written)
}

// sparseRuleWrites is RuleChangeWrites over the entries that differ; ok is
// false when the whole rule must be converted instead.
func sparseRuleWrites(layout paths.Layout, db string, keys RuleKeys, old, next config.Rule, diff *Diff) (conds []registry.Cond, ops []registry.Op, ok bool, err error) {
	changed, sparseOld, sparseNext := diff.Changed, diff.SparseOld, diff.SparseNext
	convOld, err := upstreamRule(layout, config.Rule{Type: old.Type, Content: sparseOld})
	if err != nil {
		return nil, nil, false, nil
	}
	convNext, err := upstreamRule(layout, config.Rule{Type: next.Type, Content: sparseNext})
	if err != nil {
		return nil, nil, false, nil // the whole rule says whether, and why, it cannot be written
	}
	// An entry the conversion derived (not one of the changed) must be new
	// to old; otherwise only the whole rule knows whether it stays.
	for _, conv := range []struct {
		content map[string]any
		old     bool
	}{{convOld.Content, true}, {convNext.Content, false}} {
		for f, v := range conv.content {
			if !has(namedFields, next.Type, f) {
				continue
			}
			m, _ := v.(map[string]any)
			for name := range m {
				if changed[[2]string{f, name}] {
					continue
				}
				if _, held := mapField(old.Content, f)[name]; held || conv.old {
					return nil, nil, false, nil
				}
			}
		}
	}
	before := map[[2]string]*ruleItem{}
	items := splitLazy(convOld)
	for i := range items {
		before[[2]string{items[i].Item, items[i].Name}] = &items[i]
	}
	conds, ops, err = ruleWritesOf(layout, db, keys, before, next.Type, splitLazy(convNext))
	return conds, ops, err == nil, err
}

// DiffOfEdits is DiffOf(typ, old, next) for a change that reported the
// named entries it touched (rule.Edits): when it declared them complete,
// only those entries are compared (and every field that holds no named
// entries, whole), so that it costs what the change touched, not the
// number of entries; otherwise, and where the sizes of the named fields
// contradict the entries reported (an entry added or removed and not
// reported), it is DiffOf. Under go test it compares the result with
// DiffOf's and panics where they differ: a change that reports too few
// entries would lose writes.
func DiffOfEdits(typ string, old, next map[string]any, edits *rule.Edits) *Diff {
	entries, complete := edits.Entries()
	if !complete {
		return DiffOf(typ, old, next)
	}
	changed, sparseOld, sparseNext, ok := changedEntries(typ, old, next, entries)
	if !ok {
		return DiffOf(typ, old, next)
	}
	diff := &Diff{Changed: changed, SparseOld: sparseOld, SparseNext: sparseNext}
	if testing.Testing() {
		if full := DiffOf(typ, old, next); full == nil || !maps.Equal(full.Changed, diff.Changed) {
			panic(fmt.Sprintf("metadata: a %s change reported the entries %v as all it touched; they differ in %v", typ, entries, full))
		}
	}
	return diff
}

// ChangedEntries compares next, a rule of type typ that a change computed
// from config.CopyFields(old), with old: a named entry (a map field's
// entry, rule.Items.Named) differs when next lacks it, old lacks it, or
// its value is not old's own value (by identity for maps and lists, by
// equality for scalars). It returns the entries that differ by field and
// name, and old and next cut down to them: every other field whole, each
// named field with only the entries that differ (left out when none
// does). ok is false when a named field is not a map in one of them (the
// whole rule is then compared).
func ChangedEntries(typ string, old, next map[string]any) (changed map[[2]string]bool, sparseOld, sparseNext map[string]any, ok bool) {
	return changedEntries(typ, old, next, nil)
}

// changedEntries is ChangedEntries; with among set, it compares only
// the named entries among names (by field and name), every other entry
// of a named field being taken as old's own, and ok is false too where
// a named field's size is not old's changed by the entries among that
// next adds and removes.
func changedEntries(typ string, old, next map[string]any, among map[[2]string]bool) (changed map[[2]string]bool, sparseOld, sparseNext map[string]any, ok bool) {
	changed = map[[2]string]bool{}
	sparseOld, sparseNext = map[string]any{}, map[string]any{}
	fields := make(map[string]bool, len(old)+len(next))
	for f := range old {
		fields[f] = true
	}
	for f := range next {
		fields[f] = true
	}
	for f := range fields {
		ov, inOld := old[f]
		nv, inNext := next[f]
		if !has(namedFields, typ, f) {
			if inOld {
				sparseOld[f] = ov
			}
			if inNext {
				sparseNext[f] = nv
			}
			continue
		}
		om, okOld := ov.(map[string]any)
		nm, okNext := nv.(map[string]any)
		if inOld && !okOld || inNext && !okNext {
			return nil, nil, nil, false
		}
		so, sn := map[string]any{}, map[string]any{}
		if among == nil {
			compareAll(f, om, nm, so, sn, changed)
		} else if !compareAmong(f, om, nm, among, so, sn, changed) {
			return nil, nil, nil, false
		}
		if len(so) > 0 {
			sparseOld[f] = so
		}
		if len(sn) > 0 {
			sparseNext[f] = sn
		}
	}
	return changed, sparseOld, sparseNext, true
}

// compareAll puts every entry of field f that differs between om and nm
// into so, sn and changed, as changedEntries does.
func compareAll(f string, om, nm map[string]any, so, sn map[string]any, changed map[[2]string]bool) {
	found := 0 // of om's names, those nm has too
	for name, e := range nm {
		oe, had := om[name]
		if had {
			found++
		}
		if !had || !rule.Same(oe, e) {
			sn[name] = e
			if had {
				so[name] = oe
			}
			changed[[2]string{f, name}] = true
		}
	}
	if found < len(om) { // some of old's entries are gone
		for name, oe := range om {
			if _, kept := nm[name]; !kept {
				so[name] = oe
				changed[[2]string{f, name}] = true
			}
		}
	}
}

// compareAmong puts the entries of field f among names that differ
// between om and nm into so, sn and changed, as changedEntries does; it
// reports false where nm's size is not om's with the entries among that
// nm adds and removes (an entry added or removed that is not among).
func compareAmong(f string, om, nm map[string]any, among map[[2]string]bool, so, sn map[string]any, changed map[[2]string]bool) bool {
	size := len(om)
	for k := range among {
		if k[0] != f {
			continue
		}
		name := k[1]
		oe, had := om[name]
		e, has := nm[name]
		switch {
		case !had && !has:
			continue
		case !had:
			size++
		case !has:
			size--
		}
		if had && has && rule.Same(oe, e) {
			continue
		}
		if had {
			so[name] = oe
		}
		if has {
			sn[name] = e
		}
		changed[[2]string{f, name}] = true
	}
	return size == len(nm)
}

// mapField is content's field f as a map, nil when it is none.
func mapField(content map[string]any, f string) map[string]any {
	m, _ := content[f].(map[string]any)
	return m
}
