package sharding_test

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rule/ruletest"
	"github.com/shardkeeper/shardkeeper/internal/rule/sharding"
)

func TestParseSharding(t *testing.T) {
	inline := func(expr string) *distsql.Algorithm {
		return &distsql.Algorithm{Type: "inline", Props: []distsql.Property{{Key: "algorithm-expression", Value: distsql.Value{Kind: distsql.StringValue, Text: expr}}}}
	}
	cases := []struct {
		sql  string
		want distsql.Statement
	}{
		// upstream's e2e case, as written there.
		{"CREATE SHARDING TABLE RULE t_order (DATANODES('ds_2.t_order_${0..1}'),TABLE_STRATEGY(TYPE='standard',SHARDING_COLUMN=order_id,SHARDING_ALGORITHM(TYPE(NAME='inline',PROPERTIES('algorithm-expression'='t_order_${order_id % 2}')))));",
			&sharding.CreateTableRule{Rules: []sharding.TableRule{{Table: "t_order", DataNodes: []string{"ds_2.t_order_${0..1}"},
				TableStrategy: &sharding.Strategy{Type: "standard", Columns: []string{"order_id"}, Algorithm: inline("t_order_${order_id % 2}")}}}}},
		{`CREATE SHARDING TABLE RULE IF NOT EXISTS t_order_item (DATANODES("ds_${0..1}.t_order_item_${0..1}"),
			DATABASE_STRATEGY(TYPE="standard",SHARDING_COLUMN=user_id,SHARDING_ALGORITHM(TYPE(NAME="inline",PROPERTIES("algorithm-expression"="ds_${user_id % 2}")))),
			KEY_GENERATE_STRATEGY(COLUMN=another_id,TYPE(NAME="snowflake")),
			AUDIT_STRATEGY (TYPE(NAME="DML_SHARDING_CONDITIONS"),ALLOW_HINT_DISABLE=true))`,
			&sharding.CreateTableRule{IfNotExists: true, Rules: []sharding.TableRule{{Table: "t_order_item", DataNodes: []string{"ds_${0..1}.t_order_item_${0..1}"},
				DatabaseStrategy: &sharding.Strategy{Type: "standard", Columns: []string{"user_id"}, Algorithm: inline("ds_${user_id % 2}")},
				KeyGenerate:      &sharding.KeyGenerateStrategy{Column: "another_id", Algorithm: distsql.Algorithm{Type: "snowflake"}},
				Audit:            &sharding.AuditStrategy{Auditors: []distsql.Algorithm{{Type: "DML_SHARDING_CONDITIONS"}}, AllowHintDisable: true}}}}},
		{`ALTER SHARDING TABLE RULE t_order (STORAGE_UNITS(ds_0,ds_1), SHARDING_COLUMN=order_id,TYPE(NAME="hash_mod",PROPERTIES("sharding-count"="4"))), t_x (DATANODES('ds_0.t_x'))`,
			&sharding.AlterTableRule{Rules: []sharding.TableRule{
				{Table: "t_order", StorageUnits: []string{"ds_0", "ds_1"}, ShardingColumn: "order_id", Algorithm: &distsql.Algorithm{Type: "hash_mod", Props: []distsql.Property{{Key: "sharding-count", Value: distsql.Value{Kind: distsql.StringValue, Text: "4"}}}}},
				{Table: "t_x", DataNodes: []string{"ds_0.t_x"}}}}},
		{"CREATE SHARDING TABLE RULE t (DATANODES('ds_0.t_${0..1}'), TABLE_STRATEGY(TYPE='complex', SHARDING_COLUMNS=a,b, SHARDING_ALGORITHM(TYPE(NAME='complex_inline'))))",
			&sharding.CreateTableRule{Rules: []sharding.TableRule{{Table: "t", DataNodes: []string{"ds_0.t_${0..1}"},
				TableStrategy: &sharding.Strategy{Type: "complex", Columns: []string{"a", "b"}, Algorithm: &distsql.Algorithm{Type: "complex_inline"}}}}}},
		{"DROP SHARDING TABLE RULE IF EXISTS t_order, t_order_item", &sharding.DropTableRule{IfExists: true, Tables: []string{"t_order", "t_order_item"}}},
		{"CREATE SHARDING TABLE REFERENCE RULE reference_0 (t_order,t_order_item);", &sharding.CreateTableReferenceRule{Rules: []sharding.TableReference{{Name: "reference_0", Tables: []string{"t_order", "t_order_item"}}}}},
		{"ALTER SHARDING TABLE REFERENCE RULE r (a,b), s (c,d)", &sharding.AlterTableReferenceRule{Rules: []sharding.TableReference{{Name: "r", Tables: []string{"a", "b"}}, {Name: "s", Tables: []string{"c", "d"}}}}},
		{"DROP SHARDING TABLE REFERENCE RULE IF EXISTS reference_0", &sharding.DropTableReferenceRule{IfExists: true, Names: []string{"reference_0"}}},
		{"CREATE DEFAULT SHARDING DATABASE STRATEGY (TYPE='standard', SHARDING_COLUMN=user_id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='ds_${user_id % 2}'))))",
			&sharding.CreateDefaultStrategy{Kind: "DATABASE", Strategy: sharding.Strategy{Type: "standard", Columns: []string{"user_id"}, Algorithm: inline("ds_${user_id % 2}")}}},
		{"ALTER DEFAULT SHARDING TABLE STRATEGY (TYPE='none')", &sharding.CreateDefaultStrategy{Alter: true, Kind: "TABLE", Strategy: sharding.Strategy{Type: "none"}}},
		{"CREATE DEFAULT SHARDING TABLE STRATEGY IF NOT EXISTS (TYPE='hint', SHARDING_ALGORITHM(TYPE(NAME='hint_inline')))",
			&sharding.CreateDefaultStrategy{IfNotExists: true, Kind: "TABLE", Strategy: sharding.Strategy{Type: "hint", Algorithm: &distsql.Algorithm{Type: "hint_inline"}}}},
		{"DROP DEFAULT SHARDING TABLE STRATEGY IF EXISTS", &sharding.DropDefaultStrategy{Kind: "TABLE", IfExists: true}},
		{"DROP SHARDING ALGORITHM IF EXISTS a, b", &sharding.DropAlgorithm{IfExists: true, Names: []string{"a", "b"}}},
		{"DROP SHARDING KEY GENERATOR snowflake_gen", &sharding.DropKeyGenerator{Names: []string{"snowflake_gen"}}},
		{`CREATE SHARDING KEY GENERATE STRATEGY order_id_strategy (TABLE=t_order, COLUMN=order_id, TYPE(NAME="snowflake",PROPERTIES("worker-id"=1)))`,
			&sharding.CreateKeyGenerateStrategy{Name: "order_id_strategy", Definition: sharding.KeyGenerateStrategyDefinition{Table: "t_order", Column: "order_id",
				Algorithm: &distsql.Algorithm{Type: "snowflake", Props: []distsql.Property{{Key: "worker-id", Value: distsql.Value{Kind: distsql.IntValue, Text: "1"}}}}}}},
		{`ALTER SHARDING KEY GENERATE STRATEGY s (SEQUENCE="order_seq", GENERATOR=uuid_gen)`,
			&sharding.CreateKeyGenerateStrategy{Alter: true, Name: "s", Definition: sharding.KeyGenerateStrategyDefinition{Sequence: "order_seq", Generator: "uuid_gen"}}},
		{"DROP SHARDING KEY GENERATE STRATEGY IF EXISTS s1, s2", &sharding.DropKeyGenerateStrategy{IfExists: true, Names: []string{"s1", "s2"}}},

		{"SHOW SHARDING TABLE RULES FROM db", &sharding.ShowTableRules{Database: "db"}},
		{"SHOW SHARDING TABLE RULE t_order", &sharding.ShowTableRules{Table: "t_order"}},
		{"SHOW SHARDING TABLE REFERENCE RULES", &sharding.ShowTableReferenceRules{}},
		{"SHOW SHARDING TABLE REFERENCE RULE r FROM db", &sharding.ShowTableReferenceRules{Name: "r", Database: "db"}},
		{"SHOW SHARDING TABLE NODES", &sharding.ShowTableNodes{}},
		{"SHOW SHARDING TABLE NODES t_order FROM db", &sharding.ShowTableNodes{Table: "t_order", Database: "db"}},
		{"SHOW SHARDING ALGORITHMS", &sharding.ShowAlgorithms{}},
		{"SHOW SHARDING KEY GENERATORS FROM db", &sharding.ShowKeyGenerators{Database: "db"}},
		{"SHOW SHARDING AUDITORS FROM db", &sharding.ShowAuditors{Database: "db"}},
		{"SHOW UNUSED SHARDING AUDITORS", &sharding.ShowUnusedAuditors{}},
		{"SHOW SHARDING TABLE RULES USED ALGORITHM e2e_standard_fixture", &sharding.ShowTableRulesUsed{Kind: "ALGORITHM", Name: "e2e_standard_fixture"}},
		{"SHOW SHARDING TABLE RULES USED KEY GENERATOR constant FROM db", &sharding.ShowTableRulesUsed{Kind: "KEY GENERATOR", Name: "constant", Database: "db"}},
		{"show sharding table rules used auditor auditor_constant", &sharding.ShowTableRulesUsed{Kind: "AUDITOR", Name: "auditor_constant"}},
		{"SHOW SHARDING KEY GENERATE STRATEGIES", &sharding.ShowKeyGenerateStrategies{}},
		{"SHOW SHARDING KEY GENERATE STRATEGY s FROM db", &sharding.ShowKeyGenerateStrategies{Name: "s", Database: "db"}},
		{"SHOW DEFAULT SHARDING STRATEGY", &sharding.ShowDefaultStrategy{}},
		{"SHOW UNUSED SHARDING ALGORITHMS FROM db", &sharding.ShowUnusedAlgorithms{Database: "db"}},
		{"SHOW UNUSED SHARDING KEY GENERATORS", &sharding.ShowUnusedKeyGenerators{}},
	}
	want := map[string]distsql.Statement{}
	for _, c := range cases {
		want[c.sql] = c.want
	}
	ruletest.Parses(t, sharding.Family.Read, want)
	ruletest.ParseErrors(t, sharding.Family.Read, map[string]string{
		"CREATE SHARDING TABLE RULE t (SHARDING_COLUMN=a)":                     "DATANODES or STORAGE_UNITS expected",
		"CREATE SHARDING TABLE RULE t (DATANODES(ds_0.t))":                     "data node expected",
		"CREATE SHARDING TABLE RULE t (STORAGE_UNITS(ds_0), TYPE(NAME='mod'))": "SHARDING_COLUMN expected",
		"CREATE DEFAULT SHARDING VIEW STRATEGY (TYPE='none')":                  "DATABASE expected",
		"SHOW SHARDING NOPE":       "TABLE RULES or",
		"DROP SHARDING TABLE RULE": "table name expected",
	})
	// COUNT SHARDING RULE is distsql's CountRule, which the console
	// answers with the family's Count.
	if st, err := families.Parse("COUNT SHARDING RULE FROM db"); err != nil || *st.(*distsql.CountRule) != (distsql.CountRule{Type: sharding.Type, Database: "db"}) {
		t.Errorf("COUNT SHARDING RULE FROM db = %#v, %v", st, err)
	}
}

// TestScope: the queries act on the database FROM names, the session's
// without it; the changes act on the session's database, not the cluster.
func TestScope(t *testing.T) {
	for _, q := range []string{
		"SHOW SHARDING TABLE RULES FROM other_db", "SHOW SHARDING TABLE RULE t FROM other_db",
		"SHOW SHARDING ALGORITHMS FROM other_db", "SHOW SHARDING KEY GENERATORS FROM other_db", "SHOW SHARDING TABLE NODES FROM other_db",
		"SHOW SHARDING TABLE REFERENCE RULES FROM other_db", "SHOW DEFAULT SHARDING STRATEGY FROM other_db",
		"SHOW UNUSED SHARDING ALGORITHMS FROM other_db", "SHOW SHARDING AUDITORS FROM other_db",
		"SHOW UNUSED SHARDING KEY GENERATORS FROM other_db", "SHOW UNUSED SHARDING AUDITORS FROM other_db",
		"SHOW SHARDING KEY GENERATE STRATEGIES FROM other_db", "SHOW SHARDING TABLE RULES USED ALGORITHM a FROM other_db",
	} {
		st, err := families.Parse(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if sc := st.Scope(); sc != (distsql.Scope{Database: "other_db", Session: true}) {
			t.Errorf("%s: Scope = %+v", q, sc)
		}
		q = q[:len(q)-len(" FROM other_db")]
		if st, err = families.Parse(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if sc := st.Scope(); sc != (distsql.Scope{Session: true}) {
			t.Errorf("%s: Scope = %+v", q, sc)
		}
	}
	for _, q := range []string{"CREATE SHARDING TABLE RULE t (DATANODES('ds_0.t'))", "DROP SHARDING TABLE RULE t", "DROP SHARDING ALGORITHM a"} {
		st, err := families.Parse(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if sc := st.Scope(); sc != (distsql.Scope{Session: true}) {
			t.Errorf("%s: Scope = %+v, want the session's database", q, sc)
		}
	}
}

// TestConformance runs the rule families' suite on the sharding rule.
func TestConformance(t *testing.T) {
	units := []string{"ds_0", "ds_1"}
	order := "CREATE SHARDING TABLE RULE t_order (DATANODES('ds_${0..1}.t_order_${0..1}'), " +
		"DATABASE_STRATEGY(TYPE='standard', SHARDING_COLUMN=user_id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='ds_${user_id % 2}')))), " +
		"TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=order_id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='t_order_${order_id % 2}')))), " +
		"KEY_GENERATE_STRATEGY(COLUMN=order_id, TYPE(NAME='snowflake')))"
	auto := "CREATE SHARDING TABLE RULE t_auto (STORAGE_UNITS(ds_0, ds_1), SHARDING_COLUMN=id, TYPE(NAME='hash_mod', PROPERTIES('sharding-count'='4')))"
	ruletest.Run(t, sharding.Family, []ruletest.Case{
		{Name: "tables", Units: units, Statements: []string{order, auto, "CREATE SHARDING TABLE REFERENCE RULE ref_0 (t_order, t_auto)"},
			Refused: map[string]int{
				"CREATE SHARDING TABLE RULE T_ORDER (DATANODES('ds_0.t'))":                                      10204, // DuplicateRuleException, any case
				"DROP SHARDING TABLE RULE t_x":                                                                  10202, // MissingRequiredRuleException
				"DROP SHARDING TABLE RULE t_order":                                                              10203, // bound by ref_0
				"DROP SHARDING ALGORITHM t_auto_hash_mod":                                                       10403, // used by t_auto
				"CREATE SHARDING TABLE RULE t_x (DATANODES('ds_9.t_x'))":                                        10102, // no such unit (the check)
				"CREATE SHARDING TABLE RULE t_x (STORAGE_UNITS(ds_0), SHARDING_COLUMN=id, TYPE(NAME='inline'))": 10404, // not an auto algorithm
			},
			Show: "SHOW SHARDING TABLE NODES",
			Rows: [][]string{
				{"t_order", "ds_0.t_order_0, ds_0.t_order_1, ds_1.t_order_0, ds_1.t_order_1"},
				{"t_auto", "ds_0.t_auto_0, ds_1.t_auto_1, ds_0.t_auto_2, ds_1.t_auto_3"},
			},
			Uses:  []rule.Use{{Item: "t_order", Units: units}, {Item: "t_auto", Units: units}},
			Count: 3}, // two tables, one reference
		{Name: "default strategy", Units: units, Statements: []string{
			"CREATE DEFAULT SHARDING DATABASE STRATEGY (TYPE='standard', SHARDING_COLUMN=user_id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='ds_${user_id % 2}'))))"},
			Refused: map[string]int{
				"CREATE DEFAULT SHARDING DATABASE STRATEGY (TYPE='none')": 10204,
				"ALTER DEFAULT SHARDING TABLE STRATEGY (TYPE='none')":     10202,
			},
			Show: "SHOW DEFAULT SHARDING STRATEGY",
			Rows: [][]string{
				{"TABLE", "", "", "", "", ""},
				{"DATABASE", "STANDARD", "user_id", "default_database_inline", "inline", `{"algorithm-expression":"ds_${user_id % 2}"}`},
			}},
		{Name: "drop", Units: units, Statements: []string{auto, "DROP SHARDING TABLE RULE IF EXISTS T_AUTO, t_x"}, Gone: true},
	})
}
