package paths

import (
	"fmt"
	"strings"

	"github.com/shardkeeper/shardkeeper/registry"
)

// QualifiedDataSourcesRoot holds the state of each readwrite-splitting read
// data source, {db}.{group}.{unit} (persistent; YAML "state: ENABLED" or
// "state: DISABLED", ShardingSphere's YamlQualifiedDataSourceState).
const QualifiedDataSourcesRoot = "/nodes/qualified_data_sources"

// QualifiedDataSource is
// /nodes/qualified_data_sources/{db}.{group}.{unit}: the state of storage
// unit unit as a read data source of the readwrite-splitting group group of
// database db. ShardingSphere splits the name at ".", so a name containing
// "." is refused: it would read back as another data source.
func QualifiedDataSource(db, group, unit string) (string, error) {
	for _, n := range []string{db, group, unit} {
		if err := registry.ValidateName(n); err != nil {
			return "", err
		}
		if strings.Contains(n, ".") {
			return "", fmt.Errorf("%w: name %q contains \".\", which separates database, group and storage unit in %s", registry.ErrBadKey, n, QualifiedDataSourcesRoot)
		}
	}
	return QualifiedDataSourcesRoot + "/" + db + "." + group + "." + unit, nil
}

// ParseQualifiedDataSource returns the database, group and storage unit of
// a key directly under QualifiedDataSourcesRoot. isQDS says whether the key
// is such a child; ok is false when its name is not three non-empty names
// joined by "." (ShardingSphere would misread it).
func ParseQualifiedDataSource(key string) (db, group, unit string, isQDS, ok bool) {
	name, found := strings.CutPrefix(key, QualifiedDataSourcesRoot+"/")
	if !found || name == "" || strings.Contains(name, "/") {
		return "", "", "", false, false
	}
	parts := strings.Split(name, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", true, false
	}
	return parts[0], parts[1], parts[2], true, true
}

// StatisticsRoot holds ShardingSphere's collected statistics:
// {db}/schemas/{schema}/tables/{table}/{uniqueKey} (persistent; YAML
// YamlRowStatistics), with "" at each parent.
const StatisticsRoot = "/statistics/databases"

// StatisticsDatabase is /statistics/databases/{db}.
func StatisticsDatabase(db string) (string, error) { return join(StatisticsRoot, db) }

// StatisticsKey is a key under StatisticsRoot split into its names: a
// database, schema or table node, or one row (Row set).
type StatisticsKey struct {
	Database, Schema, Table, Row string
}

// ParseStatistics splits a key under StatisticsRoot. ok is false for the
// root itself and for keys outside the layout
// {db}[/schemas/{schema}[/tables/{table}[/{uniqueKey}]]].
func ParseStatistics(key string) (k StatisticsKey, ok bool) {
	rest, found := strings.CutPrefix(key, StatisticsRoot+"/")
	if !found {
		return k, false
	}
	segs := strings.Split(rest, "/")
	for _, s := range segs {
		if s == "" {
			return k, false
		}
	}
	k.Database = segs[0]
	switch {
	case len(segs) == 1:
		return k, true
	case len(segs) == 2 || len(segs) > 6 || segs[1] != "schemas":
		return k, false
	}
	k.Schema = segs[2]
	switch {
	case len(segs) == 3:
		return k, true
	case len(segs) < 5 || segs[3] != "tables":
		return k, false
	}
	k.Table = segs[4]
	if len(segs) == 6 {
		k.Row = segs[5]
	}
	return k, true
}

// Database listener coordinator values: what a node announces about a
// database it creates or drops (ShardingSphere's
// ClusterDatabaseListenerCoordinatorType from 5.5.3 on;
// ListenerAssistedType in 5.5.0-5.5.2).
const (
	ListenerCreate    = "CREATE"
	ListenerDrop      = "DROP"
	ListenerCreate552 = "CREATE_DATABASE"
	ListenerDrop552   = "DROP_DATABASE"
)

// ListenerValue is the value l's coordinator node holds for a creation
// (create true) or a drop.
func (l Layout) ListenerValue(create bool) string {
	switch {
	case l == Layout552 && create:
		return ListenerCreate552
	case l == Layout552:
		return ListenerDrop552
	case create:
		return ListenerCreate
	}
	return ListenerDrop
}
