package rules

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
)

// Helpers over a rule's content (config.Rule.Content: decoded YAML), for
// this package and the console's SHOW statements, so that what a
// statement writes and what SHOW reads agree.

// Map is v as a YAML mapping; nil when it is none.
func Map(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// Text is v as text: "" for nil, a string as it is, a list as its
// elements' text joined by ',', anything else as fmt.Sprint writes it
// (password: 123 is "123").
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = Text(e)
		}
		return strings.Join(parts, ",")
	default:
		return fmt.Sprint(x)
	}
}

// strategyAlgorithm is the algorithm name of a strategy map ({standard:
// {...}}, {complex: ...}, {hint: ...}; "" for none).
func strategyAlgorithm(v any) string {
	m := Map(v)
	for _, typ := range []string{"standard", "complex", "hint"} {
		if body, ok := m[typ]; ok {
			return Text(Map(body)["shardingAlgorithmName"])
		}
	}
	return ""
}

// BindingParts splits a bindingTables element, "name:t1,t2" or "t1,t2"
// (named by metadata.BindingName), into its name and tables.
func BindingParts(s string) (string, []string) {
	name, ref, ok := strings.Cut(s, ":")
	if !ok {
		ref, name = s, metadata.BindingName(s)
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

// List is a list value's elements as text (a string is a list of one).
func List(v any) []string {
	switch x := v.(type) {
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, Text(e))
		}
		return out
	case []string:
		return x
	case string:
		if x == "" {
			return nil
		}
		return []string{x}
	}
	return nil
}

// anyList is in as a YAML list.
func anyList(in []string) []any {
	out := make([]any, len(in))
	for i, s := range in {
		out[i] = s
	}
	return out
}

// ReadwriteGroups is the groups of readwrite-splitting rule content c:
// dataSourceGroups (5.5.x), dataSources in configs written for older
// releases; nil when it has none.
func ReadwriteGroups(c map[string]any) map[string]any {
	if g := Map(c["dataSourceGroups"]); g != nil {
		return g
	}
	return Map(c["dataSources"])
}

// PropertyValue is a PROPERTIES value of a statement with its YAML type.
func PropertyValue(v distsql.Value) any {
	switch v.Kind {
	case distsql.IntValue:
		if n, err := strconv.ParseInt(v.Text, 10, 64); err == nil {
			return n
		}
	case distsql.BoolValue:
		return v.Text == "true"
	case distsql.NullValue:
		return nil
	}
	return v.Text
}
