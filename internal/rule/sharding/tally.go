package sharding

import (
	"errors"
	"fmt"
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
// counts an empty rule; a Tally is a value, each copy its own.
type Tally struct {
	total    int    // names the tables' expressions stand for (inline.MaxNames+1 for one beyond it)
	over     int    // expressions beyond inline.MaxNames
	notPlain [2]int // table names that are not plain, by tableSections
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
func (t Tally) Table(old, next map[string]any, section, table string) Tally {
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
