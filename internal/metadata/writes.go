package metadata

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// DatabaseWrites returns every key a new database db is written with when none
// of them exists yet, with its value: /metadata/{db} (empty), then version
// 0 and active_version 0 of each storage unit and of each rule item,
// placed as layout places them. It writes nothing: a caller commits the
// keys in one registry transaction (see registry.Txn).
func DatabaseWrites(layout paths.Layout, db config.Database) ([]registry.KV, error) {
	key, err := paths.Database(db.Name)
	if err != nil {
		return nil, err
	}
	if err := layout.CheckDatabaseName(db.Name); err != nil {
		return nil, err
	}
	out := []registry.KV{{Key: key, Value: []byte{}}}
	fresh := func(node string, content []byte) {
		out = append(out,
			registry.KV{Key: paths.Version(node, 0), Value: content},
			registry.KV{Key: paths.ActiveVersion(node), Value: []byte("0")})
	}
	for _, name := range sortedKeys(db.DataSources) {
		node, err := paths.Unit(db.Name, name)
		if err != nil {
			return nil, fmt.Errorf("storage unit %q: %w", name, err)
		}
		fresh(node, encodeUnit(db.DataSources[name]))
	}
	for _, r := range db.Rules {
		items, err := ruleItems(layout, r)
		if err != nil {
			return nil, fmt.Errorf("database %s: %w", db.Name, err)
		}
		for _, it := range items {
			node, err := layout.RuleItem(db.Name, r.Type, it.Item, it.Name)
			if err != nil {
				return nil, fmt.Errorf("rule %s item %s %s: %w", r.Type, it.Item, it.Name, err)
			}
			fresh(node, it.Value)
		}
	}
	return out, nil
}

// SchemaWrites returns every key PersistSchemas writes for schemas of
// database db when none of them exists yet: each schema node (empty),
// then version 0 and active_version 0 of each table and view, named as
// layout names them.
func SchemaWrites(layout paths.Layout, db string, schemas []datasource.Schema) ([]registry.KV, error) {
	var out []registry.KV
	fresh := func(node string, content []byte) {
		out = append(out,
			registry.KV{Key: paths.Version(node, 0), Value: content},
			registry.KV{Key: paths.ActiveVersion(node), Value: []byte("0")})
	}
	name := layout.NodeName
	for _, s := range schemas {
		key, err := paths.Schema(db, name(s.Name))
		if err != nil {
			return nil, err
		}
		out = append(out, registry.KV{Key: key, Value: []byte{}})
		for _, tn := range sortedKeys(s.Tables) {
			node, err := paths.Table(db, name(s.Name), name(tn))
			if err != nil {
				return nil, err
			}
			fresh(node, encodeTable(s.Tables[tn]))
		}
		for _, vn := range sortedKeys(s.Views) {
			node, err := paths.View(db, name(s.Name), name(vn))
			if err != nil {
				return nil, err
			}
			fresh(node, encodeView(s.Views[vn]))
		}
	}
	return out, nil
}

// GlobalWrites returns the conditions and writes of one registry
// transaction that replaces each global rule of rules, and the props when
// props is not nil, with a new version: the next version node is created,
// active_version moves to it, and the older versions are deleted, each
// conditioned on the state read here, so that the transaction fails
// (ErrBadVersion, ErrExists) when anything changed meanwhile. ctx bounds
// the reads.
func GlobalWrites(ctx context.Context, repo registry.Repository, rules []config.Rule, props config.Props) ([]registry.Cond, []registry.Op, error) {
	var conds []registry.Cond
	var ops []registry.Op
	replace := func(node string, content []byte) error {
		c, o, err := ReplaceWrites(ctx, repo, node, content)
		conds, ops = append(conds, c...), append(ops, o...)
		return err
	}
	for _, r := range rules {
		if !config.IsGlobalRuleType(r.Type) {
			return nil, nil, fmt.Errorf("%q is not a global rule type", r.Type)
		}
		node, err := paths.GlobalRule(r.Type)
		if err != nil {
			return nil, nil, err
		}
		if err := replace(node, encodeGlobalRule(r)); err != nil {
			return nil, nil, err
		}
	}
	if props != nil {
		for k, v := range props {
			if _, err := config.CheckProp(k, v); err != nil {
				return nil, nil, fmt.Errorf("props.%s: %w", k, err)
			}
		}
		if err := replace(paths.PropsRoot, encodeProps(props)); err != nil {
			return nil, nil, err
		}
	}
	return conds, ops, nil
}

// GlobalRuleWritesFrom returns the conditions and writes of one registry
// transaction that makes r the next version of its global rule node, as
// GlobalWrites does, built from kvs (every key under /rules as
// ReadGlobalRules read them) without a read of its own. It is conditioned
// on the active version of every global rule as read, present or absent,
// so it commits only while the registry holds the global rules read:
// GlobalRulesDigest of DecodeGlobalRules(AfterOps(kvs, ops)) is then the
// digest of what the registry holds after it. A failed condition under
// r's own node means r itself changed meanwhile (see registry.OpError).
func GlobalRuleWritesFrom(kvs []registry.KV, r config.Rule) ([]registry.Cond, []registry.Op, error) {
	if !config.IsGlobalRuleType(r.Type) {
		return nil, nil, fmt.Errorf("%q is not a global rule type", r.Type)
	}
	node, err := paths.GlobalRule(r.Type)
	if err != nil {
		return nil, nil, err
	}
	read := make(map[string]registry.KV, len(kvs))
	actives := map[string]bool{}
	for _, kv := range kvs {
		read[kv.Key] = kv
		if registry.Base(kv.Key) == paths.ActiveVersionName {
			actives[kv.Key] = true
		}
	}
	for _, typ := range config.GlobalRuleTypes() {
		other, err := paths.GlobalRule(typ)
		if err != nil {
			return nil, nil, err
		}
		actives[paths.ActiveVersion(other)] = true
	}
	conds, ops := replaceFrom(read, node, encodeGlobalRule(r))
	own := paths.ActiveVersion(node)
	for _, av := range slices.Sorted(maps.Keys(actives)) {
		if av != own {
			conds = append(conds, registry.Cond{Key: av, Version: read[av].Version})
		}
	}
	return conds, ops, nil
}

// ReplaceWrites returns the conditions and writes of a registry
// transaction that makes content the next version of the versioned node
// (see GlobalWrites); the node may be new. ctx bounds the reads.
func ReplaceWrites(ctx context.Context, repo registry.Repository, node string, content []byte) (conds []registry.Cond, ops []registry.Op, err error) {
	av := paths.ActiveVersion(node)
	cur, err := repo.Get(ctx, av)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		conds = append(conds, registry.Cond{Key: av})
	case err != nil:
		return nil, nil, err
	default:
		conds = append(conds, registry.Cond{Key: av, Version: cur.Version})
	}
	children, err := repo.Children(ctx, node+"/"+paths.VersionsName)
	if err != nil {
		return nil, nil, err
	}
	next := 0
	for _, c := range children {
		if n, err := strconv.Atoi(c); err == nil {
			next = max(next, n+1)
		}
	}
	for _, c := range children {
		if n, err := strconv.Atoi(c); err == nil {
			kv, err := repo.Get(ctx, paths.Version(node, n))
			if errors.Is(err, registry.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			conds = append(conds, registry.Cond{Key: kv.Key, Version: kv.Version})
			ops = append(ops, registry.Op{Key: kv.Key, Delete: true})
		}
	}
	vkey := paths.Version(node, next)
	conds = append(conds, registry.Cond{Key: vkey})
	ops = append(ops, registry.Op{Key: vkey, Value: content}, registry.Op{Key: av, Value: []byte(strconv.Itoa(next))})
	return conds, ops, nil
}

// DropTable deletes table db.schema.table (its versions included).
// Deleting a missing table is not an error.
func DropTable(ctx context.Context, repo registry.Repository, db, schema, table string) error {
	node, err := paths.Table(db, schema, table)
	if err != nil {
		return err
	}
	return repo.Delete(ctx, node)
}

// DropView deletes view db.schema.view. Deleting a missing view is not an
// error.
func DropView(ctx context.Context, repo registry.Repository, db, schema, view string) error {
	node, err := paths.View(db, schema, view)
	if err != nil {
		return err
	}
	return repo.Delete(ctx, node)
}

// RuleWrites returns the conditions and writes of one registry transaction
// that turns database rule old into next on database db, item by item as
// ShardingSphere persists them for layout: an item whose content differs
// from old's becomes the item's next version (its copy in another
// layout's place is deleted), an item of old that next lacks is deleted
// wherever a layout places it, an unchanged item is left alone. old is the
// rule as the caller read it, the zero Rule (with next's Type) when there
// was none. Every condition is on the state read here (one List of
// /metadata/{db}/rules), so the transaction fails (ErrBadVersion,
// ErrExists) when the registry changed meanwhile. ctx bounds the read.
func RuleWrites(ctx context.Context, repo registry.Repository, layout paths.Layout, db string, old, next config.Rule) ([]registry.Cond, []registry.Op, error) {
	kvs, err := ReadRules(ctx, repo, db)
	if err != nil {
		return nil, nil, err
	}
	return RuleWritesFrom(layout, db, kvs, old, next)
}

// RuleWritesFrom is RuleWrites over kvs, every key under
// /metadata/{db}/rules as ReadRules reads them (sorted by key), instead of
// a read of its own.
func RuleWritesFrom(layout paths.Layout, db string, kvs []registry.KV, old, next config.Rule) ([]registry.Cond, []registry.Op, error) {
	written := next
	if next.Content != nil {
		var err error
		if written, err = RuleAsWritten(layout, next); err != nil {
			return nil, nil, fmt.Errorf("database %s: %w", db, err)
		}
	}
	return RuleWritesFromWritten(layout, db, NewRuleKeys(kvs), old, written)
}

// RuleWritesFromWritten is RuleWritesFrom over keys (every key under
// /metadata/{db}/rules) for a next rule that the caller already
// converted with RuleAsWritten(layout, next) (to check it): written is
// that result, not converted again, so that a change of one table of
// thousands converts the rule once. The conditions and writes are
// RuleWritesFrom's for next. It looks up only the keys of the items
// that differ (RuleKeys.Under), never a pass over keys.
func RuleWritesFromWritten(layout paths.Layout, db string, keys RuleKeys, old, written config.Rule) ([]registry.Cond, []registry.Op, error) {
	if old.Type == "" {
		old.Type = written.Type
	}
	if old.Type != written.Type {
		return nil, nil, fmt.Errorf("rule %s cannot become rule %s", old.Type, written.Type)
	}
	// The items of both rules, each encoded only when the two differ in
	// it: a change of one table of thousands encodes that table's item.
	before, err := lazyItemsByID(layout, db, old)
	if err != nil {
		return nil, nil, err
	}
	var items []ruleItem
	if written.Content != nil {
		items = splitLazy(written)
	}
	return ruleWritesOf(layout, db, keys, before, written.Type, items)
}

// lazyItemsByID is lazyRuleItems of r (none for a nil content) by item
// and name.
func lazyItemsByID(layout paths.Layout, db string, r config.Rule) (map[[2]string]*ruleItem, error) {
	before := map[[2]string]*ruleItem{}
	if r.Content == nil {
		return before, nil
	}
	items, err := lazyRuleItems(layout, r)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", db, err)
	}
	for i := range items {
		before[[2]string{items[i].Item, items[i].Name}] = &items[i]
	}
	return before, nil
}

// ruleWritesOf is the transaction of RuleWritesFrom from the items of the
// old rule (before, by item and name) and of the next one (items), both
// as layout writes them, over keys, the rule keys read.
func ruleWritesOf(layout paths.Layout, db string, keys RuleKeys, before map[[2]string]*ruleItem, typ string, items []ruleItem) ([]registry.Cond, []registry.Op, error) {
	var conds []registry.Cond
	var ops []registry.Op
	add := func(c []registry.Cond, o []registry.Op) {
		conds, ops = append(conds, c...), append(ops, o...)
	}
	kept := map[[2]string]bool{}
	for i := range items {
		it := &items[i]
		id := [2]string{it.Item, it.Name}
		kept[id] = true
		if b, ok := before[id]; ok && (b.lazy && it.lazy && reflect.DeepEqual(b.val, it.val) || string(b.encoded()) == string(it.encoded())) {
			continue
		}
		node, err := layout.RuleItem(db, typ, it.Item, it.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("rule %s item %s %s: %w", typ, it.Item, it.Name, err)
		}
		all, err := paths.RuleItemPlacements(db, typ, it.Item, it.Name)
		if err != nil {
			return nil, nil, err
		}
		for _, other := range all {
			if other != node {
				add(deleteFrom(keys.Under(other), other))
			}
		}
		add(replaceFrom(keys.Under(node), node, it.encoded()))
	}
	for _, id := range sortedKeys2(before) {
		if kept[id] {
			continue
		}
		all, err := paths.RuleItemPlacements(db, typ, id[0], id[1])
		if err != nil {
			return nil, nil, err
		}
		for _, node := range all {
			add(deleteFrom(keys.Under(node), node))
		}
	}
	return conds, ops, nil
}

// replaceFrom is ReplaceWrites over the keys read.
func replaceFrom(read map[string]registry.KV, node string, content []byte) ([]registry.Cond, []registry.Op) {
	var conds []registry.Cond
	var ops []registry.Op
	av := paths.ActiveVersion(node)
	conds = append(conds, registry.Cond{Key: av, Version: read[av].Version})
	prefix := node + "/" + paths.VersionsName + "/"
	next := 0
	var versions []registry.KV
	for k, kv := range read {
		if rest, ok := strings.CutPrefix(k, prefix); ok && !strings.Contains(rest, "/") {
			if n, err := strconv.Atoi(rest); err == nil {
				next = max(next, n+1)
				versions = append(versions, kv)
			}
		}
	}
	slices.SortFunc(versions, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) })
	for _, kv := range versions {
		conds = append(conds, registry.Cond{Key: kv.Key, Version: kv.Version})
		ops = append(ops, registry.Op{Key: kv.Key, Delete: true})
	}
	vkey := paths.Version(node, next)
	conds = append(conds, registry.Cond{Key: vkey})
	ops = append(ops, registry.Op{Key: vkey, Value: content}, registry.Op{Key: av, Value: []byte(strconv.Itoa(next))})
	return conds, ops
}

// deleteFrom is DeleteWrites over the keys read.
func deleteFrom(read map[string]registry.KV, node string) ([]registry.Cond, []registry.Op) {
	var kvs []registry.KV
	for k, kv := range read {
		if k == node || strings.HasPrefix(k, node+"/") {
			kvs = append(kvs, kv)
		}
	}
	slices.SortFunc(kvs, func(a, b registry.KV) int {
		if d := strings.Count(b.Key, "/") - strings.Count(a.Key, "/"); d != 0 {
			return d
		}
		return strings.Compare(a.Key, b.Key)
	})
	var conds []registry.Cond
	var ops []registry.Op
	for _, kv := range kvs {
		conds = append(conds, registry.Cond{Key: kv.Key, Version: kv.Version})
		ops = append(ops, registry.Op{Key: kv.Key, Delete: true})
	}
	return conds, ops
}

func sortedKeys2[V any](m map[[2]string]V) [][2]string {
	out := make([][2]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	return out
}

// UnitWrites returns the conditions and writes of a registry transaction
// that makes ds the next version of storage unit name of database db
// (version 0 when the unit is new; see ReplaceWrites). ctx bounds the
// reads.
func UnitWrites(ctx context.Context, repo registry.Repository, db, name string, ds config.DataSource) ([]registry.Cond, []registry.Op, error) {
	node, err := paths.Unit(db, name)
	if err != nil {
		return nil, nil, err
	}
	return ReplaceWrites(ctx, repo, node, encodeUnit(ds))
}

// DeleteWrites returns the conditions and writes of a registry transaction
// that deletes node with every key under it, deepest first, each
// conditioned on the version read here; none when nothing is there. ctx
// bounds the reads.
func DeleteWrites(ctx context.Context, repo registry.Repository, node string) ([]registry.Cond, []registry.Op, error) {
	kvs, err := snapshotOf(ctx, repo, node)
	if err != nil {
		return nil, nil, err
	}
	slices.SortStableFunc(kvs, func(a, b registry.KV) int {
		return strings.Count(b.Key, "/") - strings.Count(a.Key, "/")
	})
	var conds []registry.Cond
	var ops []registry.Op
	for _, kv := range kvs {
		if kv.Key != node && !strings.HasPrefix(kv.Key, node+"/") {
			continue
		}
		conds = append(conds, registry.Cond{Key: kv.Key, Version: kv.Version})
		ops = append(ops, registry.Op{Key: kv.Key, Delete: true})
	}
	return conds, ops, nil
}
