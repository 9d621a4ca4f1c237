package shadow_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rule/ruletest"
	"github.com/shardkeeper/shardkeeper/internal/rule/shadow"
)

func TestParseShadow(t *testing.T) {
	str := func(s string) distsql.Value { return distsql.Value{Kind: distsql.StringValue, Text: s} }
	match := distsql.Algorithm{Type: "VALUE_MATCH", Props: []distsql.Property{{Key: "operation", Value: str("insert")}, {Key: "column", Value: str("user_id")}, {Key: "value", Value: distsql.Value{Kind: distsql.IntValue, Text: "1"}}}}
	ruletest.Parses(t, shadow.Family.Read, map[string]distsql.Statement{
		"CREATE SHADOW RULE shadow_rule(SOURCE=demo_ds, SHADOW=demo_ds_shadow, t_order(TYPE(NAME='SQL_HINT')), t_order_item(TYPE(NAME=VALUE_MATCH, PROPERTIES('operation'='insert', 'column'='user_id', 'value'=1))))": &shadow.CreateRule{Rules: []shadow.Definition{{
			Name: "shadow_rule", Source: "demo_ds", Shadow: "demo_ds_shadow",
			Tables: []shadow.Table{{Name: "t_order", Algorithms: []distsql.Algorithm{{Type: "SQL_HINT"}}}, {Name: "t_order_item", Algorithms: []distsql.Algorithm{match}}}}}},
		"create shadow rule if not exists a(source=ds, shadow=ds_s, t(type(name='SQL_HINT'), type(name='SQL_HINT'))), b(SOURCE=ds, SHADOW=ds_s, t(TYPE(NAME='SQL_HINT')))": &shadow.CreateRule{IfNotExists: true, Rules: []shadow.Definition{
			{Name: "a", Source: "ds", Shadow: "ds_s", Tables: []shadow.Table{{Name: "t", Algorithms: []distsql.Algorithm{{Type: "SQL_HINT"}, {Type: "SQL_HINT"}}}}},
			{Name: "b", Source: "ds", Shadow: "ds_s", Tables: []shadow.Table{{Name: "t", Algorithms: []distsql.Algorithm{{Type: "SQL_HINT"}}}}}}},
		"ALTER SHADOW RULE a(SOURCE=ds, SHADOW=ds_s, t(TYPE(NAME='SQL_HINT')))": &shadow.AlterRule{Rules: []shadow.Definition{
			{Name: "a", Source: "ds", Shadow: "ds_s", Tables: []shadow.Table{{Name: "t", Algorithms: []distsql.Algorithm{{Type: "SQL_HINT"}}}}}}},
		"DROP SHADOW RULE IF EXISTS a, b":                                   &shadow.DropRule{IfExists: true, Names: []string{"a", "b"}},
		"DROP SHADOW ALGORITHM a_t_sql_hint_0":                              &shadow.DropAlgorithm{Names: []string{"a_t_sql_hint_0"}},
		"CREATE DEFAULT SHADOW ALGORITHM IF NOT EXISTS TYPE(NAME=SQL_HINT)": &shadow.CreateDefaultAlgorithm{IfNotExists: true, Algorithm: distsql.Algorithm{Type: "SQL_HINT"}},
		"ALTER DEFAULT SHADOW ALGORITHM TYPE(NAME='SQL_HINT')":              &shadow.AlterDefaultAlgorithm{Algorithm: distsql.Algorithm{Type: "SQL_HINT"}},
		"DROP DEFAULT SHADOW ALGORITHM IF EXISTS":                           &shadow.DropDefaultAlgorithm{IfExists: true},
		"SHOW SHADOW RULES":                                                 &shadow.ShowRules{},
		"SHOW SHADOW RULE a FROM db":                                        &shadow.ShowRules{Rule: "a", Database: "db"},
		"SHOW SHADOW TABLE RULES FROM db":                                   &shadow.ShowTableRules{Database: "db"},
		"SHOW SHADOW TABLE RULE t_order":                                    &shadow.ShowTableRules{Table: "t_order"},
		"SHOW SHADOW ALGORITHMS":                                            &shadow.ShowAlgorithms{},
		"SHOW DEFAULT SHADOW ALGORITHM FROM db":                             &shadow.ShowDefaultAlgorithm{Database: "db"},
		"COUNT SHADOW RULE FROM db":                                         &distsql.CountRule{Type: "shadow", Database: "db"},
	})
	ruletest.ParseErrors(t, shadow.Family.Read, map[string]string{
		"CREATE SHADOW RULE a(SOURCE=ds, SHADOW=ds_s)":                  "a shadow table expected",
		"CREATE SHADOW RULE a(SHADOW=ds_s, SOURCE=ds, t(TYPE(NAME=x)))": "SOURCE expected",
		"CREATE SHADOW RULE a(SOURCE=ds, SHADOW=ds_s, t())":             "TYPE expected",
		"DROP SHADOW RULE":       "shadow rule name expected",
		"SHOW SHADOW RULE":       "shadow rule name expected",
		"SHOW SHADOW TABLE RULE": "table name expected",
	})
}

// TestConformance runs the rule families' suite on the shadow rule.
func TestConformance(t *testing.T) {
	create := "CREATE SHADOW RULE shadow_rule(SOURCE=ds, SHADOW=ds_shadow, t_order(TYPE(NAME='SQL_HINT')), t_order_item(TYPE(NAME=VALUE_MATCH, PROPERTIES('operation'='insert', 'column'='user_id', 'value'=1))))"
	units := []string{"ds", "ds_shadow", "ds_1"}
	ruletest.Run(t, shadow.Family, []ruletest.Case{
		{Name: "create", Units: units, Statements: []string{create, "CREATE DEFAULT SHADOW ALGORITHM TYPE(NAME='SQL_HINT')"},
			Refused: map[string]int{
				create: 10204, // DuplicateRuleException
				"CREATE SHADOW RULE a(SOURCE=ds, SHADOW=nope, t(TYPE(NAME='SQL_HINT')))":                                                      10102, // MissingRequiredStorageUnitsException
				"CREATE SHADOW RULE a(SOURCE=ds, SHADOW=ds_1, t(TYPE(NAME='NOPE')))":                                                          30000, // SPI-00001
				"CREATE SHADOW RULE a(SOURCE=ds, SHADOW=ds_1, t(TYPE(NAME='VALUE_MATCH', PROPERTIES('column'='c'))))":                         10400, // AlgorithmInitializationException
				"CREATE SHADOW RULE a(SOURCE=ds, SHADOW=ds_1, t(TYPE(NAME='SQL_HINT'))), a(SOURCE=ds, SHADOW=ds_1, t(TYPE(NAME='SQL_HINT')))": 10204,
				"ALTER SHADOW RULE b(SOURCE=ds, SHADOW=ds_1, t(TYPE(NAME='SQL_HINT')))":                                                       10202, // MissingRequiredRuleException
				"DROP SHADOW RULE b":                                    10202,
				"DROP SHADOW ALGORITHM nope":                            10401, // MissingRequiredAlgorithmException
				"DROP SHADOW ALGORITHM shadow_rule_t_order_sql_hint_0":  10403, // InUsedAlgorithmException
				"DROP SHADOW ALGORITHM default_shadow_algorithm":        10403,
				"CREATE DEFAULT SHADOW ALGORITHM TYPE(NAME='SQL_HINT')": 10403,
			},
			Show: "SHOW SHADOW RULES",
			Rows: [][]string{
				{"t_order", "shadow_rule", "ds", "ds_shadow", "SQL_HINT", ""},
				{"t_order_item", "shadow_rule", "ds", "ds_shadow", "VALUE_MATCH", `{"column":"user_id","operation":"insert","value":"1"}`},
			},
			Uses:  []rule.Use{{Item: "shadow_rule", Units: []string{"ds", "ds_shadow"}}},
			Count: 1},
		{Name: "tables and algorithms", Units: units, Statements: []string{create, "CREATE DEFAULT SHADOW ALGORITHM TYPE(NAME='SQL_HINT')"},
			Show: "SHOW SHADOW TABLE RULES", Rows: [][]string{{"t_order", "shadow_rule_t_order_sql_hint_0"}, {"t_order_item", "shadow_rule_t_order_item_value_match_0"}},
			Uses: []rule.Use{{Item: "shadow_rule", Units: []string{"ds", "ds_shadow"}}}, Count: 1},
		{Name: "show algorithms", Units: units, Statements: []string{create, "CREATE DEFAULT SHADOW ALGORITHM TYPE(NAME='SQL_HINT')"},
			Show: "SHOW SHADOW ALGORITHMS", Rows: [][]string{
				{"default_shadow_algorithm", "SQL_HINT", "", "true"},
				{"shadow_rule_t_order_item_value_match_0", "VALUE_MATCH", `{"column":"user_id","operation":"insert","value":"1"}`, "false"},
				{"shadow_rule_t_order_sql_hint_0", "SQL_HINT", "", "false"}},
			Uses: []rule.Use{{Item: "shadow_rule", Units: []string{"ds", "ds_shadow"}}}, Count: 1},
		{Name: "alter", Units: units, Statements: []string{create, "CREATE SHADOW RULE IF NOT EXISTS shadow_rule(SOURCE=ds, SHADOW=ds_1, t_x(TYPE(NAME='SQL_HINT'))), r2(SOURCE=ds_1, SHADOW=ds, t_order(TYPE(NAME='SQL_HINT')))",
			"ALTER SHADOW RULE shadow_rule(SOURCE=ds, SHADOW=ds_1, t_user(TYPE(NAME='SQL_HINT')))", "CREATE DEFAULT SHADOW ALGORITHM TYPE(NAME='SQL_HINT')",
			"ALTER DEFAULT SHADOW ALGORITHM TYPE(NAME='REGEX_MATCH', PROPERTIES('column'='user_id', 'operation'='select', 'regex'='[1]'))"},
			Refused: map[string]int{"ALTER DEFAULT SHADOW ALGORITHM TYPE(NAME='NOPE')": 30000},
			Show:    "SHOW SHADOW RULE SHADOW_RULE",
			Rows:    [][]string{{"t_user", "shadow_rule", "ds", "ds_1", "SQL_HINT", ""}},
			Uses:    []rule.Use{{Item: "r2", Units: []string{"ds_1", "ds"}}, {Item: "shadow_rule", Units: []string{"ds", "ds_1"}}},
			Count:   2},
		{Name: "default", Units: units, Statements: []string{create, "CREATE DEFAULT SHADOW ALGORITHM TYPE(NAME='SQL_HINT')", "DROP DEFAULT SHADOW ALGORITHM"},
			Refused: map[string]int{"DROP DEFAULT SHADOW ALGORITHM": 10402, "ALTER DEFAULT SHADOW ALGORITHM TYPE(NAME='SQL_HINT')": 10402},
			Show:    "SHOW DEFAULT SHADOW ALGORITHM", Rows: nil,
			Uses: []rule.Use{{Item: "shadow_rule", Units: []string{"ds", "ds_shadow"}}}, Count: 1},
		{Name: "drop", Units: units, Statements: []string{create, "DROP SHADOW RULE IF EXISTS nope, shadow_rule"}, Gone: true},
		{Name: "drop algorithm", Units: units, Statements: []string{create, "DROP SHADOW ALGORITHM IF EXISTS shadow_rule_t_order_sql_hint_0"},
			Show: "SHOW SHADOW TABLE RULES", Rows: [][]string{{"t_order", ""}, {"t_order_item", "shadow_rule_t_order_item_value_match_0"}},
			Uses: []rule.Use{{Item: "shadow_rule", Units: []string{"ds", "ds_shadow"}}}, Count: 1},
	})
}

// TestUpstreamScenarioPassesCheck: the shadow rules of upstream's e2e
// scenarios (read in place from the shared reference) pass the family's
// check, as an upstream node loads them.
func TestUpstreamScenarioPassesCheck(t *testing.T) {
	files, _ := filepath.Glob("../../../../shared/reference/shardingsphere-e2e/env/scenario/*shadow*/proxy/conf/*/database-*.yaml")
	if len(files) == 0 {
		t.Skip("no shared reference")
	}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		db, err := config.ParseDatabase(f, data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		r, ok := db.Rule("shadow")
		if !ok {
			continue
		}
		contents := map[string]map[string]any{}
		for _, r := range db.Rules {
			contents[r.Type] = r.Content
		}
		d := families.Database(db.Name, slices.Sorted(maps.Keys(db.DataSources)), contents)
		if errs, err := shadow.Family.Check(context.Background(), d, r.Content); err != nil || len(errs) > 0 {
			t.Errorf("%s: %v %v", f, errs, err)
		}
		checked++
	}
	if checked == 0 {
		t.Error("no shadow rule found in the scenarios")
	}
	t.Logf("%d scenario configurations checked", checked)
}
