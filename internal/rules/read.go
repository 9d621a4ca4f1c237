package rules

import (
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/readwrite"
	"github.com/shardkeeper/shardkeeper/internal/rule/sharding"
)

// Helpers over a rule's content (config.Rule.Content: decoded YAML), for
// this package and the console's SHOW statements, so that what a
// statement writes and what SHOW reads agree.

// strategyAlgorithm is the algorithm name of a strategy map ({standard:
// {...}}, {complex: ...}, {hint: ...}; "" for none).
func strategyAlgorithm(v any) string {
	m := rule.Map(v)
	for _, typ := range []string{"standard", "complex", "hint"} {
		if body, ok := m[typ]; ok {
			return rule.Text(rule.Map(body)["shardingAlgorithmName"])
		}
	}
	return ""
}

// BindingParts splits a bindingTables element, "name:t1,t2" or "t1,t2"
// (named by sharding.BindingName), into its name and tables.
func BindingParts(s string) (string, []string) {
	name, ref, ok := strings.Cut(s, ":")
	if !ok {
		ref, name = s, sharding.BindingName(s)
	}
	var tables []string
	for _, t := range strings.Split(ref, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tables = append(tables, t)
		}
	}
	return name, tables
}

// InUse returns the names of the sharding algorithms, key generators and
// auditors sharding rule content c refers to (tables, auto tables,
// defaults, key generate strategies).
func InUse(c map[string]any) (algorithms, keyGenerators, auditors map[string]bool) {
	return inUse(c)
}

// UsedBy returns the names of the sharding algorithms, key generators and
// auditors table t (a table or auto table of the rule's content) names
// itself (not the rule's defaults).
func UsedBy(t map[string]any) (algorithms, keyGenerators, auditors []string) {
	return usedNames(map[string]any{"": t})
}

// ReadwriteGroups is the groups of readwrite-splitting rule content c:
// dataSourceGroups (5.5.x), dataSources in configs written for older
// releases; nil when it has none.
func ReadwriteGroups(c map[string]any) map[string]any {
	return readwrite.Groups(c)
}
