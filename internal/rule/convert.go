package rule

import (
	"maps"
	"slices"
	"strings"
)

// The pieces of DistSQL a family's Convert writes (CONVERT YAML
// CONFIGURATION).

// Quote is s as a DistSQL string literal.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''") + "'"
}

// ConvertProps is PROPERTIES('k'='v', ...) of props in key order, "" for
// none.
func ConvertProps(props map[string]any) string {
	if len(props) == 0 {
		return ""
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(props)) {
		kv = append(kv, Quote(k)+"="+Quote(Text(props[k])))
	}
	return "PROPERTIES(" + strings.Join(kv, ", ") + ")"
}

// ConvertAlgorithm is TYPE(NAME='type'[, PROPERTIES(...)]) of the named
// algorithm of algs.
func ConvertAlgorithm(algs map[string]any, name string) string {
	a := Map(algs[name])
	s := "TYPE(NAME=" + Quote(Text(a["type"]))
	if p := ConvertProps(Map(a["props"])); p != "" {
		s += ", " + p
	}
	return s + ")"
}
