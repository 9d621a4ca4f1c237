package catalog

import (
	"fmt"
	"strings"
)

// Joins: FROM a, b (a cross join filtered by WHERE, as Connector/J's
// getPrimaryKeys reads COLUMNS and STATISTICS). Before the product, each
// relation keeps only the rows its own conditions of the WHERE's AND
// chain accept (those naming only its columns, qualified); the product is
// then bounded by maxJoinRows.

const (
	// maxJoined bounds the relations after the first in a FROM list.
	maxJoined = 3
	// maxJoinRows bounds the rows of a join's product.
	maxJoinRows = 1_000_000
)

// source is one relation of a FROM list.
type source struct{ schema, relation, alias string }

// name is what qualifies s's columns: its alias, else its name.
func (s source) name() string {
	if s.alias != "" {
		return s.alias
	}
	return s.relation
}

// sources are sq's relations in FROM order.
func (sq *selectQuery) sources() []source {
	return append([]source{{sq.schema, sq.relation, sq.alias}}, sq.joined...)
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
				if !onlyQualified(c, q) {
					continue
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
		var rows [][]*string
		for _, a := range out.rows {
			for _, b := range own.rows {
				rows = append(rows, append(append(make([]*string, 0, len(a)+len(b)), a...), b...))
			}
		}
		out.rows = rows
		out.cols = append(out.cols, r.cols...)
		for range r.cols {
			out.quals = append(out.quals, q)
		}
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
