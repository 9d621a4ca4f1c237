package sharding

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// Tally is what BeyondBounds counts over a sharding rule: the names its
// tables' expressions stand for, and how many of those expressions stand
// for more than inline.MaxNames. Whoever follows a rule's changes keeps
// it from change to change (Table), recounting only the tables a change
// names instead of the whole rule: the rule's name bound then costs what
// a change changes. It also counts the table names that are not plain
// (PlainName) by section, so that a change can find a table by name in
// any case without scanning every table (NotPlain). The zero value
// counts an empty rule; a Tally is a value, each copy its own. It
// counts as well the entries that refer to each algorithm, key generator
// and auditor name (Uses), so that a change that drops one table of
// thousands learns whether the algorithms it used are still used without
// a scan of every table.
type Tally struct {
	total    int    // names the tables' expressions stand for (inline.MaxNames+1 for one beyond it)
	over     int    // expressions beyond inline.MaxNames
	notPlain [2]int // table names that are not plain, by tableSections
	uses     uses
}

// tableSections are the sections of a sharding rule that hold its tables.
var tableSections = [2]string{"tables", "autoTables"}

// expressionFields are the sections of a sharding rule whose tables have
// an expression that names data sources, and that expression's field.
var expressionFields = map[string]string{"tables": "actualDataNodes", "autoTables": "actualDataSources"}

// TallyOf counts every table of sharding rule content c (nil: none), in
// time linear in the rule's size.
func TallyOf(c map[string]any) Tally {
	var t Tally
	eachExpression(c, func(_, _, expr string) { t = t.add(expr, 1) })
	for i, s := range tableSections {
		for name := range rule.Map(c[s]) {
			if !PlainName(name) {
				t.notPlain[i]++
			}
		}
	}
	base := map[usedName]int{}
	for _, s := range referringSections {
		for _, v := range rule.Map(c[s]) {
			entryNames(s, v, func(kind int, name string) { base[usedName{kind, name}]++ })
		}
	}
	t.uses = uses{base: base}
	return t
}

// Table is t, a Tally of sharding rule content old, recounted for next,
// which differs from old at most in table of section (a field of the
// rule's content: "tables" or "autoTables"; any other section names no
// data sources and changes nothing): the table's expression in old is
// taken out, its expression in next put in, and its name counted as not
// plain where next has it and old not, or no longer where old has it and
// next not. A table absent, or without an expression, counts no names.
// Recount each table a change names once, from the same old and next.
// The entries that refer to names (Uses) are recounted the same way, for
// a key generate strategy (section "keyGenerateStrategies") too.
func (t Tally) Table(old, next map[string]any, section, table string) Tally {
	if slices.Contains(referringSections[:], section) {
		t.uses = t.uses.entry(section, rule.Map(old[section])[table], rule.Map(next[section])[table])
	}
	if i := slices.Index(tableSections[:], section); i >= 0 && !PlainName(table) {
		_, was := rule.Map(old[section])[table]
		_, is := rule.Map(next[section])[table]
		switch {
		case is && !was:
			t.notPlain[i]++
		case was && !is:
			t.notPlain[i]--
		}
	}
	field, ok := expressionFields[section]
	if !ok {
		return t
	}
	expr := func(c map[string]any) string {
		e, _ := rule.Map(rule.Map(c[section])[table])[field].(string)
		return e
	}
	before, after := expr(old), expr(next)
	if before == after {
		return t
	}
	if before != "" {
		t = t.add(before, -1)
	}
	if after != "" {
		t = t.add(after, 1)
	}
	return t
}

// add is t with expr's names added (sign 1) or taken out (-1).
func (t Tally) add(expr string, sign int) Tally {
	n, err := namesOf(expr)
	if errors.Is(err, inline.ErrTooMany) {
		t.over += sign
	}
	t.total += sign * n
	return t
}

// Uses is how many tables, auto tables and key generate strategies of
// the rule counted refer to name of section: a sharding algorithm
// ("shardingAlgorithms": a strategy's shardingAlgorithmName, under any of
// standard, complex and hint), a key generator ("keyGenerators") or an
// auditor ("auditors"); 0 for any other section. The defaults
// (defaultDatabaseStrategy, ...) are not counted: a change reads them
// from the rule. It is rule.Database.BeforeUses of the rule counted.
func (t Tally) Uses(section, name string) int {
	kind, ok := nameKinds[section]
	if !ok {
		return 0
	}
	k := usedName{kind, name}
	return t.uses.base[k] + t.uses.delta[k]
}

// NotPlain is how many table names of the rule counted are not plain
// (PlainName), by section ("tables", "autoTables"): a new map, what
// rule.Database.ShardingNotPlain hands a change.
func (t Tally) NotPlain() map[string]int {
	return map[string]int{tableSections[0]: t.notPlain[0], tableSections[1]: t.notPlain[1]}
}

// PlainName reports whether name is plain: ASCII without an upper-case
// letter. Of the ASCII names, a plain name equals in any case
// (strings.EqualFold) only those whose lower case it is; a non-ASCII
// name may equal it by Unicode case folding (the Kelvin sign "\u212a"
// equals "k").
func PlainName(name string) bool {
	for i := range len(name) {
		if c := name[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// Total is the names the rule's expressions stand for (each beyond
// inline.MaxNames counted as inline.MaxNames+1).
func (t Tally) Total() int { return t.total }

// Reason is BeyondBounds of the rule counted: how it passes the bounds on
// the names a rule's expressions may stand for, "" when it does not.
func (t *Tally) Reason() string { return boundsReason(t.total, t.over) }

// boundsReason describes a rule whose expressions stand for total names,
// over of them beyond inline.MaxNames each; "" within the bounds.
func boundsReason(total, over int) string {
	switch {
	case over > 0:
		return fmt.Sprintf("%d of its tables' expressions stand for more than %d names each, the most one expression may", over, inline.MaxNames)
	case total > inline.MaxRuleNames:
		return fmt.Sprintf("its tables' expressions stand for %d names, more than the %d one rule may", total, inline.MaxRuleNames)
	}
	return ""
}

// referringSections are the sections of a sharding rule whose entries
// refer to algorithms, key generators and auditors by name (entryNames).
var referringSections = [3]string{"tables", "autoTables", "keyGenerateStrategies"}

// nameKinds are the sections that hold the named algorithms, key
// generators and auditors, by the kind of name that refers to them.
var nameKinds = map[string]int{"shardingAlgorithms": algorithmName, "keyGenerators": generatorName, "auditors": auditorName}

// usedName is a name of one kind (algorithmName, generatorName,
// auditorName).
type usedName struct {
	kind int
	name string
}

// uses counts the entries that refer to each name: a base shared by the
// tallies counted from one another, and this tally's own difference from
// it. Neither map is modified once the tally holds it (a recount makes
// a new delta), so copies of a Tally never see each other's counts.
type uses struct {
	base  map[usedName]int
	delta map[usedName]int
}

// entry is u recounted for an entry of section that was old and is next
// (nil: absent). The delta grows by what one entry names; once it holds
// more than 64 names and an eighth of the base, base and delta are
// merged into a new base, so that a recount costs what the entry names,
// amortized.
func (u uses) entry(section string, old, next any) uses {
	change := map[usedName]int{}
	entryNames(section, old, func(kind int, name string) { change[usedName{kind, name}]-- })
	entryNames(section, next, func(kind int, name string) { change[usedName{kind, name}]++ })
	for k, n := range change {
		if n == 0 {
			delete(change, k)
		}
	}
	if len(change) == 0 {
		return u
	}
	delta := plus(u.delta, change)
	if len(delta) <= 64 || len(delta) <= len(u.base)/8 {
		return uses{base: u.base, delta: delta}
	}
	return uses{base: plus(u.base, delta)}
}

// plus returns a copy of counts with add's counts added, without the
// names counted 0.
func plus(counts, add map[usedName]int) map[usedName]int {
	out := make(map[usedName]int, len(counts)+len(add))
	maps.Copy(out, counts)
	for k, n := range add {
		if out[k] += n; out[k] == 0 {
			delete(out, k)
		}
	}
	return out
}
