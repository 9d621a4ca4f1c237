package rule

import "strings"

// Case is how a family matches the names of its items.
type Case bool

const (
	// ExactCase matches names as written: the mask, encrypt and shadow
	// rules, whose upstream executors compare names with equals.
	ExactCase Case = false
	// FoldCase matches names in any case: the sharding tables, whose
	// upstream executors compare them with equalsIgnoreCase.
	FoldCase Case = true
)

// Named is CREATE, ALTER and DROP of the named items of one section of a
// rule (tables, data sources, algorithms), with upstream's refusals. It is
// the one implementation of IF [NOT] EXISTS, names given twice and names
// that cannot name a registry node for every family.
type Named struct {
	// RuleType names the rule in DuplicateRuleException ("mask").
	RuleType string
	// Label names it in MissingRequiredRuleException ("Mask").
	Label string
	// Case is how names match.
	Case Case
	// Kind names the items in InvalidRuleConfigurationException for a
	// name a registry node cannot have ("sharding table"); RuleType when
	// "".
	Kind string
	// NameCheck checks each name CREATE and ALTER give, before any other
	// check; nil is CheckName under Kind.
	NameCheck func(name string) error
}

func (n Named) checkName(name string) error {
	if n.NameCheck != nil {
		return n.NameCheck(name)
	}
	kind := n.Kind
	if kind == "" {
		kind = n.RuleType
	}
	return CheckName(kind, name)
}

// key returns the key of items that name matches ("" when none).
func (n Named) key(items map[string]any, name string) string {
	if _, ok := items[name]; ok {
		return name
	}
	if n.Case == FoldCase {
		for k := range items {
			if strings.EqualFold(k, name) {
				return k
			}
		}
	}
	return ""
}

// seen reports whether name matches one of names.
func (n Named) seen(names []string, name string) bool {
	for _, s := range names {
		if s == name || n.Case == FoldCase && strings.EqualFold(s, name) {
			return true
		}
	}
	return false
}

// Create returns the names, of those a CREATE gives, to write into items:
// a name that cannot name a registry node is refused (InvalidRule), a name
// given twice or one items has is a duplicate (DuplicateRule, every
// duplicate named) unless, for one items has, ifNotExists, which leaves
// that item as it is. db names the database, for messages.
func (n Named) Create(db string, items map[string]any, names []string, ifNotExists bool) ([]string, error) {
	return n.define(db, items, names, ifNotExists, false)
}

// Alter returns the keys of items, as items spells them, that an ALTER of
// names replaces: a name given twice is a duplicate (DuplicateRule), one
// items does not have is missing (MissingRule, every one named).
func (n Named) Alter(db string, items map[string]any, names []string) ([]string, error) {
	return n.define(db, items, names, false, true)
}

func (n Named) define(db string, items map[string]any, names []string, ifNotExists, alter bool) ([]string, error) {
	var dup, absent, seen, todo []string
	for _, name := range names {
		if err := n.checkName(name); err != nil {
			return nil, err
		}
		if n.seen(seen, name) {
			dup = append(dup, name)
			continue
		}
		seen = append(seen, name)
		k := n.key(items, name)
		switch {
		case alter && k == "":
			absent = append(absent, name)
		case alter:
			todo = append(todo, k)
		case k != "" && ifNotExists:
		case k != "":
			dup = append(dup, name)
		default:
			todo = append(todo, name)
		}
	}
	if len(dup) > 0 {
		return nil, DuplicateRule(n.RuleType, db, dup)
	}
	if len(absent) > 0 {
		return nil, MissingRule(n.Label, db, absent)
	}
	return todo, nil
}

// Drop returns the keys of items, as items spells them, that a DROP of
// names removes, each once: a name items does not have is refused
// (MissingRule, every one named) unless ifExists.
func (n Named) Drop(db string, items map[string]any, names []string, ifExists bool) ([]string, error) {
	var absent, keys []string
	for _, name := range names {
		k := n.key(items, name)
		switch {
		case k == "" && !ifExists && !n.seen(absent, name):
			absent = append(absent, name)
		case k != "" && !n.seen(keys, k):
			keys = append(keys, k)
		}
	}
	if len(absent) > 0 {
		return nil, MissingRule(n.Label, db, absent)
	}
	return keys, nil
}
