package distsql

import (
	"testing"
)

func TestParseRuleStatements(t *testing.T) {
	checkParses(t, []parseCase{
		{"SHOW STATUS FROM READWRITE_SPLITTING RULES", &ShowReadwriteSplittingStatus{}},
		{"SHOW STATUS FROM READWRITE_SPLITTING RULE rw FROM db", &ShowReadwriteSplittingStatus{Name: "rw", Database: "db"}},
		{"SHOW RULES USED STORAGE UNIT ds_0 FROM db", &ShowRulesUsedStorageUnit{Unit: "ds_0", Database: "db"}},
		{"COUNT READWRITE_SPLITTING RULE FROM db", &CountRule{Type: "readwrite_splitting", Database: "db"}},
		{"CREATE DATABASE IF NOT EXISTS d1", &CreateDatabase{Name: "d1", IfNotExists: true}},
		{"DROP DATABASE d1", &DropDatabase{Name: "d1"}},
		// Statements of other files still parse as before.
		{"ALTER STORAGE UNIT ds (URL='jdbc:mysql://h/d', USER='u')", &AlterStorageUnit{Units: []StorageUnit{{Name: "ds", URL: "jdbc:mysql://h/d", User: "u"}}}},
		{"SET NAMES utf8mb4", &SetVariables{Assignments: []Assignment{{Name: "names", Value: Value{Kind: WordValue, Text: "utf8mb4"}}}}},
	})
	for _, bad := range []string{
		"COUNT 'x' RULE",
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s: parsed, want a syntax error", bad)
		}
	}
}
