// Package rule is the core of the rule families (sharding, readwrite
// splitting, mask, encrypt, shadow, ...): the rule model, one set of
// accessors over a rule's content (decoded YAML: maps, lists, scalars),
// the named-items helper every CREATE, ALTER and DROP of named items uses,
// upstream's refusals, and the contract a family implements (Family). The
// families live in packages of their own under internal/rule and are
// listed in one place, internal/rule/families.
package rule

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

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

// List is a list value's elements as text (a string is a list of one);
// nil for anything else.
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

// Values is v as a YAML list; nil when it is none.
func Values(v any) []any {
	l, _ := v.([]any)
	return l
}

// AnyList is in as a YAML list.
func AnyList(in []string) []any {
	out := make([]any, len(in))
	for i, s := range in {
		out[i] = s
	}
	return out
}

// Same reports whether b is a itself: the same map or list (by identity:
// a change works on config.CopyFields of a rule and replaces what it
// changes, so an entry it left alone is the very value read), or an equal
// scalar. Equal but distinct maps are not the same.
func Same(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
	case string, bool, int, int64, float64, nil:
		return a == b
	}
	return false
}

// Section returns c[f] as a map, creating it when c has none.
func Section(c map[string]any, f string) map[string]any {
	m, ok := c[f].(map[string]any)
	if !ok {
		m = map[string]any{}
		c[f] = m
	}
	return m
}

// Prune removes the empty sections (maps and lists) of c and returns c.
func Prune(c map[string]any) map[string]any {
	for k, v := range c {
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 {
				delete(c, k)
			}
		case []any:
			if len(x) == 0 {
				delete(c, k)
			}
		}
	}
	return c
}

// SortedKeys returns m's keys, sorted.
func SortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// PropsText renders algorithm props as upstream's SHOW statements show
// Properties: "" when there are none, JSON otherwise.
func PropsText(v any) string {
	m := Map(v)
	if len(m) == 0 {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	return string(b)
}

// AlgorithmValue is an algorithm of a statement as a rule stores it: its
// type as written, its properties as strings (upstream's Properties).
func AlgorithmValue(a distsql.Algorithm) map[string]any {
	m := map[string]any{"type": a.Type}
	if len(a.Props) > 0 {
		props := map[string]any{}
		for _, p := range a.Props {
			props[p.Key] = p.Value.Text
		}
		m["props"] = props
	}
	return m
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
