package distsql

import (
	"testing"
)

func TestParseRuleStatements(t *testing.T) {
	checkParses(t, []parseCase{
		{"SHOW STATUS FROM READWRITE_SPLITTING RULES", &ShowReadwriteSplittingStatus{}},
		{"SHOW STATUS FROM READWRITE_SPLITTING RULE rw FROM db", &ShowReadwriteSplittingStatus{Name: "rw", Database: "db"}},
		{"LOAD SINGLE TABLE *.*", &LoadSingleTable{Tables: []string{"*.*"}}},
		{"LOAD SINGLE TABLE ds_0.t_a, ds_1.public.*", &LoadSingleTable{Tables: []string{"ds_0.t_a", "ds_1.public.*"}}},
		{"UNLOAD SINGLE TABLE t_a, t_b", &UnloadSingleTable{Tables: []string{"t_a", "t_b"}}},
		{"UNLOAD SINGLE TABLE *", &UnloadSingleTable{All: true}},
		{"UNLOAD ALL SINGLE TABLES", &UnloadSingleTable{All: true}},
		{"SET DEFAULT SINGLE TABLE STORAGE UNIT = ds_0", &SetDefaultSingleTableStorageUnit{Unit: "ds_0"}},
		{"SET DEFAULT SINGLE TABLE STORAGE UNIT = RANDOM", &SetDefaultSingleTableStorageUnit{}},
		{"SHOW DEFAULT SINGLE TABLE STORAGE UNIT FROM db", &ShowDefaultSingleTableStorageUnit{Database: "db"}},
		{"SHOW SINGLE TABLES LIKE 't_%'", &ShowSingleTables{Like: ptr("t_%")}},
		{"SHOW SINGLE TABLE t_a FROM db", &ShowSingleTables{Table: "t_a", Database: "db"}},
		{"SHOW RULES USED STORAGE UNIT ds_0 FROM db", &ShowRulesUsedStorageUnit{Unit: "ds_0", Database: "db"}},
		{"COUNT READWRITE_SPLITTING RULE FROM db", &CountRule{Type: "readwrite_splitting", Database: "db"}},
		{"COUNT SINGLE TABLE", &CountRule{Type: "single"}},
		{"CREATE DATABASE IF NOT EXISTS d1", &CreateDatabase{Name: "d1", IfNotExists: true}},
		{"DROP DATABASE d1", &DropDatabase{Name: "d1"}},
		// Statements of other files still parse as before.
		{"ALTER STORAGE UNIT ds (URL='jdbc:mysql://h/d', USER='u')", &AlterStorageUnit{Units: []StorageUnit{{Name: "ds", URL: "jdbc:mysql://h/d", User: "u"}}}},
		{"SHOW SHARDING TABLE RULES", &ShowShardingTableRules{}},
		{"SET NAMES utf8mb4", &SetVariables{Assignments: []Assignment{{Name: "names", Value: Value{Kind: WordValue, Text: "utf8mb4"}}}}},
	})
	for _, bad := range []string{
		"LOAD SINGLE TABLE t_a",
		"COUNT 'x' RULE",
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s: parsed, want a syntax error", bad)
		}
	}
}
