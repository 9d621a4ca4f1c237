package sharding_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rule/sharding"
)

// The registry finds the sharding rule's layout and upstream form in the
// family list, and its upstream form depends on the release written.
func TestStoredUpstreamPerRelease(t *testing.T) {
	s, ok := families.ByType(sharding.Type)
	if !ok || s != sharding.Family {
		t.Fatalf("families.ByType(%q) = %v, %v", sharding.Type, s, ok)
	}
	if items := s.Items(); len(items.KeyLists) != 1 || items.KeyLists[0] != "bindingTables" {
		t.Fatalf("Items() = %+v", items)
	}
	content := func() map[string]any {
		return map[string]any{"tables": map[string]any{"t_order": map[string]any{
			"keyGenerateStrategy": map[string]any{"column": "order_id", "keyGeneratorName": "snowflake"},
		}}}
	}
	c := content()
	if err := s.Upstream(paths.Layout554, c); err != nil {
		t.Fatal(err)
	}
	if _, ok := c["keyGenerateStrategies"].(map[string]any)[sharding.KeyGenerateStrategyName("t_order", "order_id")]; !ok {
		t.Fatalf("5.5.4 form has no rule-level strategy: %v", c)
	}
	c553 := content()
	if err := s.Upstream(paths.Layout553, c553); err != nil {
		t.Fatal(err)
	}
	if _, ok := c553["keyGenerateStrategies"]; ok {
		t.Fatalf("5.5.3 form has rule-level strategies: %v", c553)
	}
	c["keyGenerateStrategies"].(map[string]any)["seq"] = map[string]any{"keyGenerateType": "sequence", "logicTable": "t_order"}
	if err := s.Upstream(paths.Layout553, c); err == nil || !strings.Contains(err.Error(), "seq") {
		t.Fatalf("a sequence strategy written for 5.5.3: %v", err)
	}
	if _, ok := families.ByType("no_such_rule"); ok {
		t.Fatal("an unknown rule type is a family")
	}
}

// CONVERT finds the sharding rule's statements in the family list, what
// no statement sets named first.
func TestConverterNamesWhatItCannotConvert(t *testing.T) {
	cv, ok := families.ByType(sharding.Type)
	if !ok {
		t.Fatal("the sharding rule is not a family")
	}
	sts, ok := cv.Convert(map[string]any{
		"bindingTables":         []any{"ref:t_order,t_order_item"},
		"defaultShardingColumn": "order_id",
	})
	want := []string{
		"-- not converted: the sharding rule's defaultShardingColumn (no DistSQL statement sets it)",
		"CREATE SHARDING TABLE REFERENCE RULE ref (t_order, t_order_item);",
	}
	if !ok || strings.Join(sts, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Convert = %q, %v; want %q", sts, ok, want)
	}
}

// The units a sharding rule uses are its tables', then its auto tables',
// each named, as SHOW RULES USED STORAGE UNIT lists them.
func TestUnitsOfTablesThenAutoTables(t *testing.T) {
	u, ok := families.ByType(sharding.Type)
	if !ok {
		t.Fatal("the sharding rule is not a family")
	}
	d := families.Database("db", []string{"ds_0", "ds_1", "ds_2"}, nil)
	uses := u.Units(d, map[string]any{
		"tables":     map[string]any{"t_order": map[string]any{"actualDataNodes": "ds_${0..1}.t_order_${0..1}"}},
		"autoTables": map[string]any{"t_auto": map[string]any{"actualDataSources": "ds_2"}},
	})
	got := fmt.Sprint(uses)
	if want := "[{t_order [ds_0 ds_1]} {t_auto [ds_2]}]"; got != want {
		t.Fatalf("Units = %s, want %s", got, want)
	}
}
