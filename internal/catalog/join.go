package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// Joins: FROM a, b (a cross join filtered by WHERE, as Connector/J's
// getPrimaryKeys reads COLUMNS and STATISTICS), a [INNER] JOIN b ON cond
// and a LEFT [OUTER] JOIN b ON cond (a's rows without a match once, b's
// columns NULL, as DBeaver reads pg_namespace with pg_description). Before
// the product, each relation of an inner join keeps only the rows its own
// conditions of the WHERE's AND chain accept (those naming only its
// columns, qualified); the product is then bounded by maxJoinRows.

const (
	// maxJoined bounds the relations after the first in a FROM list.
	maxJoined = 3
	// maxJoinRows bounds the rows of a join's product.
	maxJoinRows = 1_000_000
)

// source is one relation of a FROM list; on is its JOIN's condition (nil
// for a comma or a CROSS JOIN), left tells a LEFT JOIN.
type source struct {
	schema, relation, alias string
	on                      expr
	left                    bool
}

// name is what qualifies s's columns: its alias, else its name.
func (s source) name() string {
	if s.alias != "" {
		return s.alias
	}
	return s.relation
}

// sources are sq's relations in FROM order.
func (sq *selectQuery) sources() []source {
	return append([]source{{schema: sq.schema, relation: sq.relation, alias: sq.alias}}, sq.joined...)
}

// join returns the product of rels (sq.sources()' relations in order),
// each first filtered by its own conditions of sq.where.
func join(sq *selectQuery, rels []*relation, view *View) (*relation, error) {
	srcs := sq.sources()
	out := &relation{rows: [][]*string{{}}}
	for i, r := range rels {
		q := srcs[i].name()
		own := &relation{cols: r.cols}
		for _, row := range r.rows {
			e := &env{rel: r, row: row, view: view}
			keep := true
			for _, c := range conjuncts(sq.where) {
				if srcs[i].left || !onlyQualified(c, q) {
					continue // a LEFT JOIN's NULL rows are the WHERE's to judge
				}
				v, _, err := e.eval(c)
				if err != nil {
					return nil, err
				}
				if !truth(v) {
					keep = false
					break
				}
			}
			if keep {
				own.rows = append(own.rows, row)
			}
		}
		if len(out.rows)*len(own.rows) > maxJoinRows {
			return nil, fmt.Errorf("join of more than %d rows", maxJoinRows)
		}
		next := &relation{cols: append(slices.Clone(out.cols), r.cols...), quals: slices.Clone(out.quals)}
		for range r.cols {
			next.quals = append(next.quals, q)
		}
		for _, a := range out.rows {
			matched := false
			for _, b := range own.rows {
				row := append(append(make([]*string, 0, len(a)+len(b)), a...), b...)
				if srcs[i].on != nil {
					v, _, err := (&env{rel: next, row: row, view: view}).eval(srcs[i].on)
					if err != nil {
						return nil, err
					}
					if !truth(v) {
						continue
					}
				}
				matched = true
				next.rows = append(next.rows, row)
			}
			if !matched && srcs[i].left {
				next.rows = append(next.rows, append(append(make([]*string, 0, len(a)+len(r.cols)), a...), make([]*string, len(r.cols))...))
			}
		}
		out = next
	}
	return out, nil
}

// conjuncts are x's conditions joined by AND.
func conjuncts(x expr) []expr {
	if b, ok := x.(binary); ok && b.op == "AND" {
		return append(conjuncts(b.l), conjuncts(b.r)...)
	}
	if x == nil {
		return nil
	}
	return []expr{x}
}

// onlyQualified reports whether every column x names is qualified with q,
// and it names one at least.
func onlyQualified(x expr, q string) bool {
	n := 0
	var walk func(x expr) bool
	walk = func(x expr) bool {
		switch x := x.(type) {
		case colRef:
			n++
			return strings.EqualFold(x.qual, q)
		case binary:
			return walk(x.l) && walk(x.r)
		case notExpr:
			return walk(x.x)
		case isNull:
			return walk(x.x)
		case inExpr:
			for _, y := range x.list {
				if !walk(y) {
					return false
				}
			}
			return walk(x.x)
		case lit:
			return true
		}
		return false // calls, CASE: left to the joined WHERE
	}
	return walk(x) && n > 0
}
