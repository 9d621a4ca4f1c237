package paths

import (
	"testing"
)

func TestParseKey(t *testing.T) {
	for key, want := range map[string]Key{
		"/metadata/db":                {Kind: KindDatabase, Database: "db", Node: "/metadata/db", Version: -1},
		"/metadata/db/schemas/public": {Kind: KindSchema, Database: "db", Schema: "public", Node: "/metadata/db/schemas/public", Version: -1},
		"/metadata/db/schemas/public/tables/t/active_version":               {Kind: KindTable, Database: "db", Schema: "public", Name: "t", Node: "/metadata/db/schemas/public/tables/t", Leaf: ActiveVersionName, Version: -1},
		"/metadata/db/schemas/public/views/v/versions/3":                    {Kind: KindView, Database: "db", Schema: "public", Name: "v", Node: "/metadata/db/schemas/public/views/v", Leaf: VersionsName, Version: 3},
		"/metadata/db/data_sources/units/ds_0":                              {Kind: KindUnit, Database: "db", Name: "ds_0", Node: "/metadata/db/data_sources/units/ds_0", Version: -1},
		"/metadata/db/rules/sharding":                                       {Kind: KindRuleType, Database: "db", RuleType: "sharding", Node: "/metadata/db/rules/sharding", Version: -1},
		"/metadata/db/rules/sharding/tables/t_order/versions/0":             {Kind: KindRuleItem, Database: "db", RuleType: "sharding", RuleItem: "tables", ItemName: "t_order", Node: "/metadata/db/rules/sharding/tables/t_order", Leaf: VersionsName, Version: 0},
		"/metadata/db/rules/sharding/default_table_strategy/active_version": {Kind: KindRuleItem, Database: "db", RuleType: "sharding", RuleItem: "default_table_strategy", Node: "/metadata/db/rules/sharding/default_table_strategy", Leaf: ActiveVersionName, Version: -1},
		"/rules/transaction/active_version":                                 {Kind: KindGlobalRule, Name: "transaction", Node: "/rules/transaction", Leaf: ActiveVersionName, Version: -1},
		"/props/versions/12":                                                {Kind: KindProps, Node: "/props", Leaf: VersionsName, Version: 12},
		"/props":                                                            {Kind: KindProps, Node: "/props", Version: -1},
		"/states/cluster_state":                                             {Kind: KindClusterState, Node: "/states/cluster_state", Version: -1},
	} {
		got, ok := ParseKey(key)
		if !ok || got != want {
			t.Errorf("ParseKey(%s) = %+v, %v; want %+v", key, got, ok, want)
		}
	}
	for _, key := range []string{"/metadata", "/metadata/db/schemas", "/metadata/db/schemas/s/tables/t/versions/x",
		"/metadata/db/schemas/s/tables/t/versions/01", "/metadata/db/other/x", "/props/x", "/nodes/compute_nodes/status/i",
		"/metadata/db/rules/sharding/tables/t/x/active_version", "/states/other"} {
		if k, ok := ParseKey(key); ok {
			t.Errorf("ParseKey(%s) = %+v, want not ok", key, k)
		}
	}
	must := func(p string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got := must(RuleItem("db", "sharding", "tables", "t_order")); got != "/metadata/db/rules/sharding/tables/t_order" {
		t.Errorf("RuleItem = %s", got)
	}
	if got := must(RuleItem("db", "sharding", "default_table_strategy", "")); got != "/metadata/db/rules/sharding/default_table_strategy" {
		t.Errorf("RuleItem = %s", got)
	}
	if _, err := RuleItem("db", "sharding", "tables", "versions"); err == nil {
		t.Error("RuleItem accepted the reserved name versions")
	}
}
