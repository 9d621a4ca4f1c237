package sharding

import (
	"errors"
	"fmt"

	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// Tally is what BeyondBounds counts over a sharding rule: the names its
// tables' expressions stand for, and how many of those expressions stand
// for more than inline.MaxNames. Whoever follows a rule's changes keeps
// it from change to change (Table), recounting only the tables a change
// names instead of the whole rule: the rule's name bound then costs what
// a change changes. The zero value counts an empty rule; a Tally is a
// value, each copy its own.
type Tally struct {
	total int // names the tables' expressions stand for (inline.MaxNames+1 for one beyond it)
	over  int // expressions beyond inline.MaxNames
}

// expressionFields are the sections of a sharding rule whose tables have
// an expression that names data sources, and that expression's field.
var expressionFields = map[string]string{"tables": "actualDataNodes", "autoTables": "actualDataSources"}

// TallyOf counts every table of sharding rule content c (nil: none), in
// time linear in the rule's size.
func TallyOf(c map[string]any) Tally {
	var t Tally
	eachExpression(c, func(_, _, expr string) { t = t.add(expr, 1) })
	return t
}

// Table is t, a Tally of sharding rule content old, recounted for next,
// which differs from old at most in table of section (a field of the
// rule's content: "tables" or "autoTables"; any other section names no
// data sources and changes nothing): the table's expression in old is
// taken out, its expression in next put in. A table absent, or without
// an expression, counts for nothing. Recount each table a change names
// once, from the same old and next.
func (t Tally) Table(old, next map[string]any, section, table string) Tally {
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
