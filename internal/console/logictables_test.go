package console

import (
	"fmt"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
)

// TestLogicTablesOfARuleBeyondTheBounds: the logic tables of a database
// whose stored sharding rule stands for 300,000 data nodes (30 tables of
// 10,000, as a node without the bounds may write it) are its 30 tables,
// the single tables a wildcard loads and none of the sharding tables'
// physical tables, past the bound as well as within it; the nodes built
// for it stay within the rule bound (100,000): a node built costs up to
// about three allocations (its name, its lower-case key, a lookup), so
// the listing stays under 500,000 allocations where building all 300,000
// nodes costs over a million.
func TestLogicTablesOfARuleBeyondTheBounds(t *testing.T) {
	tables := map[string]any{}
	for i := range 30 {
		tables[fmt.Sprintf("t_%02d", i)] = map[string]any{"actualDataNodes": fmt.Sprintf("ds_${0..1}.T_%02d_${0..4999}", i)}
	}
	persisted := map[string]datasource.Table{
		"t_00_7":   {Name: "t_00_7", Columns: []datasource.Column{{Name: "a"}}},   // within the bound
		"t_29_123": {Name: "T_29_123", Columns: []datasource.Column{{Name: "b"}}}, // past it
		"lone":     {Name: "lone"},
	}
	d := &metadata.Database{
		Name:    "big_db",
		Rules:   map[string]config.Rule{"sharding": {Type: "sharding", Content: map[string]any{"tables": tables}}, "single": {Type: "single", Content: map[string]any{"tables": []any{"*.*"}}}},
		Schemas: map[string]*metadata.Schema{"public": {Name: "public", Tables: persisted}},
	}
	got := logicTables(d)
	if len(got) != 31 {
		t.Fatalf("%d logic tables, want the 30 sharding tables and lone: %v", len(got), got)
	}
	for _, lt := range got {
		switch lt.Name {
		case "t_00", "t_29":
			if len(lt.Columns) != 1 {
				t.Errorf("%s: columns %v, want those of its persisted actual table", lt.Name, lt.Columns)
			}
		case "t_00_7", "T_29_123":
			t.Errorf("the physical table %s is listed as a logic table", lt.Name)
		}
	}
	if allocs := testing.AllocsPerRun(1, func() { logicTables(d) }); allocs > 500_000 {
		t.Errorf("listing the logic tables allocated %.0f times: more nodes were built than the rule bound allows", allocs)
	}
}
