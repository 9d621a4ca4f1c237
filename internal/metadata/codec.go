package metadata

import (
	"bytes"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
)

// The encodings below are ShardingSphere's (reference 1.2-1.6): YAML maps
// for tables, views, units, props and global rules; raw strings or YAML for
// rule items.

func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		// Only values built by this package are marshalled; they always encode.
		panic(fmt.Sprintf("metadata: marshal: %v", err))
	}
	_ = enc.Close()
	return buf.Bytes()
}

// ordered builds a YAML mapping node that keeps the order of its pairs
// (column order matters; a Go map would be sorted).
type ordered []kv

type kv struct {
	k string
	v any
}

func (o ordered) MarshalYAML() (any, error) { return toNode(o), nil }

// toNode builds the YAML node of v directly for the shapes this package
// writes (yaml.Node.Encode marshals and parses again: the 10,000-table
// persist spent most of its time there).
func toNode(v any) *yaml.Node {
	scalar := func(tag, value string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value} }
	switch x := v.(type) {
	case ordered:
		n := &yaml.Node{Kind: yaml.MappingNode, Content: make([]*yaml.Node, 0, 2*len(x))}
		for _, p := range x {
			n.Content = append(n.Content, scalar("!!str", p.k), toNode(p.v))
		}
		return n
	case string:
		return scalar("!!str", x)
	case bool:
		return scalar("!!bool", strconv.FormatBool(x))
	case int:
		return scalar("!!int", strconv.Itoa(x))
	case typeCode:
		n := scalar("!!int", strconv.Itoa(x.code))
		if name := strings.Join(strings.Fields(x.name), " "); name != "" {
			n.LineComment = "# " + name
		}
		return n
	case []string:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, s := range x {
			n.Content = append(n.Content, scalar("!!str", s))
		}
		return n
	default:
		var n yaml.Node
		if err := n.Encode(x); err != nil {
			panic(fmt.Sprintf("metadata: marshal %T: %v", x, err))
		}
		return &n
	}
}

// encodeTable is YamlShardingSphereTable with exactly its fields (name,
// columns, indexes, constraints, type; a column's YamlShardingSphereColumn
// has name, dataType, primaryKey, generated, caseSensitive, visible,
// unsigned, nullable), since ShardingSphere loads it strictly and fails on
// any other property. Empty maps are left out, as upstream's representer
// does. The database's own type name goes in a comment after dataType
// ("dataType: 12 # varchar(32)"), which SnakeYAML never parses.
func encodeTable(t datasource.Table) []byte {
	doc := ordered{{"name", t.Name}}
	if len(t.Columns) > 0 {
		cols := make(ordered, 0, len(t.Columns))
		for _, c := range t.Columns {
			cols = append(cols, kv{c.Name, ordered{
				{"name", c.Name}, {"dataType", typeCode{c.DataType, c.TypeName}},
				{"primaryKey", c.PrimaryKey}, {"generated", c.Generated}, {"caseSensitive", false},
				{"visible", true}, {"unsigned", c.Unsigned}, {"nullable", c.Nullable},
			}})
		}
		doc = append(doc, kv{"columns", cols})
	}
	if len(t.Indexes) > 0 {
		idx := make(ordered, 0, len(t.Indexes))
		for _, i := range t.Indexes {
			idx = append(idx, kv{i.Name, ordered{{"name", i.Name}, {"columns", i.Columns}, {"unique", i.Unique}}})
		}
		doc = append(doc, kv{"indexes", idx})
	}
	if len(t.Constraints) > 0 {
		cons := make(ordered, 0, len(t.Constraints))
		for _, c := range t.Constraints {
			cons = append(cons, kv{c.Name, ordered{{"name", c.Name}, {"referencedTableName", c.ReferencedTable}}})
		}
		doc = append(doc, kv{"constraints", cons})
	}
	doc = append(doc, kv{"type", "TABLE"})
	return marshal(doc)
}

// typeCode is a column's java.sql.Types code with the database's type name
// as a line comment.
type typeCode struct {
	code int
	name string
}

// decodeTable reads YamlShardingSphereTable. A column's typeName property,
// which upstream's class does not have, is read too, so that registries
// holding it still load. A column without a type name (ShardingSphere
// writes none) gets the JDBC name of its dataType.
func decodeTable(name string, data []byte) (datasource.Table, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return datasource.Table{}, err
	}
	root := docRoot(&doc)
	if root == nil || root.Kind != yaml.MappingNode {
		return datasource.Table{}, fmt.Errorf("table %s: not a YAML mapping", name)
	}
	t := datasource.Table{Name: name}
	if n := field(root, "name"); n != nil && n.Value != "" {
		t.Name = n.Value
	}
	if cols := field(root, "columns"); cols != nil && cols.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(cols.Content); i += 2 {
			var c struct {
				Name       string `yaml:"name"`
				DataType   int    `yaml:"dataType"`
				TypeName   string `yaml:"typeName"`
				PrimaryKey bool   `yaml:"primaryKey"`
				Nullable   bool   `yaml:"nullable"`
				Generated  bool   `yaml:"generated"`
				Unsigned   bool   `yaml:"unsigned"`
			}
			if err := cols.Content[i+1].Decode(&c); err != nil {
				return t, fmt.Errorf("table %s: column %s: %w", name, cols.Content[i].Value, err)
			}
			if c.Name == "" {
				c.Name = cols.Content[i].Value
			}
			if c.TypeName == "" {
				if dt := field(cols.Content[i+1], "dataType"); dt != nil {
					c.TypeName = strings.TrimSpace(strings.TrimPrefix(dt.LineComment, "#"))
				}
			}
			if c.TypeName == "" {
				c.TypeName = datasource.JDBCTypeName(c.DataType)
			}
			t.Columns = append(t.Columns, datasource.Column(c))
		}
	}
	if idx := field(root, "indexes"); idx != nil && idx.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(idx.Content); i += 2 {
			var x struct {
				Name    string   `yaml:"name"`
				Columns []string `yaml:"columns"`
				Unique  bool     `yaml:"unique"`
			}
			if err := idx.Content[i+1].Decode(&x); err != nil {
				return t, fmt.Errorf("table %s: index %s: %w", name, idx.Content[i].Value, err)
			}
			if x.Name == "" {
				x.Name = idx.Content[i].Value
			}
			t.Indexes = append(t.Indexes, datasource.Index(x))
		}
	}
	if cons := field(root, "constraints"); cons != nil && cons.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(cons.Content); i += 2 {
			var x struct {
				Name            string `yaml:"name"`
				ReferencedTable string `yaml:"referencedTableName"`
			}
			if err := cons.Content[i+1].Decode(&x); err != nil {
				return t, fmt.Errorf("table %s: constraint %s: %w", name, cons.Content[i].Value, err)
			}
			if x.Name == "" {
				x.Name = cons.Content[i].Value
			}
			t.Constraints = append(t.Constraints, datasource.Constraint(x))
		}
	}
	return t, nil
}

// encodeView is YamlShardingSphereView: name and viewDefinition.
func encodeView(v datasource.View) []byte {
	return marshal(ordered{{"name", v.Name}, {"viewDefinition", v.Definition}})
}

func decodeView(name string, data []byte) (datasource.View, error) {
	var v struct {
		Name string `yaml:"name"`
		Def  string `yaml:"viewDefinition"`
	}
	if err := yaml.Unmarshal(data, &v); err != nil {
		return datasource.View{}, fmt.Errorf("view %s: %w", name, err)
	}
	if v.Name == "" {
		v.Name = name
	}
	return datasource.View{Name: v.Name, Definition: v.Def}, nil
}

func encodeUnit(ds config.DataSource) []byte { return marshal(ds.Map()) }

func decodeUnit(key string, data []byte) (config.DataSource, error) {
	return config.ParseDataSource(key, "unit", data)
}

func encodeProps(p config.Props) []byte {
	if len(p) == 0 {
		return []byte("{}\n")
	}
	return marshal(p.Typed())
}

// decodeProps reads /props. A value is kept as its text (an unknown key's
// list or map as flow YAML); known keys are checked and canonicalised.
func decodeProps(data []byte) (config.Props, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("props: %w", err)
	}
	p := config.Props{}
	root := docRoot(&doc)
	if root == nil || root.Tag == "!!null" {
		return p, nil
	}
	if root.Kind != yaml.MappingNode {
		return p, fmt.Errorf("props: not a YAML mapping")
	}
	var errs []string
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i].Value, root.Content[i+1]
		canon, err := config.CheckProp(k, propText(v))
		if err != nil {
			errs = append(errs, k+": "+err.Error())
			continue
		}
		p[k] = canon
	}
	sort.Strings(errs)
	if len(errs) > 0 {
		return p, fmt.Errorf("props: %s", strings.Join(errs, "; "))
	}
	return p, nil
}

// propText is a props value as text: a scalar as written (null as ""), a
// list or map as one line of flow YAML.
func propText(v *yaml.Node) string {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		return ""
	case v.Kind == yaml.ScalarNode:
		return v.Value
	}
	c := *v
	c.Style = yaml.FlowStyle
	return strings.TrimSpace(string(marshal(&c)))
}

// mergeProps returns the /props document old (nil: none) with changes
// applied. A changed key's value is typed by its property type; an unknown
// key's keeps the YAML type of its old value when the new text has that
// type, and is a string otherwise. Every other entry is kept as read, YAML
// type, lists and maps included. Keys are sorted.
func mergeProps(old []byte, changes map[string]string) ([]byte, error) {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if len(bytes.TrimSpace(old)) > 0 {
		var doc yaml.Node
		if err := yaml.Unmarshal(old, &doc); err != nil {
			return nil, fmt.Errorf("props: %w", err)
		}
		if r := docRoot(&doc); r != nil && r.Tag != "!!null" {
			if r.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("props: not a YAML mapping")
			}
			m = r
		}
	}
	for _, k := range sortedKeys(changes) {
		canon, err := config.CheckProp(k, changes[k])
		if err != nil {
			return nil, fmt.Errorf("props.%s: %w", k, err)
		}
		i := 0
		for i < len(m.Content) && m.Content[i].Value != k {
			i += 2
		}
		if i >= len(m.Content) {
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, nil)
		}
		m.Content[i+1] = propNode(k, canon, m.Content[i+1])
	}
	pairs := make([][2]*yaml.Node, 0, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		pairs = append(pairs, [2]*yaml.Node{m.Content[i], m.Content[i+1]})
	}
	sort.SliceStable(pairs, func(a, b int) bool { return pairs[a][0].Value < pairs[b][0].Value })
	m.Content = m.Content[:0]
	for _, p := range pairs {
		m.Content = append(m.Content, p[0], p[1])
	}
	m.Style = 0
	return marshal(m), nil
}

// propNode is the YAML value of property k set to text (see mergeProps);
// old is its current value, or nil.
func propNode(k, text string, old *yaml.Node) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: text}
	if key, ok := config.LookupProp(k); ok {
		switch key.Type {
		case config.PropBool:
			n.Tag = "!!bool"
		case config.PropInt, config.PropLong:
			n.Tag = "!!int"
		}
		return n
	}
	if old == nil || old.Kind != yaml.ScalarNode || old.Tag == "!!str" || old.Tag == "!!null" {
		return n
	}
	var probe yaml.Node
	if yaml.Unmarshal([]byte(text), &probe) == nil {
		if r := docRoot(&probe); r != nil && r.Kind == yaml.ScalarNode && r.Tag == old.Tag && r.Style == 0 {
			n.Tag = old.Tag
		}
	}
	return n
}

func encodeRuleContent(content map[string]any) []byte { return marshal(content) }

// encodeGlobalRule is the value of global rule r as upstream writes it
// (upstreamGlobalRule).
func encodeGlobalRule(r config.Rule) []byte { return encodeRuleContent(upstreamGlobalRule(r).Content) }

func decodeRuleContent(typ string, data []byte) (config.Rule, error) {
	r := config.Rule{Type: typ, Content: map[string]any{}}
	content, err := unmarshalContent(data)
	if err != nil {
		return r, fmt.Errorf("rule %s: %w", typ, err)
	}
	r.Content = content
	if r.Content == nil {
		r.Content = map[string]any{}
	}
	return r, nil
}

// Database rule items (reference 1.6), by rule type, as each family lays
// its rule out (rule.Items): namedFields are the rule fields whose Java
// type is a Map: one item node per entry. keyListFields are collections
// stored one node per element, named by the part of the element before
// ":" (or the whole element). Every other field is a unique item;
// rawFields are strings stored as-is (families.All). Read-only.
var namedFields, keyListFields, rawFields = itemLayouts()

func itemLayouts() (named, keyLists, raw map[string][]string) {
	named, keyLists, raw = map[string][]string{}, map[string][]string{}, map[string][]string{}
	for _, f := range families.All {
		items := f.Items()
		named[f.Type()], keyLists[f.Type()], raw[f.Type()] = items.Named, items.KeyLists, items.Raw
	}
	return named, keyLists, raw
}

func has(m map[string][]string, typ, f string) bool {
	for _, x := range m[typ] {
		if x == f {
			return true
		}
	}
	return false
}

// ruleItem is one node of a database rule: /rules/{type}/{item}[/{name}].
type ruleItem struct {
	Item  string // lower_underscore field name
	Name  string // "" for unique items
	Value []byte
	// val is the value a lazy item (Value nil until encoded) encodes.
	val  any
	lazy bool
}

// encoded returns the item's value, encoding a lazy item's now.
func (it *ruleItem) encoded() []byte {
	if it.lazy {
		it.Value, it.lazy = marshal(it.val), false
	}
	return it.Value
}

// ruleItems splits a database rule into its registry items, with the
// fields layout's release writes (upstreamRule).
func ruleItems(layout paths.Layout, r config.Rule) ([]ruleItem, error) {
	items, err := lazyRuleItems(layout, r)
	for i := range items {
		items[i].encoded()
	}
	return items, err
}

// lazyRuleItems is ruleItems with the named entries of map fields (a
// sharding table, an algorithm: the bulk of a large rule) left to encode
// when asked (ruleItem.encoded), so that a caller comparing two rules
// encodes only the entries that differ.
func lazyRuleItems(layout paths.Layout, r config.Rule) ([]ruleItem, error) {
	r, err := upstreamRule(layout, r)
	if err != nil {
		return nil, err
	}
	return splitLazy(r), nil
}

// splitLazy splits r, a rule as a layout writes it (upstreamRule), into
// its items, as lazyRuleItems does.
func splitLazy(r config.Rule) []ruleItem {
	var items []ruleItem
	for _, f := range sortedKeys(r.Content) {
		v := r.Content[f]
		item := snake(f)
		switch {
		case has(namedFields, r.Type, f):
			m, ok := v.(map[string]any)
			if !ok {
				items = append(items, ruleItem{Item: item, Value: marshal(v)})
				continue
			}
			for _, k := range sortedKeys(m) {
				items = append(items, ruleItem{Item: item, Name: k, val: m[k], lazy: true})
			}
		case has(keyListFields, r.Type, f):
			list, _ := v.([]any)
			for _, e := range list {
				s := fmt.Sprint(e)
				items = append(items, ruleItem{Item: item, Name: bindingItemName(s), Value: []byte(s)})
			}
		default:
			if b, ok := uniqueValue(v); ok {
				items = append(items, ruleItem{Item: item, Value: b})
			}
		}
	}
	return items
}

// uniqueValue encodes a unique item: raw strings (empty skipped), scalars
// as text, non-empty collections and objects as YAML.
func uniqueValue(v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return nil, false
	case string:
		return []byte(x), x != ""
	case bool:
		return []byte(strconv.FormatBool(x)), true
	case int:
		return []byte(strconv.Itoa(x)), true
	case []any:
		return marshal(x), len(x) > 0
	case map[string]any:
		return marshal(x), len(x) > 0
	default:
		return marshal(x), true
	}
}

// applyRuleItem returns a copy of content with the item set to value, or
// removed when del is true.
func applyRuleItem(typ string, content map[string]any, item, name string, value []byte, del bool) (map[string]any, error) {
	f := camel(item)
	decoded, err := decodeRuleItem(typ, f, name, value, del)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(content)+1)
	for k, v := range content {
		out[k] = v
	}
	editRuleItem(typ, out, f, name, decoded, del, func(string) bool { return false })
	return out, nil
}

// decodeRuleItem decodes the value of item (field f, entry name) of a rule
// of type typ as the rule's content holds it: keyListFields' elements and
// raw unique fields as strings, everything else as YAML. It is nil when del
// is true.
func decodeRuleItem(typ, f, name string, value []byte, del bool) (any, error) {
	if del {
		return nil, nil
	}
	if has(keyListFields, typ, f) || (name == "" && has(rawFields, typ, f)) {
		return string(value), nil
	}
	decoded, err := unmarshalValue(value)
	if err != nil {
		return nil, fmt.Errorf("rule %s item %s: %w", typ, snake(f), err)
	}
	return decoded, nil
}

// editRuleItem sets field f's entry name (the whole field when name is "")
// of content to decoded, or removes it when del is true, in place: content
// is the caller's to change. The field's value (a map of named entries or
// a list) is changed in place only when owned(f) says the caller owns it
// too; otherwise it is copied first, and the copy is left in content. A
// field left empty is removed. It costs O(1) for a named entry of an owned
// field, O(len(field)) otherwise.
func editRuleItem(typ string, content map[string]any, f, name string, decoded any, del bool, owned func(f string) bool) {
	switch {
	case name == "":
		if del {
			delete(content, f)
		} else {
			content[f] = decoded
		}
	case has(keyListFields, typ, f):
		old, _ := content[f].([]any)
		var list []any
		if owned(f) {
			list = old[:0]
		}
		for _, e := range old {
			if bindingItemName(fmt.Sprint(e)) != name {
				list = append(list, e)
			}
		}
		if owned(f) {
			clear(old[len(list):]) // filtered in place: no stale element stays reachable
		}
		if !del {
			list = append(list, decoded)
		}
		if len(list) == 0 {
			delete(content, f)
		} else {
			content[f] = list
		}
	default:
		m, ok := content[f].(map[string]any)
		if !ok || !owned(f) {
			m = maps.Clone(m)
			if m == nil {
				m = map[string]any{}
			}
		}
		if del {
			delete(m, name)
		} else {
			m[name] = decoded
		}
		if len(m) == 0 {
			delete(content, f)
		} else {
			content[f] = m
		}
	}
}

// snake converts lowerCamel to lower_underscore ("defaultTableStrategy" ->
// "default_table_strategy").
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r + ('a' - 'A'))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// camel converts lower_underscore to lowerCamel.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func docRoot(doc *yaml.Node) *yaml.Node {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		return doc.Content[0]
	}
	return nil
}

func field(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
