package single_test

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/ruletest"
	"github.com/shardkeeper/shardkeeper/internal/rule/single"
)

func ptr[T any](v T) *T { return &v }

func TestParseSingle(t *testing.T) {
	ruletest.Parses(t, single.Family.Read, map[string]distsql.Statement{
		"LOAD SINGLE TABLE *.*":                          &single.LoadRule{Tables: []string{"*.*"}},
		"LOAD SINGLE TABLE ds_0.t_a, ds_1.public.*":      &single.LoadRule{Tables: []string{"ds_0.t_a", "ds_1.public.*"}},
		"UNLOAD SINGLE TABLE t_a, t_b":                   &single.UnloadRule{Tables: []string{"t_a", "t_b"}},
		"UNLOAD SINGLE TABLE *":                          &single.UnloadRule{All: true},
		"UNLOAD ALL SINGLE TABLES":                       &single.UnloadRule{All: true},
		"SET DEFAULT SINGLE TABLE STORAGE UNIT = ds_0":   &single.SetDefaultUnit{Unit: "ds_0"},
		"SET DEFAULT SINGLE TABLE STORAGE UNIT = RANDOM": &single.SetDefaultUnit{},
		"SHOW DEFAULT SINGLE TABLE STORAGE UNIT FROM db": &single.ShowDefaultUnit{Database: "db"},
		"SHOW SINGLE TABLES LIKE 't_%'":                  &single.ShowTables{Like: ptr("t_%")},
		"SHOW SINGLE TABLE t_a FROM db":                  &single.ShowTables{Table: "t_a", Database: "db"},
		"SHOW UNLOADED SINGLE TABLES FROM db":            &single.ShowUnloaded{Database: "db"},
		"COUNT SINGLE TABLE":                             &distsql.CountRule{Type: "single"},
		"COUNT SINGLE TABLE FROM db":                     &distsql.CountRule{Type: "single", Database: "db"},
		"COUNT SINGLE RULE FROM db":                      &distsql.CountRule{Type: "single", Database: "db"},
	})
	ruletest.ParseErrors(t, single.Family.Read, map[string]string{
		"LOAD SINGLE TABLE t_a":                 "storage_unit.table or storage_unit.schema.table expected",
		"SET DEFAULT SINGLE TABLE STORAGE UNIT": "expected",
	})
}

// TestScope: the queries act on the database FROM names, the session's
// without it.
func TestScope(t *testing.T) {
	for q, want := range map[string]distsql.Scope{
		"SHOW SINGLE TABLES FROM other_db":                     {Database: "other_db", Session: true},
		"SHOW SINGLE TABLE t FROM other_db":                    {Database: "other_db", Session: true},
		"SHOW DEFAULT SINGLE TABLE STORAGE UNIT FROM other_db": {Database: "other_db", Session: true},
		"SHOW UNLOADED SINGLE TABLES":                          {Session: true},
		"COUNT SINGLE TABLE FROM other_db":                     {Database: "other_db", Session: true},
	} {
		st, err := distsql.Parse(q, single.Family.Read)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if sc := st.Scope(); sc != want {
			t.Errorf("%s: Scope = %+v, want %+v", q, sc, want)
		}
	}
}

// TestConformance runs the rule families' suite on the single rule, the
// units' tables read through the suite's introspection.
func TestConformance(t *testing.T) {
	units := []string{"ds_0", "ds_1"}
	tables := map[string][]string{"ds_0": {"t_a", "t_b"}, "ds_1": {"t_c"}}
	ruletest.Run(t, single.Family, []ruletest.Case{
		{Name: "load", Units: units, Tables: tables,
			Statements: []string{"LOAD SINGLE TABLE ds_0.t_a, ds_1.*", "SET DEFAULT SINGLE TABLE STORAGE UNIT = ds_1"},
			Refused: map[string]int{
				"LOAD SINGLE TABLE ds_9.t_a":                   10102, // the unit does not exist
				"LOAD SINGLE TABLE ds_0.t_x":                   10501, // nor the table
				"UNLOAD SINGLE TABLE t_b":                      10501, // not a single table
				"UNLOAD SINGLE TABLE t_c":                      10500, // loaded by ds_1.*
				"SET DEFAULT SINGLE TABLE STORAGE UNIT = ds_9": 10102,
			},
			Show:  "SHOW SINGLE TABLES",
			Rows:  [][]string{{"t_a", "ds_0"}, {"t_c", "ds_1"}},
			Uses:  []rule.Use{{Item: "t_a", Units: []string{"ds_0"}}, {Units: []string{"ds_1"}}},
			Count: 2},
		{Name: "unloaded", Units: units, Tables: tables, Statements: []string{"LOAD SINGLE TABLE ds_0.t_a"},
			Show: "SHOW UNLOADED SINGLE TABLES", Rows: [][]string{{"t_b", "ds_0"}, {"t_c", "ds_1"}},
			Uses: []rule.Use{{Item: "t_a", Units: []string{"ds_0"}}}, Count: 1},
		{Name: "default", Units: units, Statements: []string{"SET DEFAULT SINGLE TABLE STORAGE UNIT = ds_0"},
			Show: "SHOW DEFAULT SINGLE TABLE STORAGE UNIT", Rows: [][]string{{"ds_0"}}},
		{Name: "unload", Units: units, Tables: tables,
			Statements: []string{"LOAD SINGLE TABLE ds_0.t_a, ds_0.t_b", "UNLOAD SINGLE TABLE t_a"},
			Show:       "SHOW SINGLE TABLE t_b", Rows: [][]string{{"t_b", "ds_0"}},
			Uses: []rule.Use{{Item: "t_b", Units: []string{"ds_0"}}}, Count: 1},
		{Name: "unload all", Units: units, Tables: tables,
			Statements: []string{"LOAD SINGLE TABLE *.*", "UNLOAD ALL SINGLE TABLES"}, Gone: true},
	})
}
