package metadata

import (
	"maps"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
)

// Snapshot is one immutable view of the cluster's metadata. Nothing
// reachable from a published Snapshot is ever modified: a change produces a
// new Snapshot that shares the unchanged parts. Safe for concurrent use.
type Snapshot struct {
	Seq          uint64                 // increases with every published change
	Databases    map[string]*Database   // by name
	GlobalRules  map[string]config.Rule // by type: "authority", "transaction", ...
	Props        config.Props           // as stored in /props (unset keys use defaults)
	PropsVersion int                    // the /props active_version Props came from; -1 when none
	ClusterState string                 // OK, READ_ONLY or UNAVAILABLE
	// DataSourceStates are the states ShardingSphere keeps under
	// /nodes/qualified_data_sources, by read data source: StateEnabled or
	// StateDisabled. A data source without an entry is enabled.
	DataSourceStates map[QualifiedDataSource]string
}

// Database is one logical database.
type Database struct {
	Name    string
	Units   map[string]config.DataSource // storage units by name
	Rules   map[string]config.Rule       // database rules by type, rebuilt from their items
	Schemas map[string]*Schema

	// rulesSum is the sum RulesDigest makes of Rules, kept up to date
	// item by item by the Store when summed is true (see
	// Database.RulesDigest).
	rulesSum rulesSum
	summed   bool
}

// Schema is one schema of a logical database.
type Schema struct {
	Name   string
	Tables map[string]datasource.Table
	Views  map[string]datasource.View
}

// Table returns the table db.schema.table and whether it exists. The
// schema and the table are found by their names in any case, as
// ShardingSphere finds them (up to 5.5.3 their nodes are named in lower
// case; 5.5.4 keeps the case): an exact match first.
func (s *Snapshot) Table(db, schema, table string) (datasource.Table, bool) {
	d := s.Databases[db]
	if d == nil {
		return datasource.Table{}, false
	}
	sc, ok := foldGet(d.Schemas, schema)
	if !ok || sc == nil {
		return datasource.Table{}, false
	}
	return foldGet(sc.Tables, table)
}

// foldGet returns m[name], or m[lower case name], or the value of a key
// equal to name under Unicode case folding (the smallest such key, so that
// the result does not depend on map order).
func foldGet[V any](m map[string]V, name string) (V, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	if v, ok := m[strings.ToLower(name)]; ok {
		return v, true
	}
	var out V
	found := ""
	for k, v := range m {
		if strings.EqualFold(k, name) && (found == "" || k < found) {
			out, found = v, k
		}
	}
	return out, found != ""
}

// Change says what one applied event changed. Kind is one of the paths.Kind
// constants; Name is the table, view, unit or global rule type; RuleType and RuleItem are set for rule items.
// For a rule item, Field is the rule content's field it edits (RuleItem
// as the content spells it: "autoTables" for "auto_tables") and ItemName
// the entry of that field it edits ("t_order"), "" when it is the whole
// field (a unique item, or a named item deleted with all its entries).
type Change struct {
	Kind     string
	Database string
	Schema   string
	Name     string
	RuleType string
	RuleItem string
	Field    string
	ItemName string
	Deleted  bool
}

func emptySnapshot() *Snapshot {
	return &Snapshot{
		Databases:        map[string]*Database{},
		GlobalRules:      map[string]config.Rule{},
		Props:            config.Props{},
		PropsVersion:     -1,
		ClusterState:     "OK",
		DataSourceStates: map[QualifiedDataSource]string{},
	}
}

// RuleView is d as the rule families' changes, checks and units read it
// (rule.Database): its units' names, its rules' contents (shared, not to
// be modified) and the data sources its rules may name.
func (d *Database) RuleView() rule.Database {
	contents := make(map[string]map[string]any, len(d.Rules))
	for typ, r := range d.Rules {
		contents[typ] = r.Content
	}
	return families.Database(d.Name, slices.Sorted(maps.Keys(d.Units)), contents)
}
