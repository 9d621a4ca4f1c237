package metadata

import (
	"fmt"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
)

// upstreamRule and upstreamGlobalRule give a rule, through its family
// (families.ByType, families.GlobalByType), the fields upstream's YAML
// swappers write for the same configuration (ShardingSphere loads a rule from its
// YAML, swaps it to its rule object and back before it persists it): the
// fields the object always has (primitive booleans, a table rule's
// logicTable, a user's host) are written with their defaults, a none
// strategy is "none: ''", a binding table reference carries its name, and
// the target layout's fields replace another layout's (Layout554's
// rule-level keyGenerateStrategies for a table's keyGenerateStrategy).
// Fields upstream does not know are kept as they are. Content is never
// changed in place: the result shares nothing mutable with it.

// bindingItemName is the item name of a bindingTables element: the part
// before ":", or the whole element (an item written by an older
// shardkeeper, named after its reference).
func bindingItemName(s string) string {
	name, _, found := strings.Cut(s, ":")
	if !found {
		return s
	}
	return name
}

// RuleAsWritten returns database rule r as a node persists it for layout's
// release, and as a snapshot then holds it: with the fields upstream's
// YAML swapper writes (see above). It fails where DatabaseWrites does.
func RuleAsWritten(layout paths.Layout, r config.Rule) (config.Rule, error) {
	return upstreamRule(layout, r)
}

// upstreamRule returns r as layout's release writes it (see above). It
// fails when r holds what that release cannot store: a sequence key
// generate strategy, or one for a table the rule does not have, before
// Layout554.
func upstreamRule(layout paths.Layout, r config.Rule) (config.Rule, error) {
	c := config.CloneContent(r.Content)
	if f, ok := families.ByType(r.Type); ok {
		if err := f.Upstream(layout, c); err != nil {
			return r, fmt.Errorf("rule %s: %w", r.Type, err)
		}
	}
	return config.Rule{Type: r.Type, Content: c}, nil
}

// upstreamGlobalRule returns the global rule r as upstream's swapper
// writes it: the defaults its global rule (families.GlobalByType) fills in.
func upstreamGlobalRule(r config.Rule) config.Rule {
	c := config.CloneContent(r.Content)
	if g, ok := families.GlobalByType(r.Type); ok {
		g.Upstream(c)
	}
	return config.Rule{Type: r.Type, Content: c}
}
