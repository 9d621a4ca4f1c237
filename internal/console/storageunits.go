package console

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rule/single"
)

// SHOW STORAGE UNITS.

// storageUnitColumns are ShardingSphere's SHOW STORAGE UNITS columns.
var storageUnitColumns = []Column{
	{Name: "name"}, {Name: "type"}, {Name: "host"}, {Name: "port", Type: Int64}, {Name: "db"},
	{Name: "connection_timeout_milliseconds", Type: Int64}, {Name: "idle_timeout_milliseconds", Type: Int64},
	{Name: "max_lifetime_milliseconds", Type: Int64}, {Name: "max_pool_size", Type: Int64}, {Name: "min_pool_size", Type: Int64},
	{Name: "read_only"}, {Name: "other_attributes"},
}

// database returns the logical database a statement names (FROM db) or the
// session's, with MySQL's errors for none and for an unknown one.
func (e *Engine) database(s *Session, from string) (*metadata.Database, error) {
	name := from
	if name == "" {
		name = s.Database
	}
	if name == "" {
		return nil, noDatabaseSelected()
	}
	db := e.d.Metadata.Current().Databases[name]
	if db == nil {
		return nil, unknownDatabase(s, name)
	}
	return db, nil
}

// showStorageUnits lists the storage units of a database, sorted by name,
// with the host, port and database of their URL, their pool settings and,
// as JSON in other_attributes, their other pool properties and the URL's
// query properties. WHERE USAGE_COUNT = n keeps the units n rule types use;
// LIKE filters by name.
func (e *Engine) showStorageUnits(_ context.Context, s *Session, st *distsql.ShowStorageUnits) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(db.Units))
	for n := range db.Units {
		names = append(names, n)
	}
	slices.Sort(names)
	var usage map[string]int
	if st.UsageCount != nil {
		usage = unitUsage(db)
	}
	res := &Result{Columns: storageUnitColumns, Rows: [][]*string{}}
	for _, n := range names {
		if st.Like != nil && !matchLike(*st.Like, n) {
			continue
		}
		if st.UsageCount != nil && int64(usage[n]) != *st.UsageCount {
			continue
		}
		res.Rows = append(res.Rows, storageUnitRow(n, db.Units[n]))
	}
	return res, nil
}

// hikariDefaults are the pool attributes ShardingSphere reads back from
// every HikariCP pool and shows first in other_attributes, in its order,
// with HikariCP's defaults (a unit's own value replaces one).
var hikariDefaults = []struct {
	key   string
	value any
}{
	{"healthCheckProperties", map[string]any{}}, {"initializationFailTimeout", 1}, {"validationTimeout", 5000},
	{"keepaliveTime", 0}, {"leakDetectionThreshold", 0}, {"registerMbeans", false}, {"allowPoolSuspension", false},
	{"autoCommit", true}, {"isolateInternalQueries", false},
}

func storageUnitRow(name string, ds config.DataSource) []*string {
	typ, host, port, dbName, query := parseJDBC(ds.URL)
	other := map[string]any{}
	for k, v := range ds.CustomPoolProps {
		other[k] = v
	}
	for k, v := range ds.Extra {
		if _, ok := other[k]; !ok {
			other[k] = v
		}
	}
	delete(other, "dataSourceProperties")
	// upstream's order: the pool's attributes, the unit's other
	// properties (sorted), then the URL's query properties.
	var js strings.Builder
	add := func(k string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			return
		}
		if js.Len() > 0 {
			js.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		js.Write(kb)
		js.WriteByte(':')
		js.Write(b)
	}
	for _, d := range hikariDefaults {
		v, ok := other[d.key]
		if !ok {
			v = d.value
		}
		delete(other, d.key)
		add(d.key, v)
	}
	for _, k := range sortedKeys(other) {
		add(k, other[k])
	}
	if len(query) > 0 {
		add("queryProperties", query)
	}
	ms := func(d int64) *string { return str(strconv.FormatInt(d, 10)) }
	return []*string{
		str(name), str(typ), str(host), nullIfEmpty(port), str(dbName),
		ms(ds.ConnectionTimeout.Milliseconds()), ms(ds.IdleTimeout.Milliseconds()), ms(ds.MaxLifetime.Milliseconds()),
		str(strconv.Itoa(ds.MaxPoolSize)), str(strconv.Itoa(ds.MinPoolSize)), str(strconv.FormatBool(ds.ReadOnly)), str("{" + js.String() + "}"),
	}
}

// parseJDBC splits a JDBC URL into what SHOW STORAGE UNITS shows: the
// database type (ShardingSphere's names), host, port (the type's default
// when absent), database and query properties.
func parseJDBC(raw string) (typ, host, port, db string, query map[string]string) {
	rest, ok := strings.CutPrefix(raw, "jdbc:")
	if !ok {
		return "", "", "", "", nil
	}
	scheme, after, _ := strings.Cut(rest, ":")
	switch scheme {
	case "mysql":
		typ, port = "MySQL", "3306"
	case "mariadb":
		typ, port = "MariaDB", "3306"
	case "postgresql":
		typ, port = "PostgreSQL", "5432"
	case "sqlite":
		p, _, _ := strings.Cut(after, "?")
		return "SQLite", "", "", p, nil
	default:
		typ = scheme
	}
	u, err := url.Parse(scheme + ":" + after)
	if err != nil {
		return typ, "", "", "", nil
	}
	host = u.Hostname()
	if p := u.Port(); p != "" {
		port = p
	}
	db = strings.TrimPrefix(u.Path, "/")
	for k, v := range u.Query() {
		if query == nil {
			query = map[string]string{}
		}
		query[k] = strings.Join(v, ",")
	}
	return typ, host, port, db, query
}

// unitUsage counts, per storage unit, the rule types of db whose fields
// that name data sources name the unit (dbconfig.UnitsInUse, broadcast
// tables left out, the single rule's default data source in), with
// Groovy inline ranges (ds_${0..1}, ds_${['a','b']}) expanded.
func unitUsage(db *metadata.Database) map[string]int {
	usage := map[string]int{}
	inUse := dbconfig.UnitsInUse(db, false, true)
	if u, _ := db.Rules[single.Type].Content["defaultDataSource"].(string); u != "" && !slices.Contains(inUse[u], "SingleRule") {
		inUse[u] = append(inUse[u], "SingleRule")
	}
	for unit, ruleTypes := range inUse {
		if _, ok := db.Units[unit]; ok {
			usage[unit] = len(ruleTypes)
		}
	}
	return usage
}
