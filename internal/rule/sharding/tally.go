package sharding

import (
	"errors"
	"fmt"

	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// Tally is what BeyondBounds counts over a sharding rule, kept table by
// table, so that a node that follows a rule's changes recounts only the
// tables that changed (Table) instead of the whole rule. The zero value
// counts an empty rule. Not safe for concurrent use.
type Tally struct {
	names map[tallied]int // names each table's expression stands for (inline.MaxNames+1 beyond it)
	total int             // their sum
	over  int             // expressions beyond inline.MaxNames
}

type tallied struct{ section, table string }

// expressionFields are the sections of a sharding rule whose tables have
// an expression that names data sources, and that expression's field.
var expressionFields = map[string]string{"tables": "actualDataNodes", "autoTables": "actualDataSources"}

// Reset counts every table of sharding rule content c (nil: none), in
// time linear in the rule's size.
func (t *Tally) Reset(c map[string]any) {
	*t = Tally{}
	eachExpression(c, func(section, table, expr string) { t.set(tallied{section, table}, expr) })
}

// Table recounts table of section (a field of the rule's content:
// "tables" or "autoTables"; any other section names no data sources and
// is ignored) as sharding rule content c holds it now: a table c does not
// hold, or holds without an expression, counts for nothing.
func (t *Tally) Table(c map[string]any, section, table string) {
	field, ok := expressionFields[section]
	if !ok {
		return
	}
	k := tallied{section, table}
	t.remove(k)
	if expr, _ := rule.Map(rule.Map(c[section])[table])[field].(string); expr != "" {
		t.set(k, expr)
	}
}

func (t *Tally) set(k tallied, expr string) {
	n, err := namesOf(expr)
	if errors.Is(err, inline.ErrTooMany) {
		t.over++
	}
	if t.names == nil {
		t.names = map[tallied]int{}
	}
	t.names[k] = n
	t.total += n
}

func (t *Tally) remove(k tallied) {
	n, ok := t.names[k]
	if !ok {
		return
	}
	delete(t.names, k)
	t.total -= n
	if n > inline.MaxNames {
		t.over--
	}
}

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
