package distsql

import (
	"testing"
)

func TestParseSharding(t *testing.T) {
	inline := func(expr string) *Algorithm {
		return &Algorithm{Type: "inline", Props: []Property{{Key: "algorithm-expression", Value: Value{Kind: StringValue, Text: expr}}}}
	}
	checkParses(t, []parseCase{
		// upstream's e2e case, as written there.
		{"CREATE SHARDING TABLE RULE t_order (DATANODES('ds_2.t_order_${0..1}'),TABLE_STRATEGY(TYPE='standard',SHARDING_COLUMN=order_id,SHARDING_ALGORITHM(TYPE(NAME='inline',PROPERTIES('algorithm-expression'='t_order_${order_id % 2}')))));",
			&CreateShardingTableRule{Rules: []ShardingTableRule{{Table: "t_order", DataNodes: []string{"ds_2.t_order_${0..1}"},
				TableStrategy: &ShardingStrategy{Type: "standard", Columns: []string{"order_id"}, Algorithm: inline("t_order_${order_id % 2}")}}}}},
		{`CREATE SHARDING TABLE RULE IF NOT EXISTS t_order_item (DATANODES("ds_${0..1}.t_order_item_${0..1}"),
			DATABASE_STRATEGY(TYPE="standard",SHARDING_COLUMN=user_id,SHARDING_ALGORITHM(TYPE(NAME="inline",PROPERTIES("algorithm-expression"="ds_${user_id % 2}")))),
			KEY_GENERATE_STRATEGY(COLUMN=another_id,TYPE(NAME="snowflake")),
			AUDIT_STRATEGY (TYPE(NAME="DML_SHARDING_CONDITIONS"),ALLOW_HINT_DISABLE=true))`,
			&CreateShardingTableRule{IfNotExists: true, Rules: []ShardingTableRule{{Table: "t_order_item", DataNodes: []string{"ds_${0..1}.t_order_item_${0..1}"},
				DatabaseStrategy: &ShardingStrategy{Type: "standard", Columns: []string{"user_id"}, Algorithm: inline("ds_${user_id % 2}")},
				KeyGenerate:      &KeyGenerateStrategy{Column: "another_id", Algorithm: Algorithm{Type: "snowflake"}},
				Audit:            &AuditStrategy{Auditors: []Algorithm{{Type: "DML_SHARDING_CONDITIONS"}}, AllowHintDisable: true}}}}},
		{`ALTER SHARDING TABLE RULE t_order (STORAGE_UNITS(ds_0,ds_1), SHARDING_COLUMN=order_id,TYPE(NAME="hash_mod",PROPERTIES("sharding-count"="4"))), t_x (DATANODES('ds_0.t_x'))`,
			&AlterShardingTableRule{Rules: []ShardingTableRule{
				{Table: "t_order", StorageUnits: []string{"ds_0", "ds_1"}, ShardingColumn: "order_id", Algorithm: &Algorithm{Type: "hash_mod", Props: []Property{{Key: "sharding-count", Value: Value{Kind: StringValue, Text: "4"}}}}},
				{Table: "t_x", DataNodes: []string{"ds_0.t_x"}}}}},
		{"CREATE SHARDING TABLE RULE t (DATANODES('ds_0.t_${0..1}'), TABLE_STRATEGY(TYPE='complex', SHARDING_COLUMNS=a,b, SHARDING_ALGORITHM(TYPE(NAME='complex_inline'))))",
			&CreateShardingTableRule{Rules: []ShardingTableRule{{Table: "t", DataNodes: []string{"ds_0.t_${0..1}"},
				TableStrategy: &ShardingStrategy{Type: "complex", Columns: []string{"a", "b"}, Algorithm: &Algorithm{Type: "complex_inline"}}}}}},
		{"DROP SHARDING TABLE RULE IF EXISTS t_order, t_order_item", &DropShardingTableRule{IfExists: true, Tables: []string{"t_order", "t_order_item"}}},
		{"CREATE SHARDING TABLE REFERENCE RULE reference_0 (t_order,t_order_item);", &CreateShardingTableReferenceRule{Rules: []TableReference{{Name: "reference_0", Tables: []string{"t_order", "t_order_item"}}}}},
		{"ALTER SHARDING TABLE REFERENCE RULE r (a,b), s (c,d)", &AlterShardingTableReferenceRule{Rules: []TableReference{{Name: "r", Tables: []string{"a", "b"}}, {Name: "s", Tables: []string{"c", "d"}}}}},
		{"DROP SHARDING TABLE REFERENCE RULE IF EXISTS reference_0", &DropShardingTableReferenceRule{IfExists: true, Names: []string{"reference_0"}}},
		{"CREATE DEFAULT SHARDING DATABASE STRATEGY (TYPE='standard', SHARDING_COLUMN=user_id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='ds_${user_id % 2}'))))",
			&CreateDefaultShardingStrategy{Kind: "DATABASE", Strategy: ShardingStrategy{Type: "standard", Columns: []string{"user_id"}, Algorithm: inline("ds_${user_id % 2}")}}},
		{"ALTER DEFAULT SHARDING TABLE STRATEGY (TYPE='none')", &CreateDefaultShardingStrategy{Alter: true, Kind: "TABLE", Strategy: ShardingStrategy{Type: "none"}}},
		{"CREATE DEFAULT SHARDING TABLE STRATEGY IF NOT EXISTS (TYPE='hint', SHARDING_ALGORITHM(TYPE(NAME='hint_inline')))",
			&CreateDefaultShardingStrategy{IfNotExists: true, Kind: "TABLE", Strategy: ShardingStrategy{Type: "hint", Algorithm: &Algorithm{Type: "hint_inline"}}}},
		{"DROP DEFAULT SHARDING TABLE STRATEGY IF EXISTS", &DropDefaultShardingStrategy{Kind: "TABLE", IfExists: true}},
		{"DROP SHARDING ALGORITHM IF EXISTS a, b", &DropShardingAlgorithm{IfExists: true, Names: []string{"a", "b"}}},
		{"DROP SHARDING KEY GENERATOR snowflake_gen", &DropShardingKeyGenerator{Names: []string{"snowflake_gen"}}},
		{`CREATE SHARDING KEY GENERATE STRATEGY order_id_strategy (TABLE=t_order, COLUMN=order_id, TYPE(NAME="snowflake",PROPERTIES("worker-id"=1)))`,
			&CreateShardingKeyGenerateStrategy{Name: "order_id_strategy", Definition: KeyGenerateStrategyDefinition{Table: "t_order", Column: "order_id",
				Algorithm: &Algorithm{Type: "snowflake", Props: []Property{{Key: "worker-id", Value: Value{Kind: IntValue, Text: "1"}}}}}}},
		{`ALTER SHARDING KEY GENERATE STRATEGY s (SEQUENCE="order_seq", GENERATOR=uuid_gen)`,
			&CreateShardingKeyGenerateStrategy{Alter: true, Name: "s", Definition: KeyGenerateStrategyDefinition{Sequence: "order_seq", Generator: "uuid_gen"}}},
		{"DROP SHARDING KEY GENERATE STRATEGY IF EXISTS s1, s2", &DropShardingKeyGenerateStrategy{IfExists: true, Names: []string{"s1", "s2"}}},

		{"SHOW SHARDING TABLE RULES FROM db", &ShowShardingTableRules{Database: "db"}},
		{"SHOW SHARDING TABLE RULE t_order", &ShowShardingTableRules{Table: "t_order"}},
		{"SHOW SHARDING TABLE REFERENCE RULES", &ShowShardingTableReferenceRules{}},
		{"SHOW SHARDING TABLE REFERENCE RULE r FROM db", &ShowShardingTableReferenceRules{Name: "r", Database: "db"}},
		{"SHOW SHARDING TABLE NODES", &ShowShardingTableNodes{}},
		{"SHOW SHARDING TABLE NODES t_order FROM db", &ShowShardingTableNodes{Table: "t_order", Database: "db"}},
		{"SHOW SHARDING ALGORITHMS", &ShowShardingAlgorithms{}},
		{"SHOW SHARDING KEY GENERATORS FROM db", &ShowShardingKeyGenerators{Database: "db"}},
		{"SHOW SHARDING AUDITORS FROM db", &ShowShardingAuditors{Database: "db"}},
		{"SHOW UNUSED SHARDING AUDITORS", &ShowUnusedShardingAuditors{}},
		{"SHOW SHARDING TABLE RULES USED ALGORITHM e2e_standard_fixture", &ShowShardingTableRulesUsed{Kind: "ALGORITHM", Name: "e2e_standard_fixture"}},
		{"SHOW SHARDING TABLE RULES USED KEY GENERATOR constant FROM db", &ShowShardingTableRulesUsed{Kind: "KEY GENERATOR", Name: "constant", Database: "db"}},
		{"show sharding table rules used auditor auditor_constant", &ShowShardingTableRulesUsed{Kind: "AUDITOR", Name: "auditor_constant"}},
		{"SHOW SHARDING KEY GENERATE STRATEGIES", &ShowShardingKeyGenerateStrategies{}},
		{"SHOW SHARDING KEY GENERATE STRATEGY s FROM db", &ShowShardingKeyGenerateStrategies{Name: "s", Database: "db"}},
		{"SHOW DEFAULT SHARDING STRATEGY", &ShowDefaultShardingStrategy{}},
		{"SHOW UNUSED SHARDING ALGORITHMS FROM db", &ShowUnusedShardingAlgorithms{Database: "db"}},
		{"SHOW UNUSED SHARDING KEY GENERATORS", &ShowUnusedShardingKeyGenerators{}},
		{"COUNT SHARDING RULE FROM db", &CountShardingRule{Database: "db"}},
	})
}

func TestParseShardingErrors(t *testing.T) {
	checkParseErrors(t, []parseErrorCase{
		{"CREATE SHARDING TABLE RULE t (SHARDING_COLUMN=a)", "DATANODES or STORAGE_UNITS expected"},
		{"CREATE SHARDING TABLE RULE t (DATANODES(ds_0.t))", "data node expected"},
		{"CREATE SHARDING TABLE RULE t (STORAGE_UNITS(ds_0), TYPE(NAME='mod'))", "SHARDING_COLUMN expected"},
		{"CREATE DEFAULT SHARDING VIEW STRATEGY (TYPE='none')", "DATABASE expected"},
		{"SHOW SHARDING NOPE", "TABLE RULES or"},
		{"DROP SHARDING TABLE RULE", "table name expected"},
	})
}
