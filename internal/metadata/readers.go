package metadata

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// A registry's readers are the ShardingSphere nodes registered in its
// namespace: each loads rule items the way its release writes them, and
// nothing else. A shardkeeper node reads every layout, so it is no
// reader here. A reader's release loads an item exactly when its own
// release would write the same item for the same configuration
// (ruleItems of its layout): an item placed elsewhere is not read (its
// field loads as null), and a field its class does not have fails the
// whole rule. So the per-release knowledge stays in one place, the swap
// that writes each layout (upstreamRule and the layout's RuleItem), and
// the checks below only compare what two layouts write.

// Reader is a ShardingSphere node registered in the namespace.
type Reader struct {
	InstanceID string
	Version    string // the version its online value carries
	// Layout is the layout its release loads, meaningful when Known.
	Layout paths.Layout
	// Known is false for a version that names no 5.5.x release: what it
	// loads is not known, and it is not checked.
	Known bool
}

// String names the reader for an operator: "node {id} (ShardingSphere {version})".
func (r Reader) String() string {
	return fmt.Sprintf("node %s (ShardingSphere %s)", r.InstanceID, r.Version)
}

// IsShardkeeper reports whether an online value's version is a
// shardkeeper node's (cluster.Version, "shardkeeper-..."): such a node
// reads every layout.
func IsShardkeeper(version string) bool {
	return strings.HasPrefix(version, "shardkeeper")
}

// Member is a registered compute node: its instance id and the version
// its online value carries.
type Member struct {
	InstanceID string
	Version    string
}

// ReadersOf returns the ShardingSphere nodes among members, sorted by
// instance id.
func ReadersOf(members []Member) []Reader {
	var out []Reader
	for _, m := range members {
		if IsShardkeeper(m.Version) {
			continue
		}
		r := Reader{InstanceID: m.InstanceID, Version: m.Version}
		if l, err := paths.ParseLayout(m.Version); err == nil {
			r.Layout, r.Known = l, true
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].InstanceID < out[j].InstanceID })
	return out
}

// LoadReaders reads the ShardingSphere nodes registered in repo's
// namespace now: the online nodes /nodes/compute_nodes/online/{type}/{id}
// and the version of their YAML values (a value that does not decode
// gives a reader of unknown version).
func LoadReaders(ctx context.Context, repo registry.Repository) ([]Reader, error) {
	kvs, err := repo.List(ctx, paths.OnlineRoot)
	if err != nil {
		return nil, fmt.Errorf("read the registered compute nodes: %w", err)
	}
	var members []Member
	for _, kv := range kvs {
		rest, _ := strings.CutPrefix(kv.Key, paths.OnlineRoot+"/")
		typ, id, ok := strings.Cut(rest, "/")
		if !ok || strings.Contains(id, "/") || (typ != string(paths.Proxy) && typ != string(paths.JDBC)) {
			continue
		}
		var v struct {
			Version string `yaml:"version"`
		}
		if yaml.Unmarshal(kv.Value, &v) != nil {
			v.Version = ""
		}
		members = append(members, Member{InstanceID: id, Version: v.Version})
	}
	return ReadersOf(members), nil
}

// LayoutRefusalCode is the vendor code of a write refused because a
// registered node could not load it (CheckReaders).
const LayoutRefusalCode = 17020

// CheckRuleReaders returns nil when every ShardingSphere node registered
// in repo's namespace loads rules of database db as a node writing
// layout writes them. Otherwise it returns the refusal of CheckReaders.
// It reads the registered nodes first (one List of the online compute
// nodes, a handful of keys) and looks at the rules only when one of them
// needs another layout than layout: a statement next to thousands of
// tables then costs no pass over them when no ShardingSphere node of
// another release is registered. Even then, rules that every layout writes
// alike (a rule without default strategies, key generate strategies or a
// sharding cache) are compared once, not once per reader.
func CheckRuleReaders(ctx context.Context, repo registry.Repository, layout paths.Layout, db string, rules ...config.Rule) error {
	readers, err := LoadReaders(ctx, repo)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(readers, func(rd Reader) bool { return rd.Known && rd.Layout != layout }) || layoutNeutral(rules) {
		return nil
	}
	return CheckReaders(layout, readers, db, rules...)
}

// layoutNeutral reports whether every layout writes rules alike: whether
// unloadable(paths.DefaultLayout, l, r) finds nothing for every layout l
// and rule r. It encodes the default layout's items once, and compares
// each named entry (a sharding table, an algorithm: the bulk of a large
// rule) as a value, encoding only entries whose values differ, so that a
// rule statement next to thousands of tables does not encode them all to
// YAML once per layout.
func layoutNeutral(rules []config.Rule) bool {
	for _, r := range rules {
		mine, err := placedLazy(paths.DefaultLayout, r)
		if err != nil {
			continue // refused by the write itself (see unloadable)
		}
		for _, l := range paths.Layouts {
			if l == paths.DefaultLayout {
				continue
			}
			theirs, err := placedLazy(l, r)
			if err != nil || !sameItems(mine, theirs) {
				return false
			}
		}
	}
	return true
}

// placedLazy is placedItemsOf with the named entries left unencoded
// (lazyRuleItems), by their registry node.
func placedLazy(layout paths.Layout, r config.Rule) (map[string]*ruleItem, error) {
	items, err := lazyRuleItems(layout, r)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*ruleItem, len(items))
	for i := range items {
		key, err := layout.RuleItem("db", r.Type, items[i].Item, items[i].Name)
		if err != nil {
			return nil, err
		}
		out[key] = &items[i]
	}
	return out, nil
}

// sameItems reports whether a and b place the same items with the same
// encoded values. Entries with deeply equal values encode alike and are
// not encoded.
func sameItems(a, b map[string]*ruleItem) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok {
			return false
		}
		if x.lazy && y.lazy && reflect.DeepEqual(x.val, y.val) {
			continue
		}
		if !bytes.Equal(x.encoded(), y.encoded()) {
			return false
		}
	}
	return true
}

// CheckReaders returns nil when each known reader loads rules of database
// db as a node writing layout writes them; otherwise a refusal (an
// *sqlerr.Error, LayoutRefusalCode, of kind Conflict) that names the
// first reader that cannot, its version, the item it cannot load, the
// layout it needs and the ways on.
func CheckReaders(layout paths.Layout, readers []Reader, db string, rules ...config.Rule) error {
	for _, rd := range readers {
		if !rd.Known || rd.Layout == layout {
			continue
		}
		for _, r := range rules {
			what := unloadable(layout, rd.Layout, r)
			if what == "" {
				continue
			}
			return &sqlerr.Error{Code: LayoutRefusalCode, SQLState: "HY000", Kind: sqlerr.Conflict, Message: fmt.Sprintf(
				"%s is registered and needs the %s layout: it cannot load %s of rule %s of database %s as this node writes it (layout %s); nothing was written. "+
					"Migrate the registry to its layout (shardkeeper registry migrate --to %s) and set layoutVersion %s, or change the rule so that it needs nothing only layout %s has",
				rd, rd.Layout, what, r.Type, db, layout, rd.Layout, rd.Layout, layout)}
		}
	}
	return nil
}

// unloadable describes the first item of r, written for layout writer,
// that a release loading layout reader would not load as written; "" when
// it loads every item.
func unloadable(writer, reader paths.Layout, r config.Rule) string {
	if writer == reader {
		return ""
	}
	mine, err := placedItems(writer, r)
	if err != nil {
		return "" // refused by the write itself
	}
	theirs, err := placedItems(reader, r)
	if err != nil {
		return "the rule (" + err.Error() + ")"
	}
	for _, k := range sortedKeys(mine) {
		if v, ok := theirs[k]; !ok || !bytes.Equal(v, mine[k]) {
			return "item " + k
		}
	}
	for _, k := range sortedKeys(theirs) {
		if _, ok := mine[k]; !ok {
			return "item " + k + " (it would be missing)"
		}
	}
	return ""
}

// placedItems returns r's items as layout writes them, by their path
// under the rule ("tables/t_order", "default_strategies/default_table_strategy").
func placedItems(layout paths.Layout, r config.Rule) (map[string][]byte, error) {
	root, err := paths.DatabaseRule("db", r.Type)
	if err != nil {
		return nil, err
	}
	items, err := placedItemsOf(layout, "db", r)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(items))
	for k, v := range items {
		out[strings.TrimPrefix(strings.TrimPrefix(k, root), "/")] = v
	}
	return out, nil
}

// placedItemsOf returns rule r of database db as layout writes it: each
// item's registry node and its value.
func placedItemsOf(layout paths.Layout, db string, r config.Rule) (map[string][]byte, error) {
	items, err := ruleItems(layout, r)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(items))
	for _, it := range items {
		key, err := layout.RuleItem(db, r.Type, it.Item, it.Name)
		if err != nil {
			return nil, err
		}
		out[key] = it.Value
	}
	return out, nil
}

// TreeLayouts returns the layouts whose release writes every database's
// rules exactly as the registry holds them (the active version of each
// item, compared as YAML values): all of them for a tree without an item
// that differs between releases (no database, or rules every release
// writes alike), one or two for a tree written in one layout, none for a
// tree that mixes layouts (or holds an item no release writes, such as a
// corrupt one). ctx bounds the reads.
func TreeLayouts(ctx context.Context, repo registry.Repository) ([]paths.Layout, error) {
	dbs, err := repo.Children(ctx, paths.MetadataRoot)
	if err != nil {
		return nil, fmt.Errorf("list databases: %w", err)
	}
	out := slices.Clone(paths.Layouts)
	for _, db := range dbs {
		d, kvs, err := ReadDatabase(ctx, repo, db)
		if errors.Is(err, ErrNoDatabase) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read database %s: %w", db, err)
		}
		stored := activeValues(kvs)
		out = slices.DeleteFunc(out, func(l paths.Layout) bool { return !writesAsStored(l, d, stored) })
	}
	return out, nil
}

// writesAsStored reports whether layout writes d's rules as the items
// stored (node to active value) hold them.
func writesAsStored(layout paths.Layout, d *Database, stored map[string][]byte) bool {
	n := 0
	for _, r := range d.Rules {
		items, err := placedItemsOf(layout, d.Name, r)
		if err != nil {
			return false
		}
		for k, v := range items {
			if s, ok := stored[k]; !ok || !sameYAML(s, v) {
				return false
			}
		}
		n += len(items)
	}
	return n == len(stored)
}

// activeValues maps each versioned node among kvs to the value of its
// active version.
func activeValues(kvs []registry.KV) map[string][]byte {
	byKey := make(map[string][]byte, len(kvs))
	for _, kv := range kvs {
		byKey[kv.Key] = kv.Value
	}
	out := map[string][]byte{}
	for _, kv := range kvs {
		node, ok := strings.CutSuffix(kv.Key, "/"+paths.ActiveVersionName)
		if !ok {
			continue
		}
		if v, ok := byKey[paths.Version(node, atoi(kv.Value))]; ok {
			out[node] = v
		}
	}
	return out
}

// sameYAML reports whether a and b hold the same YAML value (whatever
// their style: upstream and shardkeeper quote and indent differently).
func sameYAML(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if yaml.Unmarshal(a, &va) != nil || yaml.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// LayoutChoice is the layout a node writes and why.
type LayoutChoice struct {
	Layout paths.Layout
	// Reason is "layoutVersion" (configured), "tree" (the one layout
	// the registry's tree is written in), "readers" (the one layout
	// the registered ShardingSphere nodes load) or "default".
	Reason string
}

// ChooseLayout returns the layout of a node without layoutVersion: the
// tree's, when exactly one layout writes it as it is; else the one layout
// every known reader loads; else paths.DefaultLayout (the newest
// release's) when it writes the tree as it is (an empty tree, or rules
// every release writes alike); else the newest layout that does.
func ChooseLayout(tree []paths.Layout, readers []Reader) LayoutChoice {
	if len(tree) == 1 {
		return LayoutChoice{Layout: tree[0], Reason: "tree"}
	}
	if l, ok := readersLayout(readers); ok {
		return LayoutChoice{Layout: l, Reason: "readers"}
	}
	if len(tree) > 0 && !slices.Contains(tree, paths.DefaultLayout) {
		newest := tree[0]
		for _, l := range tree {
			if slices.Index(paths.Layouts, l) > slices.Index(paths.Layouts, newest) {
				newest = l
			}
		}
		return LayoutChoice{Layout: newest, Reason: "tree"}
	}
	return LayoutChoice{Layout: paths.DefaultLayout, Reason: "default"}
}

// PickLayout returns the layout a writer without layoutVersion uses on
// repo now: ChooseLayout of the registry's tree and of the ShardingSphere
// nodes registered in its namespace. ctx bounds the reads.
func PickLayout(ctx context.Context, repo registry.Repository) (LayoutChoice, error) {
	readers, err := LoadReaders(ctx, repo)
	if err != nil {
		return LayoutChoice{}, err
	}
	tree, err := TreeLayouts(ctx, repo)
	if err != nil {
		return LayoutChoice{}, fmt.Errorf("read the registry's layout: %w", err)
	}
	return ChooseLayout(tree, readers), nil
}

// readersLayout returns the layout every known reader loads, if there is
// at least one and they agree.
func readersLayout(readers []Reader) (paths.Layout, bool) {
	var l paths.Layout
	n := 0
	for _, r := range readers {
		if !r.Known {
			continue
		}
		if n > 0 && r.Layout != l {
			return 0, false
		}
		l, n = r.Layout, n+1
	}
	return l, n > 0
}

// LayoutMismatchError is the refusal to start a node configured to
// write a layout that a registered ShardingSphere node does not load.
type LayoutMismatchError struct {
	Layout paths.Layout
	Reader Reader
}

func (e *LayoutMismatchError) Error() string {
	return fmt.Sprintf("%s is registered and loads the %s layout, but this node is configured with layoutVersion %s: "+
		"rule changes it writes could not be loaded there. Set layoutVersion %s, or migrate the registry (shardkeeper registry migrate --to %s) once that node is upgraded, "+
		"or start with --allow-layout-mismatch (changes that node cannot load are then refused)",
		e.Reader, e.Reader.Layout, e.Layout, e.Reader.Layout, e.Layout)
}

// CheckStartLayout returns a *LayoutMismatchError naming the first known
// reader whose layout is not layout.
func CheckStartLayout(layout paths.Layout, readers []Reader) error {
	for _, r := range readers {
		if r.Known && r.Layout != layout {
			return &LayoutMismatchError{Layout: layout, Reader: r}
		}
	}
	return nil
}
