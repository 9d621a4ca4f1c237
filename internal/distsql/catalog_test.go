package distsql

import "testing"

func TestParseLogicalTablesAndNoEngine(t *testing.T) {
	checkParses(t, []parseCase{
		{"SHOW LOGICAL TABLES", &ShowLogicalTables{}},
		{"SHOW FULL LOGICAL TABLES FROM db LIKE 't%'", &ShowLogicalTables{Full: true, Database: "db", Like: ptr("t%")}},
		{"PREVIEW SELECT * FROM t_order", &NoEngine{Statement: "PREVIEW"}},
		{"parse select 1", &NoEngine{Statement: "PARSE"}},
		{"FORMAT SELECT * FROM t", &NoEngine{Statement: "FORMAT"}},
		{"MIGRATE TABLE ds_0.t_order INTO t_order", &NoEngine{Statement: "MIGRATE TABLE", Migration: true}},
		{"SHOW MIGRATION LIST", &NoEngine{Statement: "SHOW MIGRATION", Migration: true}},
		{"COMMIT MIGRATION 'j01'", &NoEngine{Statement: "COMMIT MIGRATION", Migration: true}},
		{"REGISTER MIGRATION SOURCE STORAGE UNIT ds (URL='x')", &NoEngine{Statement: "REGISTER MIGRATION", Migration: true}},
		{"SHOW STREAMING LIST", &NoEngine{Statement: "SHOW STREAMING", Migration: true}},
		{"DROP STREAMING 'j'", &NoEngine{Statement: "DROP STREAMING", Migration: true}},
		{"COMMIT", &Transaction{Verb: "commit"}},
		{"USE migration", &Use{Database: "migration"}},
		{"ALTER READWRITE_SPLITTING RULE g DISABLE ds_1", &AlterReadwriteSplittingStatus{Group: "g", Unit: "ds_1"}},
		{"ALTER READWRITE_SPLITTING RULE g ENABLE ds_1 FROM db", &AlterReadwriteSplittingStatus{Group: "g", Unit: "ds_1", Database: "db", Enable: true}},
	})
}
