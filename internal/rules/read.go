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

// WalkStrings calls fn with every string of content v: map keys, values
// and list elements, depth first.
func WalkStrings(v any, fn func(string)) {
	switch x := v.(type) {
	case string:
		fn(x)
	case map[string]any:
		for k, e := range x {
			fn(k)
			WalkStrings(e, fn)
		}
	case []any:
		for _, e := range x {
			WalkStrings(e, fn)
		}
	}
}

// MaxInlineExpansion bounds the strings one inline expression expands to
// where this package and the console expand them.
const MaxInlineExpansion = 4096

// ExpandInline expands the ${a..b} and ${[x, y]} parts of a Groovy inline
// expression into every combination, at most limit strings; a part it
// cannot read stays as written.
func ExpandInline(s string, limit int) []string {
	start := strings.Index(s, "${")
	if start < 0 {
		start = strings.Index(s, "$->{")
	}
	if start < 0 {
		return []string{s}
	}
	open := strings.IndexByte(s[start:], '{') + start
	end := strings.IndexByte(s[open:], '}')
	if end < 0 {
		return []string{s}
	}
	end += open
	inner := strings.TrimSpace(s[open+1 : end])
	var values []string
	if a, b, ok := strings.Cut(inner, ".."); ok {
		lo, err1 := strconv.Atoi(strings.TrimSpace(a))
		hi, err2 := strconv.Atoi(strings.TrimSpace(b))
		if err1 != nil || err2 != nil || hi < lo || hi-lo >= limit {
			return []string{s}
		}
		for i := lo; i <= hi; i++ {
			values = append(values, strconv.Itoa(i))
		}
	} else if strings.HasPrefix(inner, "[") && strings.HasSuffix(inner, "]") {
		for _, v := range strings.Split(inner[1:len(inner)-1], ",") {
			values = append(values, strings.Trim(strings.TrimSpace(v), `'"`))
		}
	} else {
		return []string{s}
	}
	var out []string
	for _, v := range values {
		for _, tail := range ExpandInline(s[end+1:], limit) {
			out = append(out, s[:start]+v+tail)
			if len(out) >= limit {
				return out
			}
		}
	}
	return out
}

// Names calls fn with every name content v mentions: each string of it
// (WalkStrings), inline expressions expanded (at most MaxInlineExpansion
// strings each), split at '.', ',' and white space, so that a data node
// ds_${0..1}.t_order names ds_0, ds_1 and t_order.
func Names(v any, fn func(name string)) {
	WalkStrings(v, func(s string) {
		for _, x := range ExpandInline(s, MaxInlineExpansion) {
			for _, tok := range strings.FieldsFunc(x, func(r rune) bool {
				return r == '.' || r == ',' || r == ' ' || r == '\t' || r == '\n'
			}) {
				fn(tok)
			}
		}
	})
}

// NamesUnit reports whether content v names the storage unit (or
// readwrite-splitting group) unit anywhere (see Names).
func NamesUnit(v any, unit string) bool {
	found := false
	Names(v, func(name string) { found = found || name == unit })
	return found
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
