package metadata

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// maxAliasedMapping bounds the keys of one mapping in a value that uses
// YAML anchors, aliases or merge keys: such a value is decoded by yaml.v3
// itself, whose duplicate-key check is quadratic in a mapping's keys.
const maxAliasedMapping = 4096

// unmarshalValue decodes a registry value as yaml.Unmarshal into an any
// does (a mapping of string keys is a map[string]any, others a
// map[any]any; sequences []any; scalars resolved by yaml.v3), with
// duplicate keys refused, in time linear in data: yaml.v3 checks a
// mapping's keys for duplicates pair by pair, which made a rule item with
// 60,000 algorithm props cost a minute on every node. An empty value is
// nil.
func unmarshalValue(data []byte) (any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if aliased(root) {
		// Anchors and merges: yaml.v3 expands them with its own bounds
		// on aliases; big mappings are refused first.
		if err := checkMappingSizes(root); err != nil {
			return nil, err
		}
		var v any
		err := doc.Decode(&v)
		return v, err
	}
	return nodeValue(root)
}

// unmarshalContent is unmarshalValue for a value that must be a mapping
// (a rule's content): its keys as text.
func unmarshalContent(data []byte) (map[string]any, error) {
	v, err := unmarshalValue(data)
	if err != nil || v == nil {
		return nil, err
	}
	switch m := v.(type) {
	case map[string]any:
		return m, nil
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, e := range m {
			out[fmt.Sprint(k)] = e
		}
		return out, nil
	}
	return nil, fmt.Errorf("yaml: cannot unmarshal %T into a mapping", v)
}

// aliased reports whether n holds an anchor, an alias or a merge key.
func aliased(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" || n.ShortTag() == "!!merge" {
		return true
	}
	for _, c := range n.Content {
		if aliased(c) {
			return true
		}
	}
	return false
}

func checkMappingSizes(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode && len(n.Content)/2 > maxAliasedMapping {
		return fmt.Errorf("yaml: line %d: a mapping of %d keys in a value with anchors or merge keys (at most %d)", n.Line, len(n.Content)/2, maxAliasedMapping)
	}
	for _, c := range n.Content {
		if err := checkMappingSizes(c); err != nil {
			return err
		}
	}
	return nil
}

// nodeValue is n (no anchors, aliases or merges) as yaml.v3 decodes it
// into an any.
func nodeValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.MappingNode:
		stringKeys := true
		for i := 0; i < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				stringKeys = false
				break
			}
		}
		if stringKeys {
			m := make(map[string]any, len(n.Content)/2)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if _, twice := m[k.Value]; twice {
					return nil, fmt.Errorf("yaml: line %d: mapping key %q already defined", k.Line, k.Value)
				}
				v, err := nodeValue(n.Content[i+1])
				if err != nil {
					return nil, err
				}
				m[k.Value] = v
			}
			return m, nil
		}
		m := make(map[any]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := nodeValue(n.Content[i])
			if err != nil {
				return nil, err
			}
			if !hashable(k) {
				return nil, fmt.Errorf("yaml: line %d: invalid map key: %v", n.Content[i].Line, k)
			}
			if _, twice := m[k]; twice {
				return nil, fmt.Errorf("yaml: line %d: mapping key %q already defined", n.Content[i].Line, n.Content[i].Value)
			}
			v, err := nodeValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeValue(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return nodeValue(n.Content[0])
	}
	if n.Kind == yaml.ScalarNode && n.Tag != "!!binary" {
		switch n.ShortTag() {
		case "!!str":
			return n.Value, nil
		case "!!null":
			return nil, nil
		}
	}
	var v any
	err := n.Decode(&v) // another scalar: yaml.v3 resolves its type
	return v, err
}

// hashable reports whether a decoded key can be a Go map key.
func hashable(k any) bool {
	switch k.(type) {
	case map[string]any, map[any]any, []any:
		return false
	}
	return true
}
