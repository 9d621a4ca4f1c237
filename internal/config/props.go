package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// PropType is the value type of a known property.
type PropType int

// Property value types.
const (
	PropString PropType = iota
	PropBool
	PropInt  // Java int
	PropLong // Java long
)

func (t PropType) String() string {
	switch t {
	case PropBool:
		return "boolean"
	case PropInt:
		return "int"
	case PropLong:
		return "long"
	default:
		return "string"
	}
}

// PropKey describes one of ShardingSphere's global properties
// (ConfigurationPropertyKey and TemporaryConfigurationPropertyKey).
type PropKey struct {
	Name    string
	Type    PropType
	Default string // "" with Type PropString means null or empty
	Reboot  bool   // a change takes effect only after a restart
	Values  []string
}

// KnownProps lists every property ShardingSphere 5.5.2 to master knows, with
// its type and default. Keys missing here are kept as strings and persisted
// as given.
var KnownProps = []PropKey{
	{Name: "sql-show", Type: PropBool, Default: "false"},
	{Name: "sql-simple", Type: PropBool, Default: "false"},
	{Name: "kernel-executor-size", Type: PropInt, Default: "0", Reboot: true},
	{Name: "max-connections-size-per-query", Type: PropInt, Default: "1"},
	{Name: "max-union-size-per-datasource", Type: PropInt, Default: "2147483647"},
	{Name: "check-table-metadata-enabled", Type: PropBool, Default: "false"},
	{Name: "load-table-metadata-batch-size", Type: PropInt, Default: "1000"},
	{Name: "proxy-frontend-database-protocol-type", Type: PropString},
	{Name: "proxy-frontend-flush-threshold", Type: PropInt, Default: "128"},
	{Name: "proxy-backend-query-fetch-size", Type: PropInt, Default: "-1"},
	{Name: "proxy-frontend-executor-size", Type: PropInt, Default: "0", Reboot: true},
	{Name: "proxy-frontend-max-connections", Type: PropInt, Default: "0"},
	{Name: "proxy-frontend-connection-idle-timeout", Type: PropLong, Default: "28800"},
	{Name: "proxy-default-port", Type: PropInt, Default: "3307", Reboot: true},
	{Name: "proxy-netty-backlog", Type: PropInt, Default: "1024"},
	{Name: "cdc-server-port", Type: PropInt, Default: "33071", Reboot: true},
	{Name: "proxy-frontend-ssl-enabled", Type: PropBool, Default: "false", Reboot: true},
	{Name: "proxy-frontend-ssl-version", Type: PropString, Default: "TLSv1.2,TLSv1.3", Reboot: true},
	{Name: "proxy-frontend-ssl-cipher", Type: PropString, Default: "", Reboot: true},
	{Name: "agent-plugins-enabled", Type: PropBool, Default: "true"},
	{Name: "groovy-inline-expression-parsing-cache-max-size", Type: PropLong, Default: "1000"},
	{Name: "system-log-level", Type: PropString, Default: "INFO", Values: []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"}},
	{Name: "persist-schemas-to-repository-enabled", Type: PropBool, Default: "true", Reboot: true},
	// Temporary properties, also stored in /props.
	{Name: "proxy-meta-data-collector-enabled", Type: PropBool, Default: "false"},
	{Name: "system-schema-metadata-assembly-enabled", Type: PropBool, Default: "true", Reboot: true},
	{Name: "proxy-meta-data-collector-cron", Type: PropString, Default: "0 0 2 * * ?"},
	{Name: "instance-connection-enabled", Type: PropBool, Default: "false"},
	{Name: "metadata-identifier-case-sensitivity", Type: PropString, Default: "DATABASE", Reboot: true, Values: []string{"DATABASE", "INSENSITIVE"}},
}

// LookupProp returns the description of a known property.
func LookupProp(name string) (PropKey, bool) {
	for _, k := range KnownProps {
		if k.Name == name {
			return k, true
		}
	}
	return PropKey{}, false
}

// Props are global properties as given (dashed names, values in their
// canonical text form: "true", "16"). Only keys that were set are present;
// the accessors fall back to the defaults in KnownProps. A Props value is
// never modified after it is built: With returns a copy.
type Props map[string]string

// Value returns the value of name, or its default when it is not set ("" for
// unknown keys).
func (p Props) Value(name string) string {
	if v, ok := p[name]; ok {
		return v
	}
	k, _ := LookupProp(name)
	return k.Default
}

// Bool returns a boolean property (its default when unset or not a boolean).
func (p Props) Bool(name string) bool {
	b, _ := strconv.ParseBool(p.Value(name))
	return b
}

// Int returns an integer property (its default when unset, 0 when not a number).
func (p Props) Int(name string) int64 {
	n, _ := strconv.ParseInt(p.Value(name), 10, 64)
	return n
}

// With returns a copy of p with name set to value, after checking value
// against the property's type.
func (p Props) With(name, value string) (Props, error) {
	v, err := CheckProp(name, value)
	if err != nil {
		return nil, err
	}
	out := maps.Clone(p)
	if out == nil {
		out = Props{}
	}
	out[name] = v
	return out, nil
}

// Keys returns the set keys in sorted order.
func (p Props) Keys() []string { return slices.Sorted(maps.Keys(p)) }

// Typed returns the props as YAML-ready values (how ShardingSphere writes
// /props): booleans and numbers typed for known keys; for unknown keys the
// YAML value their text reads as when it is a plain number or boolean, or a
// flow list or map (the text of a list or map read from YAML), a string
// otherwise.
func (p Props) Typed() map[string]any {
	out := make(map[string]any, len(p))
	for k, v := range p {
		out[k] = v
		key, ok := LookupProp(k)
		if !ok {
			out[k] = typedText(v)
			continue
		}
		switch key.Type {
		case PropBool:
			if b, err := strconv.ParseBool(v); err == nil {
				out[k] = b
			}
		case PropInt, PropLong:
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out
}

// CheckProp validates value for the property name and returns its canonical
// form. Unknown names are accepted as strings.
func CheckProp(name, value string) (string, error) {
	key, ok := LookupProp(name)
	if !ok {
		return value, nil
	}
	switch key.Type {
	case PropBool:
		switch strings.ToLower(value) {
		case "true":
			return "true", nil
		case "false":
			return "false", nil
		}
		return "", fmt.Errorf("%q is not a boolean (use true or false)", value)
	case PropInt, PropLong:
		bits := 32
		if key.Type == PropLong {
			bits = 64
		}
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, bits)
		if err != nil {
			return "", fmt.Errorf("%q is not a %s", value, key.Type)
		}
		return strconv.FormatInt(n, 10), nil
	}
	if len(key.Values) > 0 && value != "" && !slices.Contains(key.Values, strings.ToUpper(value)) {
		return "", fmt.Errorf("%q is not one of %s", value, strings.Join(key.Values, ", "))
	}
	return value, nil
}

// maxTypedText bounds the text typedText parses.
const maxTypedText = 4096

// typedText is an unknown property's text as the value it reads as in
// YAML when that is a plain integer, float or boolean ("3", "0.5",
// "true"), or a flow list or map ("[a, b]", "{x: 1}"); any other text
// (quoted, block collections, "a: b", ...) stays a string.
func typedText(s string) any {
	if s == "" || len(s) > maxTypedText || strings.TrimSpace(s) != s {
		return s
	}
	var doc yaml.Node
	if yaml.Unmarshal([]byte(s), &doc) != nil || len(doc.Content) != 1 {
		return s
	}
	n := doc.Content[0]
	switch {
	case n.Kind == yaml.ScalarNode && n.Style == 0 && (n.Tag == "!!int" || n.Tag == "!!float" || n.Tag == "!!bool"):
	case (n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode) && n.Style == yaml.FlowStyle:
	default:
		return s
	}
	var x any
	if n.Decode(&x) != nil {
		return s
	}
	return x
}

// flowText is a YAML list or map as one line of flow YAML, how Props keeps
// an unknown property whose value is one.
func flowText(n *yaml.Node) (string, error) {
	c := *n
	c.Style = yaml.FlowStyle
	b, err := yaml.Marshal(&c)
	return strings.TrimSpace(string(b)), err
}
