package console

import (
	"context"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

// SHOW MASK RULES with upstream's columns (ShowMaskRuleExecutor): one row
// per masked column. CREATE, ALTER and DROP MASK RULE run through
// internal/rules (sharding_rules.go's applyRule). A database without a
// mask rule answers no rows.

var maskRuleColumns = textColumns("table", "column", "algorithm_type", "algorithm_props")

func (e *Engine) showMaskRules(_ context.Context, s *Session, st *distsql.ShowMaskRules) (*Result, error) {
	rule, err := e.ruleContent(s, st.Database, "mask")
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: maskRuleColumns, Rows: [][]*string{}}
	tables := rules.Map(rule["tables"])
	algorithms := rules.Map(rule["maskAlgorithms"])
	for _, table := range sortedKeys(tables) {
		if st.Table != "" && !strings.EqualFold(st.Table, table) {
			continue
		}
		columns := rules.Map(rules.Map(tables[table])["columns"])
		for _, column := range sortedKeys(columns) {
			alg := rules.Map(algorithms[rules.Text(rules.Map(columns[column])["maskAlgorithm"])])
			res.Rows = append(res.Rows, strs(table, column, rules.Text(alg["type"]), propsJSON(alg["props"])))
		}
	}
	return res, nil
}
