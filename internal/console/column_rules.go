package console

import (
	"context"
	"slices"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

// showFamilyRule answers a query of a rule family (families.Show: SHOW
// MASK RULES, SHOW ENCRYPT RULES, ...) from the family's rule of the
// statement's database, with the family's columns; ok is false when st is
// no family's query. A database without the rule answers no rows.
// CREATE, ALTER and DROP of the families' rules run through
// internal/rules (rulechange.go's applyRule).
func (e *Engine) showFamilyRule(ctx context.Context, s *Session, st distsql.Statement) (res *Result, ok bool, err error) {
	rows, ok, err := families.Show(ctx, st, func(ruleType string) (rule.Database, map[string]any, error) {
		db, err := e.database(s, st.Scope().Database)
		if err != nil {
			return rule.Database{}, nil, err
		}
		return rules.View(db, e.d.Introspect), db.Rules[ruleType].Content, nil
	})
	if !ok || err != nil {
		return nil, ok, err
	}
	res = &Result{Columns: textColumns(rows.Columns...), Rows: make([][]*string, 0, len(rows.Rows))}
	for _, r := range rows.Rows {
		res.Rows = append(res.Rows, strs(r...))
	}
	return res, true, nil
}

// countColumns are COUNT <family> RULE's columns.
var countColumns = []Column{{Name: "rule_name"}, {Name: "database"}, {Name: "count", Type: Int64}}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func strs(values ...string) []*string {
	out := make([]*string, len(values))
	for i := range values {
		out[i] = &values[i]
	}
	return out
}
