package metadata

import (
	"fmt"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// DatabaseWrites returns every key PersistDatabase writes for db when none
// of them exists yet, with its value: /metadata/{db} (empty), then version
// 0 and active_version 0 of each storage unit and of each rule item,
// placed as layout places them. It writes nothing: a caller commits the
// keys in one registry transaction (see registry.Txn).
func DatabaseWrites(layout paths.Layout, db config.Database) ([]registry.KV, error) {
	key, err := paths.Database(db.Name)
	if err != nil {
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
		for _, it := range ruleItems(r) {
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
// then version 0 and active_version 0 of each table and view.
func SchemaWrites(db string, schemas []datasource.Schema) ([]registry.KV, error) {
	var out []registry.KV
	fresh := func(node string, content []byte) {
		out = append(out,
			registry.KV{Key: paths.Version(node, 0), Value: content},
			registry.KV{Key: paths.ActiveVersion(node), Value: []byte("0")})
	}
	for _, s := range schemas {
		key, err := paths.Schema(db, s.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, registry.KV{Key: key, Value: []byte{}})
		for _, name := range sortedKeys(s.Tables) {
			node, err := paths.Table(db, s.Name, name)
			if err != nil {
				return nil, err
			}
			fresh(node, encodeTable(s.Tables[name]))
		}
		for _, name := range sortedKeys(s.Views) {
			node, err := paths.View(db, s.Name, name)
			if err != nil {
				return nil, err
			}
			fresh(node, encodeView(s.Views[name]))
		}
	}
	return out, nil
}
