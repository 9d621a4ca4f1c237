package metadata

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Data source states, ShardingSphere's DataSourceState.
const (
	StateEnabled  = "ENABLED"
	StateDisabled = "DISABLED"
)

// QualifiedDataSource names a read data source of a readwrite-splitting
// group: ShardingSphere's QualifiedDataSource.
type QualifiedDataSource struct {
	Database string
	Group    string // the readwrite-splitting data source group
	Unit     string // the storage unit
}

// String is "db.group.unit", the registry node's name.
func (q QualifiedDataSource) String() string { return q.Database + "." + q.Group + "." + q.Unit }

// EncodeDataSourceState is the value ShardingSphere writes for state:
// YamlEngine.marshal of a YamlQualifiedDataSourceState, "state: DISABLED\n".
func EncodeDataSourceState(state string) []byte { return []byte("state: " + state + "\n") }

// DecodeDataSourceState parses a qualified data source node's value as
// ShardingSphere loads it (a YAML map with exactly the property state) and
// returns StateEnabled or StateDisabled.
func DecodeDataSourceState(b []byte) (string, error) {
	var v struct {
		State string `yaml:"state"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("not a YamlQualifiedDataSourceState (want \"state: ENABLED\" or \"state: DISABLED\"): %w", err)
	}
	if v.State != StateEnabled && v.State != StateDisabled {
		return "", fmt.Errorf("state %q is neither %s nor %s", v.State, StateEnabled, StateDisabled)
	}
	return v.State, nil
}

// dataSourceState applies a put or delete of a qualified data source node.
// A deleted node or an empty value (ShardingSphere skips those) means
// enabled.
func (a *applier) dataSourceState(d *draft, ev registry.Event, q QualifiedDataSource, ok bool) {
	key := ev.KV.Key
	if !ok {
		if ev.Type == registry.EventPut {
			a.problem(key, errors.New("the name is not database.group.storage_unit"))
		}
		return
	}
	state := ""
	if ev.Type == registry.EventPut && len(bytes.TrimSpace(ev.KV.Value)) > 0 {
		s, err := DecodeDataSourceState(ev.KV.Value)
		if err != nil {
			a.problem(key, err)
			return
		}
		state = s
	}
	if cur, ok := d.s.DataSourceStates[q]; cur == state && (ok || state == "") {
		return
	}
	if !d.states {
		d.s.DataSourceStates = maps.Clone(d.s.DataSourceStates)
		d.states = true
	}
	if state == "" {
		delete(d.s.DataSourceStates, q)
	} else {
		d.s.DataSourceStates[q] = state
	}
	d.changes = append(d.changes, Change{Kind: KindDataSourceState, Database: q.Database, RuleItem: q.Group, Name: q.Unit, Deleted: state == ""})
}

// KindDataSourceState is the Change.Kind of a qualified data source state
// (Database, RuleItem the group, Name the storage unit).
const KindDataSourceState = "data_source_state"

// announcement returns the database listener coordinator's current
// announcement for db, "CREATE" or "DROP" ("" when none), from either
// layout's node, as the mirror holds it.
func (a *applier) announcement(db string) string {
	// db comes from a parsed key: the keys are built without validating it
	// again, as this runs for every event under /metadata.
	for _, root := range []string{paths.DatabaseListenerRoot, paths.DatabaseListenerRoot552} {
		if kv, ok := a.mirror[root+"/"+db]; ok {
			if v, err := parseAnnouncement(kv.Value); err == nil {
				return v
			}
		}
	}
	return ""
}

// parseAnnouncement reads a coordinator node's value: CREATE or DROP
// (5.5.3 and later), CREATE_DATABASE or DROP_DATABASE (5.5.0-5.5.2), or
// the YAML ListenerAssisted object of earlier releases
// ("listenerAssistedType: DROP_DATABASE"). It returns CREATE or DROP.
func parseAnnouncement(b []byte) (string, error) {
	v := strings.TrimSpace(string(b))
	if _, t, found := strings.Cut(v, "listenerAssistedType:"); found {
		v, _, _ = strings.Cut(strings.TrimSpace(t), "\n")
		v = strings.TrimSpace(v)
	}
	switch v {
	case paths.ListenerCreate, paths.ListenerCreate552:
		return paths.ListenerCreate, nil
	case paths.ListenerDrop, paths.ListenerDrop552:
		return paths.ListenerDrop, nil
	}
	return "", fmt.Errorf("database listener announcement %q is none of CREATE, DROP, CREATE_DATABASE, DROP_DATABASE", v)
}

// dropAnnounced says whether a DROP announcement for db stands: the node
// then ignores db's keys, as ShardingSphere removes its listener.
func (a *applier) dropAnnounced(db string) bool { return a.announcement(db) == paths.ListenerDrop }

// databaseListener follows a change of db's coordinator node, as
// ShardingSphere's DatabaseListenerChangedHandler does: while DROP stands
// the database leaves the snapshot and its keys are ignored; otherwise
// (CREATE, or the announcement gone) the database is followed again,
// rebuilt from the keys the node mirrors, which includes whatever was
// written under it meanwhile. live makes it check first that the database
// still exists (ctx bounds that read).
func (a *applier) databaseListener(ctx context.Context, d *draft, db string, live bool) {
	for _, l := range []paths.Layout{paths.Layout553, paths.Layout552} {
		if key, err := l.DatabaseListener(db); err == nil {
			if kv, ok := a.mirror[key]; ok {
				if _, err := parseAnnouncement(kv.Value); err != nil {
					a.problem(key, err)
				}
			}
		}
	}
	node, err := paths.Database(db)
	if err != nil {
		return
	}
	if a.dropAnnounced(db) {
		a.hidden[db] = true
		if _, ok := d.s.Databases[db]; ok {
			delete(d.s.Databases, db)
			a.forget(node)
			d.changes = append(d.changes, Change{Kind: paths.KindDatabase, Database: db, Deleted: true})
		}
		return
	}
	// Keys of db that came in the same batch as the announcement's end
	// were not applied (hidden held until now): the rebuild below takes
	// them from the mirror.
	delete(a.hidden, db)
	if _, ok := d.s.Databases[db]; ok {
		return
	}
	if live {
		// The drop's own deletes may still be on their way through the
		// /metadata watch: follow the database again only if it is still
		// there.
		if _, err := a.repo.Get(ctx, node); err != nil {
			if !errors.Is(err, registry.ErrNotFound) {
				a.log.Warn("metadata: read database after its announcement", "key", node, "err", err)
			}
			return
		}
	}
	var keys []string
	for key := range a.mirror {
		if registry.IsUnder(key, node) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		a.route(ctx, d, registry.Event{Type: registry.EventPut, KV: a.mirror[key]}, false)
	}
}

// Vendor codes of CheckDataSourceState's refusals, ShardingSphere's.
const (
	CodeInvalidStorageUnitStatus = 10120 // InvalidStorageUnitStatusException
	CodeMissingRule              = 10202 // MissingRequiredRuleException
	CodeReadDataSourceNotFound   = 20203 // ReadwriteSplittingActualDataSourceNotFoundException
)

// CheckDataSourceState makes the checks of ShardingSphere's ALTER
// READWRITE_SPLITTING RULE group ENABLE|DISABLE unit FROM db
// (AlterReadwriteSplittingStorageUnitStatusExecutor) against snap, with
// its messages: the database exists, it has a readwrite_splitting rule,
// the rule has the group (matched ignoring case), unit is one of the
// group's read data sources, and the data source is disabled (enable) or
// not (disable). It returns the data source with the group's configured
// name, or an *sqlerr.Error with ShardingSphere's code and SQL state, of
// kind sqlerr.NotFound when what the change names does not exist (an
// unknown database wraps ErrNoDatabase, with no code) and sqlerr.Conflict
// when the data source already has the state.
func CheckDataSourceState(snap *Snapshot, db, group, unit string, enable bool) (QualifiedDataSource, error) {
	d := snap.Databases[db]
	if d == nil {
		return QualifiedDataSource{}, &sqlerr.Error{SQLState: "44000", Kind: sqlerr.NotFound, Message: fmt.Sprintf("Unknown database '%s'.", db), Err: ErrNoDatabase}
	}
	rule, ok := d.Rules["readwrite_splitting"]
	if !ok {
		return QualifiedDataSource{}, sqlerr.Unsupported(sqlerr.NotFound,
			"The current database has no `class org.apache.shardingsphere.readwritesplitting.rule.ReadwriteSplittingRule` rules")
	}
	name, reads, found := readwriteGroup(rule.Content, group)
	if !found {
		return QualifiedDataSource{}, &sqlerr.Error{Code: CodeMissingRule, SQLState: "42S02", Kind: sqlerr.NotFound,
			Message: fmt.Sprintf("Readwrite-splitting rule '%s' do not exist in database '%s'.", group, db)}
	}
	if !slices.Contains(reads, unit) {
		return QualifiedDataSource{}, &sqlerr.Error{Code: CodeReadDataSourceNotFound, SQLState: "44000", Kind: sqlerr.NotFound,
			Message: fmt.Sprintf("Can not find readwrite-splitting READ data source '%s' in database.data_source_rule: '%s'.'%s'.", unit, db, name)}
	}
	q := QualifiedDataSource{Database: db, Group: name, Unit: unit}
	disabled := snap.DataSourceStates[q] == StateDisabled
	switch {
	case enable && !disabled:
		return q, &sqlerr.Error{Code: CodeInvalidStorageUnitStatus, SQLState: "44000", Kind: sqlerr.Conflict, Message: "Invalid storage unit status, error message is: storage unit is not disabled."}
	case !enable && disabled:
		return q, &sqlerr.Error{Code: CodeInvalidStorageUnitStatus, SQLState: "44000", Kind: sqlerr.Conflict, Message: "Invalid storage unit status, error message is: storage unit is already disabled."}
	}
	return q, nil
}

// readwriteGroup finds the readwrite-splitting data source group named
// group (ignoring case) in a readwrite_splitting rule's content
// (dataSourceGroups; dataSources before 5.4) and returns its configured
// name and read data source names.
func readwriteGroup(content map[string]any, group string) (name string, reads []string, found bool) {
	for _, field := range []string{"dataSourceGroups", "dataSources"} {
		groups := stringMap(content[field])
		names := slices.Sorted(maps.Keys(groups))
		if i := slices.Index(names, group); i > 0 {
			names[0], names[i] = names[i], names[0] // an exact match first
		}
		for _, k := range names {
			v := groups[k]
			if !strings.EqualFold(k, group) {
				continue
			}
			list, _ := stringMap(v)["readDataSourceNames"].([]any)
			for _, e := range list {
				reads = append(reads, fmt.Sprint(e))
			}
			return k, reads, true
		}
	}
	return "", nil, false
}

// stringMap returns v as a map with string keys (YAML decodes maps with
// other keys to map[any]any); nil when v is no map.
func stringMap(v any) map[string]any {
	switch m := v.(type) {
	case map[string]any:
		return m
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, e := range m {
			out[fmt.Sprint(k)] = e
		}
		return out
	}
	return nil
}

// SetDataSourceState writes q's state (StateEnabled or StateDisabled) to
// /nodes/qualified_data_sources/{db}.{group}.{unit} exactly as
// ShardingSphere's QualifiedDataSourceStatePersistService does (a
// persistent "state: ..." node), for every node, ShardingSphere's
// included, to apply. Make CheckDataSourceState's checks first. A name
// that would not read back as q (it contains "." or "/") is refused with
// registry.ErrBadKey before any write. ctx bounds the write.
func SetDataSourceState(ctx context.Context, repo registry.Repository, q QualifiedDataSource, state string) error {
	if state != StateEnabled && state != StateDisabled {
		return fmt.Errorf("data source state %q is neither %s nor %s", state, StateEnabled, StateDisabled)
	}
	key, err := paths.QualifiedDataSource(q.Database, q.Group, q.Unit)
	if err != nil {
		return err
	}
	_, err = repo.Put(ctx, key, EncodeDataSourceState(state))
	return err
}

// ReadwriteGroup is a readwrite-splitting data source group of a database
// rule: its name and read data sources.
type ReadwriteGroup struct {
	Name  string
	Reads []string
}

// ReadwriteGroups returns db's readwrite-splitting groups sorted by name
// (none without a readwrite_splitting rule).
func ReadwriteGroups(db *Database) []ReadwriteGroup {
	rule, ok := db.Rules["readwrite_splitting"]
	if !ok {
		return nil
	}
	var out []ReadwriteGroup
	for _, field := range []string{"dataSourceGroups", "dataSources"} {
		groups := stringMap(rule.Content[field])
		for _, name := range slices.Sorted(maps.Keys(groups)) {
			g := ReadwriteGroup{Name: name}
			list, _ := stringMap(groups[name])["readDataSourceNames"].([]any)
			for _, e := range list {
				g.Reads = append(g.Reads, fmt.Sprint(e))
			}
			out = append(out, g)
		}
	}
	return out
}

// DataSourceStateRow is a read data source of a readwrite-splitting group
// and its state (ShardingSphere's SHOW STATUS FROM READWRITE_SPLITTING
// RULES), as the API and CLI show it.
type DataSourceStateRow struct {
	Database    string `json:"database"`
	Group       string `json:"group"`
	StorageUnit string `json:"storageUnit"`
	State       string `json:"state"` // ENABLED or DISABLED
	// Configured is false for a state in the registry whose data source
	// no readwrite-splitting rule of the database names.
	Configured bool `json:"configured"`
}

// DataSourceStateRows lists every read data source of every
// readwrite-splitting group in snap with its state (ENABLED unless the
// registry says otherwise), then the registry's states of data sources no
// rule names.
func DataSourceStateRows(snap *Snapshot) []DataSourceStateRow {
	out := []DataSourceStateRow{}
	seen := map[QualifiedDataSource]bool{}
	for _, db := range slices.Sorted(maps.Keys(snap.Databases)) {
		for _, g := range ReadwriteGroups(snap.Databases[db]) {
			for _, unit := range g.Reads {
				q := QualifiedDataSource{Database: db, Group: g.Name, Unit: unit}
				seen[q] = true
				state := cmp.Or(snap.DataSourceStates[q], StateEnabled)
				out = append(out, DataSourceStateRow{db, g.Name, unit, state, true})
			}
		}
	}
	var extra []DataSourceStateRow
	for q, state := range snap.DataSourceStates {
		if !seen[q] {
			extra = append(extra, DataSourceStateRow{q.Database, q.Group, q.Unit, state, false})
		}
	}
	slices.SortFunc(extra, func(a, b DataSourceStateRow) int {
		return cmp.Or(cmp.Compare(a.Database, b.Database), cmp.Compare(a.Group, b.Group), cmp.Compare(a.StorageUnit, b.StorageUnit))
	})
	return append(out, extra...)
}
