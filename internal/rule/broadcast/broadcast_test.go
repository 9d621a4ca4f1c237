package broadcast_test

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/broadcast"
	"github.com/shardkeeper/shardkeeper/internal/rule/ruletest"
)

func TestParseBroadcast(t *testing.T) {
	ruletest.Parses(t, broadcast.Family.Read, map[string]distsql.Statement{
		"CREATE BROADCAST TABLE RULE t_product_category;":  &broadcast.CreateRule{Tables: []string{"t_product_category"}},
		"create broadcast table rule if not exists a, `b`": &broadcast.CreateRule{IfNotExists: true, Tables: []string{"a", "b"}},
		"DROP BROADCAST TABLE RULE IF EXISTS a, b":         &broadcast.DropRule{IfExists: true, Tables: []string{"a", "b"}},
		"SHOW BROADCAST TABLE RULES":                       &broadcast.ShowRules{},
		"SHOW BROADCAST TABLE RULES FROM db":               &broadcast.ShowRules{Database: "db"},
		"COUNT BROADCAST RULE":                             &distsql.CountRule{Type: "broadcast"},
		"COUNT BROADCAST RULE FROM db":                     &distsql.CountRule{Type: "broadcast", Database: "db"},
	})
	ruletest.ParseErrors(t, broadcast.Family.Read, map[string]string{
		"CREATE BROADCAST TABLE RULE":         "table name expected",
		"DROP BROADCAST TABLE RULE IF EXISTS": "table name expected",
	})
}

// TestConformance runs the rule families' suite on the broadcast rule.
func TestConformance(t *testing.T) {
	units := []string{"ds_0", "ds_1"}
	ruletest.Run(t, broadcast.Family, []ruletest.Case{
		{Name: "create", Units: units, Statements: []string{"CREATE BROADCAST TABLE RULE t_b, t_a, T_A", "CREATE BROADCAST TABLE RULE IF NOT EXISTS T_B, t_c"},
			Refused: map[string]int{
				"CREATE BROADCAST TABLE RULE t_x, T_B": 10204, // DuplicateRuleException, any case
				"DROP BROADCAST TABLE RULE t_x":        10202, // MissingRequiredRuleException
				"CREATE BROADCAST TABLE RULE `a/b`":    10200,
			},
			Show:  "SHOW BROADCAST TABLE RULES",
			Rows:  [][]string{{"t_b"}, {"t_a"}, {"t_c"}},
			Uses:  []rule.Use{{Units: units}},
			Count: 3},
		{Name: "drop", Units: units, Statements: []string{"CREATE BROADCAST TABLE RULE t_a, t_b", "DROP BROADCAST TABLE RULE IF EXISTS T_A, t_x"},
			Show: "SHOW BROADCAST TABLE RULES", Rows: [][]string{{"t_b"}}, Uses: []rule.Use{{Units: units}}, Count: 1},
		{Name: "drop all", Units: units, Statements: []string{"CREATE BROADCAST TABLE RULE t_a", "DROP BROADCAST TABLE RULE t_a"}, Gone: true},
	})
}
