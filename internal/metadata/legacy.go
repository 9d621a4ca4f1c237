package metadata

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Layouts of releases before 5.5, which a migration reads and converts
// (a node neither writes nor follows them):
//
//   - 5.4.x writes each rule item as 5.5.0-5.5.2 do (versioned items under
//     /metadata/{db}/rules/{type}/..., the sharding defaults under
//     default_strategies/), but names four items otherwise (renamed54):
//     the sharding rule's algorithms/ (5.5: sharding_algorithms/), the
//     read-write splitting rule's data_sources/ (data_source_groups/), the
//     shadow rule's algorithms/ and default_algorithm_name
//     (shadow_algorithms/, default_shadow_algorithm_name). Units, tables,
//     global rules and props are where 5.5 has them.
//   - 5.3.x keeps a database's whole configuration in two values of one
//     version: /metadata/{db}/active_version names it, and
//     /metadata/{db}/versions/{n}/data_sources holds every unit (a map of
//     name to the unit's properties, as 5.5 writes one unit) and
//     .../rules every rule (a YAML list of tagged rules, !SHARDING with
//     its broadcastTables, as a database file writes them). A table or
//     view is one unversioned value, /metadata/{db}/schemas/{s}/tables/{t};
//     the global rules are one tagged list at /rules and the props one
//     map at /props.

// Legacy layouts, as a migration names them.
const (
	Legacy54 = "5.4.x"
	Legacy53 = "5.3.x"
)

// renamed54 maps a 5.4.x rule item name, by rule type, to its 5.5 name.
var renamed54 = map[string]map[string]string{
	"sharding":            {"algorithms": "sharding_algorithms"},
	"readwrite_splitting": {"data_sources": "data_source_groups"},
	"shadow":              {"algorithms": "shadow_algorithms", "default_algorithm_name": "default_shadow_algorithm_name"},
}

// rename54 returns the 5.5 name of the rule item key (any key under
// /metadata/{db}/rules) of a 5.4.x tree, and whether it was renamed.
func rename54(db, key string) (string, bool) {
	root, err := paths.Database(db)
	if err != nil {
		return key, false
	}
	rest, ok := strings.CutPrefix(key, root+"/rules/")
	if !ok {
		return key, false
	}
	seg := strings.SplitN(rest, "/", 3)
	if len(seg) < 2 {
		return key, false
	}
	to, ok := renamed54[seg[0]][seg[1]]
	if !ok {
		return key, false
	}
	seg[1] = to
	return root + "/rules/" + strings.Join(seg, "/"), true
}

// aliases54 returns, for the versioned rule item nodes among kvs named as
// 5.4.x names them, their 5.5 node; nil when there is none (the rules
// are read as they are).
func aliases54(db string, kvs []registry.KV) map[string]string {
	var out map[string]string
	for _, kv := range kvs {
		node, ok := strings.CutSuffix(kv.Key, "/"+paths.ActiveVersionName)
		if !ok {
			continue
		}
		if to, ok := rename54(db, node); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[node] = to
		}
	}
	return out
}

// renamedKVs is kvs with each 5.4.x item key under its 5.5 name.
func renamedKVs(db string, kvs []registry.KV) []registry.KV {
	out := make([]registry.KV, len(kvs))
	for i, kv := range kvs {
		out[i] = kv
		out[i].Key, _ = rename54(db, kv.Key)
	}
	return out
}

// legacy53 is a database of a 5.3.x tree as read.
type legacy53 struct {
	db config.Database
	// keys are every key of the 5.3.x form to remove or rewrite: the
	// active version, the versions subtree, the unversioned tables and
	// views (key to value).
	keys []registry.KV
	// tables maps an unversioned table or view key to its value.
	tables map[string][]byte
}

// readLegacy53 reads database db in the 5.3.x form from all, every key
// under /metadata/{db}; ok is false when db has no
// /metadata/{db}/active_version (it is not in that form).
func readLegacy53(db string, all []registry.KV) (l legacy53, ok bool, err error) {
	root, err := paths.Database(db)
	if err != nil {
		return l, false, err
	}
	byKey := make(map[string]registry.KV, len(all))
	for _, kv := range all {
		byKey[kv.Key] = kv
	}
	av, ok := byKey[root+"/"+paths.ActiveVersionName]
	if !ok {
		return l, false, nil
	}
	version := strings.TrimSpace(string(av.Value))
	base := root + "/" + paths.VersionsName + "/" + version
	l.tables = map[string][]byte{}
	for _, kv := range all {
		rest, _ := strings.CutPrefix(kv.Key, root+"/")
		switch {
		case kv.Key == av.Key, strings.HasPrefix(rest, paths.VersionsName+"/"), rest == paths.VersionsName:
			l.keys = append(l.keys, kv)
		case strings.HasPrefix(rest, "schemas/"):
			seg := strings.Split(rest, "/")
			// schemas/{s}/tables/{t} or schemas/{s}/views/{v} holding a value.
			if len(seg) == 4 && (seg[2] == "tables" || seg[2] == "views") && len(kv.Value) > 0 {
				l.keys = append(l.keys, kv)
				l.tables[kv.Key] = kv.Value
			}
		}
	}
	doc := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) {
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	add("databaseName", &yaml.Node{Kind: yaml.ScalarNode, Value: db})
	for _, part := range []string{"data_sources", "rules"} {
		kv, ok := byKey[base+"/"+part]
		if !ok || len(strings.TrimSpace(string(kv.Value))) == 0 {
			continue
		}
		var n yaml.Node
		if err := yaml.Unmarshal(kv.Value, &n); err != nil {
			return l, true, fmt.Errorf("%s: %w", kv.Key, err)
		}
		v := docRoot(&n)
		if part == "rules" {
			if v, err = broadcast53(kv.Key, v); err != nil {
				return l, true, err
			}
			add("rules", v)
		} else {
			add("dataSources", v)
		}
	}
	text, err := yaml.Marshal(doc)
	if err != nil {
		return l, true, err
	}
	d, err := config.ParseDatabase(base, text)
	if err != nil {
		return l, true, fmt.Errorf("the 5.3.x configuration of database %s: %w", db, err)
	}
	if d != nil {
		l.db = *d
	}
	l.db.Name = db
	return l, true, nil
}

// broadcast53 moves the broadcastTables of a 5.3.x !SHARDING rule into a
// !BROADCAST rule of their own, as 5.4 split them.
func broadcast53(key string, rules *yaml.Node) (*yaml.Node, error) {
	if rules == nil || rules.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: the rules are not a YAML list", key)
	}
	out := &yaml.Node{Kind: yaml.SequenceNode}
	for _, r := range rules.Content {
		out.Content = append(out.Content, r)
		if r.Tag != "!SHARDING" || r.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(r.Content); i += 2 {
			if r.Content[i].Value != "broadcastTables" {
				continue
			}
			tables := r.Content[i+1]
			r.Content = slices.Delete(r.Content, i, i+2)
			if len(tables.Content) > 0 {
				out.Content = append(out.Content, &yaml.Node{Kind: yaml.MappingNode, Tag: "!BROADCAST", Content: []*yaml.Node{
					{Kind: yaml.ScalarNode, Value: "tables"}, tables}})
			}
			break
		}
	}
	return out, nil
}

// planLegacy53 is planDatabase for database l.db of a 5.3.x tree: every
// unit, rule item, table and view written fresh in layout to's places,
// the 5.3.x keys removed (or, for a key that becomes the parent of new
// keys, emptied as ZooKeeper's parents are), in one transaction whose
// conditions are every key read.
func planLegacy53(to paths.Layout, l legacy53) (DatabaseMigration, error) {
	m := DatabaseMigration{Database: l.db.Name, to: to}
	for _, r := range l.db.Rules {
		if err := expressible(to, r); err != nil {
			return m, &MigrationError{Database: l.db.Name, To: to, Reason: fmt.Sprintf("rule %s: %v", r.Type, err)}
		}
	}
	kvs, err := DatabaseWrites(to, l.db)
	if err != nil {
		return m, &MigrationError{Database: l.db.Name, To: to, Reason: err.Error()}
	}
	for _, k := range sortedKeys(l.tables) {
		kvs = append(kvs, registry.KV{Key: paths.Version(k, 0), Value: l.tables[k]}, registry.KV{Key: paths.ActiveVersion(k), Value: []byte("0")})
	}
	written := map[string]bool{}
	for _, kv := range kvs {
		written[kv.Key] = true
	}
	parent := func(k string) bool {
		for w := range written {
			if strings.HasPrefix(w, k+"/") {
				return true
			}
		}
		return false
	}
	old := slices.Clone(l.keys)
	// Deepest first, so that ZooKeeper deletes children before parents.
	slices.SortFunc(old, func(a, b registry.KV) int {
		if d := strings.Count(b.Key, "/") - strings.Count(a.Key, "/"); d != 0 {
			return d
		}
		return strings.Compare(a.Key, b.Key)
	})
	for _, kv := range old {
		m.conds = append(m.conds, registry.Cond{Key: kv.Key, Version: kv.Version})
		if parent(kv.Key) {
			m.ops = append(m.ops, registry.Op{Key: kv.Key, Value: []byte{}})
			m.Steps = append(m.Steps, MigrationStep{Action: MigrationChange, Node: kv.Key})
			continue
		}
		m.ops = append(m.ops, registry.Op{Key: kv.Key, Delete: true})
		m.Steps = append(m.Steps, MigrationStep{Action: MigrationRemove, Node: kv.Key})
	}
	root, _ := paths.Database(l.db.Name)
	for _, kv := range kvs {
		if kv.Key == root {
			continue // the database's own node is there
		}
		m.conds = append(m.conds, registry.Cond{Key: kv.Key})
		m.ops = append(m.ops, registry.Op{Key: kv.Key, Value: kv.Value})
		if node, ok := strings.CutSuffix(kv.Key, "/"+paths.ActiveVersionName); ok {
			m.Steps = append(m.Steps, MigrationStep{Action: MigrationAdd, Node: node})
		}
	}
	return m, nil
}

// readAll lists every key under /metadata/{db}. ctx bounds the read.
func readAll(ctx context.Context, repo registry.Repository, db string) ([]registry.KV, error) {
	root, err := paths.Database(db)
	if err != nil {
		return nil, err
	}
	return repo.List(ctx, root)
}

// GlobalMigration names the global rules and props in a migration's plan
// (DatabaseMigration.Database) when they are converted from the 5.3.x form.
const GlobalMigration = "(global rules and props)"

// planGlobal53 plans the conversion of 5.3.x's global rules (/rules, a
// tagged YAML list) and props (/props, one map) into the versioned nodes
// of 5.4 and later, /rules/{type}/versions/0 and /props/versions/0, and
// the emptying of /rules and /props (they become parents). ok is false
// when neither is in the 5.3.x form. 5.3.x's sqlCommentParseEnabled of
// the SQL parser rule, which 5.4 removed, is not carried. ctx bounds the
// reads.
func planGlobal53(ctx context.Context, repo registry.Repository, to paths.Layout) (m DatabaseMigration, ok bool, err error) {
	m = DatabaseMigration{Database: GlobalMigration, From: Legacy53, to: to}
	refuse := func(format string, args ...any) (DatabaseMigration, bool, error) {
		return m, true, &MigrationError{Database: GlobalMigration, To: to, Reason: fmt.Sprintf(format, args...)}
	}
	doc := &yaml.Node{Kind: yaml.MappingNode}
	var olds []registry.KV
	for _, key := range []string{paths.GlobalRulesRoot, paths.PropsRoot} {
		kv, err := repo.Get(ctx, key)
		if errors.Is(err, registry.ErrNotFound) {
			continue
		}
		if err != nil {
			return m, false, err
		}
		if len(strings.TrimSpace(string(kv.Value))) == 0 {
			continue
		}
		var n yaml.Node
		if err := yaml.Unmarshal(kv.Value, &n); err != nil {
			return refuse("%s: %v", key, err)
		}
		v := docRoot(&n)
		if key == paths.PropsRoot {
			if v == nil || v.Kind != yaml.MappingNode {
				return refuse("%s is not a map of props", key)
			}
			doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "props"}, v)
			olds = append(olds, kv)
			continue
		}
		if v == nil || v.Kind != yaml.SequenceNode {
			return refuse("%s is not a list of tagged global rules", key)
		}
		for _, r := range v.Content {
			typ := strings.ToLower(strings.TrimPrefix(r.Tag, "!"))
			if !strings.HasPrefix(r.Tag, "!") || !config.IsGlobalRuleType(typ) {
				return refuse("%s holds the global rule %q, which ShardingSphere %s does not have (remove it first)", key, r.Tag, to)
			}
			r.Tag = ""
			if typ == "sql_parser" && r.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(r.Content); i += 2 {
					if r.Content[i].Value == "sqlCommentParseEnabled" {
						r.Content = slices.Delete(r.Content, i, i+2)
						break
					}
				}
			}
			doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: camel(typ)}, r)
		}
		olds = append(olds, kv)
	}
	if len(olds) == 0 {
		return m, false, nil
	}
	text, err := yaml.Marshal(doc)
	if err != nil {
		return m, true, err
	}
	cfg, err := config.ParseGlobal(paths.GlobalRulesRoot, text)
	if err != nil {
		return refuse("the 5.3.x global rules and props: %v", err)
	}
	conds, ops, err := GlobalWrites(ctx, repo, cfg.GlobalRules, cfg.Props)
	if err != nil {
		return refuse("%v", err)
	}
	for _, kv := range olds {
		m.conds = append(m.conds, registry.Cond{Key: kv.Key, Version: kv.Version})
		m.ops = append(m.ops, registry.Op{Key: kv.Key, Value: []byte{}})
		m.Steps = append(m.Steps, MigrationStep{Action: MigrationChange, Node: kv.Key})
	}
	m.conds, m.ops = append(m.conds, conds...), append(m.ops, ops...)
	for _, o := range ops {
		if node, ok := strings.CutSuffix(o.Key, "/"+paths.ActiveVersionName); ok {
			m.Steps = append(m.Steps, MigrationStep{Action: MigrationAdd, Node: node})
		}
	}
	return m, true, nil
}
