package global_test

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rule/global"
	"github.com/shardkeeper/shardkeeper/internal/rule/ruletest"
)

func TestParseGlobalRules(t *testing.T) {
	ruletest.Parses(t, global.Authority.Read, map[string]distsql.Statement{
		"SHOW AUTHORITY RULE": &global.ShowRule{Type: "authority"},
	})
	ruletest.Parses(t, global.GlobalClock.Read, map[string]distsql.Statement{
		"SHOW GLOBAL CLOCK RULE;": &global.ShowRule{Type: "global_clock"},
		"ALTER GLOBAL CLOCK RULE (TYPE='TSO', PROVIDER='local', ENABLED=false)": &global.AlterRule{Type: "global_clock", Settings: distsql.Settings{Values: map[string]distsql.Value{
			"TYPE": {Kind: distsql.StringValue, Text: "TSO"}, "PROVIDER": {Kind: distsql.StringValue, Text: "local"}, "ENABLED": {Kind: distsql.BoolValue, Text: "false"}}}},
	})
	ruletest.Parses(t, global.SQLFederation.Read, map[string]distsql.Statement{
		"SHOW SQL_FEDERATION RULE": &global.ShowRule{Type: "sql_federation"},
	})
	ruletest.Parses(t, global.SQLParser.Read, map[string]distsql.Statement{
		"ALTER SQL_PARSER RULE (PARSE_TREE_CACHE(INITIAL_CAPACITY=128, MAXIMUM_SIZE=1024), SQL_STATEMENT_CACHE(INITIAL_CAPACITY=2000, MAXIMUM_SIZE=65535));": &global.AlterRule{Type: "sql_parser", Settings: distsql.Settings{Values: map[string]distsql.Value{
			"PARSE_TREE_CACHE.INITIAL_CAPACITY": {Kind: distsql.IntValue, Text: "128"}, "PARSE_TREE_CACHE.MAXIMUM_SIZE": {Kind: distsql.IntValue, Text: "1024"},
			"SQL_STATEMENT_CACHE.INITIAL_CAPACITY": {Kind: distsql.IntValue, Text: "2000"}, "SQL_STATEMENT_CACHE.MAXIMUM_SIZE": {Kind: distsql.IntValue, Text: "65535"}}}},
	})
	ruletest.Parses(t, global.Transaction.Read, map[string]distsql.Statement{
		"ALTER TRANSACTION RULE (DEFAULT='XA', TYPE(NAME='Narayana', PROPERTIES('k'='v')))": &global.AlterRule{Type: "transaction", Settings: distsql.Settings{
			Values:     map[string]distsql.Value{"DEFAULT": {Kind: distsql.StringValue, Text: "XA"}, "TYPE": {Kind: distsql.StringValue, Text: "Narayana"}},
			Properties: []distsql.Property{{Key: "k", Value: distsql.Value{Kind: distsql.StringValue, Text: "v"}}}, HasProperties: true}},
	})
	ruletest.ParseErrors(t, global.Transaction.Read, map[string]string{
		"ALTER TRANSACTION RULE (DEFAULT)": "=",
	})
	// Upstream has no ALTER AUTHORITY RULE.
	if _, err := families.Parse("ALTER AUTHORITY RULE (USERS())"); err == nil {
		t.Error("ALTER AUTHORITY RULE parsed, want a syntax error")
	}
}

// TestConformance runs the global rules' suite on each global rule.
func TestConformance(t *testing.T) {
	ruletest.RunGlobal(t, global.Authority, []ruletest.GlobalCase{
		{Name: "default", Show: "SHOW AUTHORITY RULE", Rows: [][]string{{"", "ALL_PERMITTED", ""}}},
	})
	ruletest.RunGlobal(t, global.Transaction, []ruletest.GlobalCase{
		{Name: "xa", Statements: []string{"ALTER TRANSACTION RULE (DEFAULT='xa', TYPE(NAME='narayana', PROPERTIES('k'='v')))"},
			Refused: map[string]int{
				"ALTER TRANSACTION RULE (DEFAULT='XA', TYPE(NAME='Seata'))": 30000, // no such provider of XA
				"ALTER TRANSACTION RULE (DEFAULT='BASE')":                   10200, // a provider is required
				"ALTER TRANSACTION RULE (DEFAULT='LOCAL', BOGUS=1)":         12000,
			},
			Show: "SHOW TRANSACTION RULE", Rows: [][]string{{"XA", "Narayana", `{"k":"v"}`}}},
	})
	ruletest.RunGlobal(t, global.SQLParser, []ruletest.GlobalCase{
		{Name: "caches", Statements: []string{"ALTER SQL_PARSER RULE (PARSE_TREE_CACHE(INITIAL_CAPACITY=10))", "ALTER SQL_PARSER RULE (SQL_STATEMENT_CACHE(MAXIMUM_SIZE=20))"},
			Refused: map[string]int{"ALTER SQL_PARSER RULE (PARSE_TREE_CACHE(INITIAL_CAPACITY=0))": 10200},
			Show:    "SHOW SQL_PARSER RULE", Rows: [][]string{{"initialCapacity: 10, maximumSize: 1024", "initialCapacity: 2000, maximumSize: 20"}}},
	})
	ruletest.RunGlobal(t, global.GlobalClock, []ruletest.GlobalCase{
		{Name: "enable", Statements: []string{"ALTER GLOBAL CLOCK RULE (TYPE='tso', PROVIDER='redis', ENABLED=true)"},
			Refused: map[string]int{
				"ALTER GLOBAL CLOCK RULE (TYPE='HLC')":    30000,
				"ALTER GLOBAL CLOCK RULE (ENABLED='yes')": 10200,
			},
			Show: "SHOW GLOBAL CLOCK RULE", Rows: [][]string{{"TSO", "redis", "true", ""}}},
	})
	ruletest.RunGlobal(t, global.SQLFederation, []ruletest.GlobalCase{
		{Name: "enable", Statements: []string{"ALTER SQL_FEDERATION RULE (SQL_FEDERATION_ENABLED=true, EXECUTION_PLAN_CACHE(MAXIMUM_SIZE=100))"},
			Show: "SHOW SQL_FEDERATION RULE", Rows: [][]string{{"true", "false", "initialCapacity: 2000, maximumSize: 100"}}},
	})
	ruletest.RunGlobal(t, global.SQLTranslator, []ruletest.GlobalCase{
		{Name: "jooq", Statements: []string{"ALTER SQL_TRANSLATOR RULE (TYPE(NAME='jooq', PROPERTIES('a'='b')), USE_ORIGINAL_SQL_WHEN_TRANSLATING_FAILED=false)"},
			Refused: map[string]int{"ALTER SQL_TRANSLATOR RULE (TYPE(NAME='nope'))": 30000},
			Show:    "SHOW SQL_TRANSLATOR RULE", Rows: [][]string{{"JOOQ", `{"a":"b"}`, "false"}}},
	})
}

// TestScope: a global rule's ALTER acts on the cluster, named as a refusal
// shows it; its SHOW on no database.
func TestScope(t *testing.T) {
	for q, what := range map[string]string{
		"ALTER TRANSACTION RULE (DEFAULT='XA', TYPE(NAME='Narayana'))":                    "ALTER TRANSACTION RULE",
		"ALTER SQL_PARSER RULE (PARSE_TREE_CACHE(INITIAL_CAPACITY=64, MAXIMUM_SIZE=512))": "ALTER SQL_PARSER RULE",
		"ALTER SQL_FEDERATION RULE (SQL_FEDERATION_ENABLED=true)":                         "ALTER SQL_FEDERATION RULE",
		"ALTER GLOBAL CLOCK RULE (TYPE='TSO', PROVIDER='local', ENABLED=false)":           "ALTER GLOBAL CLOCK RULE",
		"ALTER SQL_TRANSLATOR RULE (TYPE(NAME='NATIVE'))":                                 "ALTER SQL_TRANSLATOR RULE",
		"SHOW TRANSACTION RULE": "",
	} {
		st, err := families.Parse(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if sc := st.Scope(); sc != (distsql.Scope{Cluster: what}) {
			t.Errorf("%s: Scope = %+v, want Cluster %q", q, sc, what)
		}
	}
}
