package readwrite_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/readwrite"
	"github.com/shardkeeper/shardkeeper/internal/rule/ruletest"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

func TestParseReadwrite(t *testing.T) {
	ruletest.Parses(t, readwrite.Family.Read, map[string]distsql.Statement{
		"CREATE READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1, ds_2), TYPE(NAME='random', PROPERTIES('read_weight'='2:1')))": &readwrite.CreateRule{Rules: []readwrite.Rule{{Name: "rw", Write: "ds_0", Reads: []string{"ds_1", "ds_2"}, HasLoadBal: true, LoadType: "random",
			LoadProps: []distsql.Property{{Key: "read_weight", Value: distsql.Value{Kind: distsql.StringValue, Text: "2:1"}}}}}},
		"create readwrite_splitting rule if not exists a (write_storage_unit=w, read_storage_units(r), transactional_read_query_strategy='fixed'), b (WRITE_STORAGE_UNIT=w2, READ_STORAGE_UNITS(r2))": &readwrite.CreateRule{IfNotExists: true, Rules: []readwrite.Rule{{Name: "a", Write: "w", Reads: []string{"r"}, Strategy: "FIXED"}, {Name: "b", Write: "w2", Reads: []string{"r2"}}}},
		"CREATE READWRITE_SPLITTING RULE rw (WRITE_RESOURCE=ds_0, READ_RESOURCES(ds_1))":                                                                                                              &readwrite.CreateRule{Rules: []readwrite.Rule{{Name: "rw", Write: "ds_0", Reads: []string{"ds_1"}}}},
		"ALTER READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_0))":                                                                                                       &readwrite.AlterRule{Rules: []readwrite.Rule{{Name: "rw", Write: "ds_0", Reads: []string{"ds_0"}}}},
		"DROP READWRITE_SPLITTING RULE IF EXISTS a, b FROM db":                                                                                                                                        &readwrite.DropRule{IfExists: true, Names: []string{"a", "b"}, Database: "db"},
		"SHOW READWRITE_SPLITTING RULES FROM db":                                                                                                                                                      &readwrite.ShowRules{Database: "db"},
		"SHOW READWRITE_SPLITTING RULE rw":                                                                                                                                                            &readwrite.ShowRules{Name: "rw"},
	})
	ruletest.ParseErrors(t, readwrite.Family.Read, map[string]string{
		"CREATE READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, BOGUS=1)": "WRITE_STORAGE_UNIT or READ_STORAGE_UNITS or TRANSACTIONAL_READ_QUERY_STRATEGY or TYPE expected",
		"DROP READWRITE_SPLITTING RULE":                                         "rule name expected",
	})
}

// TestScope: DROP and SHOW act on the database FROM names.
func TestScope(t *testing.T) {
	for _, q := range []string{"SHOW READWRITE_SPLITTING RULES FROM other_db", "SHOW READWRITE_SPLITTING RULE rw FROM other_db", "DROP READWRITE_SPLITTING RULE rw FROM other_db"} {
		st, err := distsql.Parse(q, readwrite.Family.Read)
		if err != nil {
			t.Fatal(err)
		}
		if sc := st.Scope(); sc.Database != "other_db" || sc.Cluster != "" {
			t.Errorf("%s: scope %+v, want other_db", q, sc)
		}
	}
}

// TestConformance runs the rule families' suite on the readwrite-splitting
// rule.
func TestConformance(t *testing.T) {
	units := []string{"ds_0", "ds_1", "ds_2", "ds_3"}
	create := "CREATE READWRITE_SPLITTING RULE rw_b (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1, ds_2), TYPE(NAME='random')), " +
		"rw_a (WRITE_STORAGE_UNIT=ds_3, READ_STORAGE_UNITS(ds_1), TRANSACTIONAL_READ_QUERY_STRATEGY='fixed')"
	ruletest.Run(t, readwrite.Family, []ruletest.Case{
		{Name: "create", Units: units, Statements: []string{create,
			"CREATE READWRITE_SPLITTING RULE IF NOT EXISTS rw_a (WRITE_STORAGE_UNIT=ds_2, READ_STORAGE_UNITS(ds_1)), rw_c (WRITE_STORAGE_UNIT=ds_2, READ_STORAGE_UNITS(ds_3))"},
			Refused: map[string]int{
				"CREATE READWRITE_SPLITTING RULE rw_a (WRITE_STORAGE_UNIT=ds_2, READ_STORAGE_UNITS(ds_1))":                    10204, // DuplicateRuleException
				"CREATE READWRITE_SPLITTING RULE RW_A (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1))":                    10200, // write unit of rw_b; names match exactly
				"CREATE READWRITE_SPLITTING RULE rw_d (WRITE_STORAGE_UNIT=ds_9, READ_STORAGE_UNITS(ds_1))":                    10102, // no such unit
				"CREATE READWRITE_SPLITTING RULE ds_2 (WRITE_STORAGE_UNIT=ds_2, READ_STORAGE_UNITS(ds_1))":                    10200, // named like a unit
				"CREATE READWRITE_SPLITTING RULE `a/b` (WRITE_STORAGE_UNIT=ds_2, READ_STORAGE_UNITS(ds_1))":                   10200,
				"CREATE READWRITE_SPLITTING RULE rw_d (WRITE_STORAGE_UNIT=ds_1, READ_STORAGE_UNITS(ds_1, ds_1))":              10200,
				"CREATE READWRITE_SPLITTING RULE rw_d (WRITE_STORAGE_UNIT=ds_1, READ_STORAGE_UNITS(ds_1), TYPE(NAME='nope'))": 30000,
				"ALTER READWRITE_SPLITTING RULE rw_x (WRITE_STORAGE_UNIT=ds_2, READ_STORAGE_UNITS(ds_1))":                     10202, // MissingRequiredRuleException
				"DROP READWRITE_SPLITTING RULE rw_x": 10202,
			},
			Show:  "SHOW READWRITE_SPLITTING RULES",
			Rows:  [][]string{{"rw_a", "ds_3", "ds_1", "FIXED", "", ""}, {"rw_b", "ds_0", "ds_1,ds_2", "PRIMARY", "RANDOM", ""}, {"rw_c", "ds_2", "ds_3", "PRIMARY", "", ""}},
			Uses:  []rule.Use{{Item: "rw_a", Units: []string{"ds_3", "ds_1"}}, {Item: "rw_b", Units: []string{"ds_0", "ds_1", "ds_2"}}, {Item: "rw_c", Units: []string{"ds_2", "ds_3"}}},
			Count: 3},
		{Name: "alter and drop", Units: units, Statements: []string{create,
			"ALTER READWRITE_SPLITTING RULE rw_b (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_2))",
			"DROP READWRITE_SPLITTING RULE IF EXISTS rw_a, rw_x"},
			Show: "SHOW READWRITE_SPLITTING RULE RW_B", Rows: [][]string{{"rw_b", "ds_0", "ds_2", "PRIMARY", "", ""}},
			Uses: []rule.Use{{Item: "rw_b", Units: []string{"ds_0", "ds_2"}}}, Count: 1},
		{Name: "drop all", Units: units, Statements: []string{create, "DROP READWRITE_SPLITTING RULE rw_a, rw_b"}, Gone: true},
	})
}

// TestDropInUse: DROP refuses a group another rule names, or the default
// single table unit (RuleInUsedException, 10203), and writes nothing.
func TestDropInUse(t *testing.T) {
	content := map[string]any{"dataSourceGroups": map[string]any{
		"rw_a": map[string]any{"writeDataSourceName": "ds_0", "readDataSourceNames": []any{"ds_1"}},
		"rw_b": map[string]any{"writeDataSourceName": "ds_2", "readDataSourceNames": []any{"ds_3"}}}}
	for _, c := range []struct {
		name  string
		inUse map[string][]string
		rules map[string]map[string]any
	}{
		{"sharding", map[string][]string{"rw_a": {"ShardingRule"}, "ds_0": {"ReadwriteSplittingRule"}}, nil},
		{"default single unit", nil, map[string]map[string]any{"single": {"defaultDataSource": "rw_a"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := distsql.Parse("DROP READWRITE_SPLITTING RULE rw_b, rw_a", readwrite.Family.Read)
			if err != nil {
				t.Fatal(err)
			}
			d := rule.Database{Name: "db", Units: []string{"ds_0", "ds_1", "ds_2", "ds_3"}, Rules: c.rules,
				InUse: func() map[string][]string { return c.inUse }}
			_, err = readwrite.Family.Change(st)(context.Background(), d, content)
			var se *sqlerr.Error
			if !errors.As(err, &se) || se.Code != 10203 || !strings.Contains(se.Message, "rw_a") || strings.Contains(se.Message, "rw_b") {
				t.Fatalf("%v, want 10203 naming rw_a only", err)
			}
		})
	}
	st, _ := distsql.Parse("DROP READWRITE_SPLITTING RULE rw_b", readwrite.Family.Read)
	d := rule.Database{Name: "db", InUse: func() map[string][]string { return map[string][]string{"rw_a": {"ShardingRule"}} }}
	got, err := readwrite.Family.Change(st)(context.Background(), d, content)
	if err != nil || len(readwrite.Groups(got)) != 1 || readwrite.Groups(got)["rw_a"] == nil {
		t.Fatalf("drop of an unused group: %v %v", got, err)
	}
}
