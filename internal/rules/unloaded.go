package rules

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// UnloadedSingleTables lists the tables of database d's units that no rule
// takes, as upstream's SHOW UNLOADED SINGLE TABLES: neither a single rule
// pattern loads them nor is a sharding or broadcast rule's table, read from
// the units through introspect (nil means datasource.Introspect), sorted
// by table then unit. ctx bounds the reads; a unit it cannot read is
// upstream's 10502.
func UnloadedSingleTables(ctx context.Context, introspect Introspector, d *metadata.Database) ([]SingleTable, error) {
	patterns := rule.List(d.Rules[singleType].Content["tables"])
	units := slices.Sorted(maps.Keys(d.Units))
	tables, err := unitTables(ctx, introspect, d, units)
	if err != nil {
		return nil, err
	}
	taken := shardedTables(d)
	var out []SingleTable
	for _, u := range units {
		for _, qt := range tables[u] {
			schema, t, ok := strings.Cut(qt, ".")
			if !ok {
				schema, t = "", qt
			}
			if taken.has(t) || slices.ContainsFunc(patterns, func(p string) bool { return singlePatternMatches(p, u, t) }) {
				continue
			}
			out = append(out, SingleTable{Table: t, Unit: u, Schema: schema})
		}
	}
	slices.SortFunc(out, func(a, b SingleTable) int {
		if c := strings.Compare(a.Table, b.Table); c != 0 {
			return c
		}
		return strings.Compare(a.Unit, b.Unit)
	})
	return out, nil
}
