package paths

import "testing"

func TestParseLayout(t *testing.T) {
	for in, want := range map[string]Layout{"5.5.0": Layout552, "5.5.2": Layout552, "5.5.3": Layout553, "5.5.3-SNAPSHOT": Layout553, "5.5.4": Layout554, "5.5.4-SNAPSHOT": Layout554, "5.5.10": Layout554} {
		if got, err := ParseLayout(in); err != nil || got != want {
			t.Errorf("ParseLayout(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "5.4.1", "5.5", "5.5.x", "5.5.01", "6.0.0"} {
		if _, err := ParseLayout(in); err == nil {
			t.Errorf("ParseLayout(%q) accepted", in)
		}
	}
	if Layout(0) != Layout553 || Layout(0).String() != "5.5.3" || Layout552.String() != "5.5.2" || Layout554.String() != "5.5.4" {
		t.Error("the zero layout must be 5.5.3's")
	}
	if DefaultLayout != Layouts[len(Layouts)-1] {
		t.Errorf("the default layout is %s, want the newest release's, %s", DefaultLayout, Layouts[len(Layouts)-1])
	}
	for _, l := range Layouts {
		if back, err := ParseLayout(l.String()); err != nil || back != l {
			t.Errorf("ParseLayout(%s) = %v, %v", l, back, err)
		}
	}
}

func TestLayoutsPlaceShardingDefaults(t *testing.T) {
	must := func(p string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ got, want string }{
		{must(Layout553.RuleItem("db", "sharding", "default_table_strategy", "")), "/metadata/db/rules/sharding/default_table_strategy"},
		{must(Layout552.RuleItem("db", "sharding", "default_table_strategy", "")), "/metadata/db/rules/sharding/default_strategies/default_table_strategy"},
		{must(Layout552.RuleItem("db", "sharding", "default_sharding_column", "")), "/metadata/db/rules/sharding/default_strategies/default_sharding_column"},
		{must(Layout552.RuleItem("db", "sharding", "sharding_cache", "")), "/metadata/db/rules/sharding/sharding_cache"},
		{must(Layout552.RuleItem("db", "sharding", "tables", "t_order")), "/metadata/db/rules/sharding/tables/t_order"},
		{must(Layout552.RuleItem("db", "shadow", "default_shadow_algorithm_name", "")), "/metadata/db/rules/shadow/default_shadow_algorithm_name"},
		{must(Layout553.DatabaseListener("db")), "/states/database_listener_coordinator/db"},
		{must(Layout552.DatabaseListener("db")), "/states/listener_assisted/db"},
		{Layout553.ClusterLock(), "/exclusive_operation/lock_cluster"},
		{Layout554.ClusterLock(), "/exclusive_operation/lock_cluster"},
		{must(Layout554.DatabaseListener("db")), "/states/database_listener_coordinator/db"},
		{must(Layout554.RuleItem("db", "sharding", "default_table_strategy", "")), "/metadata/db/rules/sharding/default_table_strategy"},
		{must(Layout554.RuleItem("db", "sharding", "key_generate_strategies", "t_order_order_id")), "/metadata/db/rules/sharding/key_generate_strategies/t_order_order_id"},
		{Layout552.NodeName("T_Order"), "t_order"},
		{Layout553.NodeName("T_Order"), "t_order"},
		{Layout554.NodeName("T_Order"), "T_Order"},
		{Layout552.ClusterLock(), "/lock/global/locks/cluster_lock"},
		{must(GlobalLock552("statistics")), "/lock/global/locks/statistics"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
	all, err := RuleItemPlacements("db", "sharding", "default_audit_strategy", "")
	if err != nil || len(all) != 2 {
		t.Errorf("RuleItemPlacements = %v, %v", all, err)
	}
	// Both placements parse as the same unique item.
	for _, key := range []string{
		"/metadata/db/rules/sharding/default_strategies/default_database_strategy/versions/0",
		"/metadata/db/rules/sharding/default_database_strategy/versions/0",
	} {
		k, ok := ParseKey(key)
		if !ok || k.Kind != KindRuleItem || k.RuleItem != "default_database_strategy" || k.ItemName != "" || k.Leaf != VersionsName || k.Node != key[:len(key)-len("/versions/0")] {
			t.Errorf("ParseKey(%s) = %+v, %v", key, k, ok)
		}
	}
	for _, key := range []string{"/metadata/db/rules/sharding/default_strategies", "/metadata/db/rules/sharding/default_strategies/other/active_version"} {
		if k, ok := ParseKey(key); ok {
			t.Errorf("ParseKey(%s) = %+v, want not ok", key, k)
		}
	}
	for _, key := range []string{"/states/listener_assisted/db", "/states/database_listener_coordinator/db"} {
		if k, ok := ParseKey(key); !ok || k.Kind != KindDatabaseListener || k.Database != "db" {
			t.Errorf("ParseKey(%s) = %+v, %v", key, k, ok)
		}
	}
}
