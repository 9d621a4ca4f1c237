package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestTypedUnknownProps(t *testing.T) {
	p := Props{"foo": "3", "ratio": "0.5", "on": "true", "list": "[a, 2]", "map": "{x: 1}", "word": "x",
		"pair": "a: b", "block": "- a", "broken": "[a", "empty": "", "spaced": " 3", "sql-show": "true", "proxy-frontend-ssl-cipher": "7"}
	want := map[string]any{"foo": 3, "ratio": 0.5, "on": true, "list": []any{"a", 2}, "map": map[string]any{"x": 1}, "word": "x",
		"pair": "a: b", "block": "- a", "broken": "[a", "empty": "", "spaced": " 3", "sql-show": true, "proxy-frontend-ssl-cipher": "7"}
	if got := p.Typed(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Typed() = %#v\nwant %#v", got, want)
	}
}

func TestGlobalKeepsUnknownListProps(t *testing.T) {
	g, err := ParseGlobal("global.yaml", []byte("props:\n  foo: 3\n  hosts:\n  - a\n  - b\n  opts: {x: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Props["hosts"] != "[a, b]" || g.Props["opts"] != "{x: 1}" || g.Props["foo"] != "3" {
		t.Fatalf("props = %v", g.Props)
	}
	if _, err := ParseGlobal("global.yaml", []byte("props:\n  sql-show: [true]\n")); err == nil || !strings.Contains(err.Error(), "must be a scalar value") {
		t.Fatalf("a list for a known prop: %v", err)
	}
}
