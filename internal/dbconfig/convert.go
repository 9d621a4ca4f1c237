package dbconfig

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
)

// Convert is CONVERT YAML CONFIGURATION: the DistSQL that builds the
// database configuration data (a database-*.yaml file read from source)
// on an empty node: CREATE DATABASE and USE, REGISTER STORAGE UNIT with
// each unit's URL, user, password and pool properties, and the sharding
// (tables, auto tables, reference rules, default strategies), broadcast,
// single and readwrite-splitting rules, algorithms written inline as
// TYPE(NAME=..., PROPERTIES(...)). What has no DistSQL form here (other
// rule types, a default audit or key generate strategy) is named in a
// "-- not converted:" comment line, never dropped silently. A file that
// is not a database configuration is refused (30001).
func Convert(source string, data []byte) (string, error) {
	db, err := config.ParseDatabase(source, data)
	if err != nil {
		return "", unsupported("invalid database configuration: %v", err)
	}
	if db == nil || db.Name == "" {
		return "", unsupported("Property `databaseName` in converted config is required")
	}
	var out []string
	skip := func(what string) { out = append(out, "-- not converted: "+what) }
	out = append(out, "CREATE DATABASE "+db.Name+";", "USE "+db.Name+";")
	if len(db.DataSources) > 0 {
		var units []string
		for _, n := range slices.Sorted(maps.Keys(db.DataSources)) {
			units = append(units, convertUnit(n, db.DataSources[n]))
		}
		out = append(out, "REGISTER STORAGE UNIT "+strings.Join(units, ",\n")+";")
	}
	for _, r := range db.Rules {
		c := r.Content
		if f, ok := families.ByType(r.Type); ok {
			if sts, ok := f.Convert(c); ok {
				out = append(out, sts...)
				continue
			}
		}
		skip("the " + strings.ToUpper(r.Type) + " rule (convert it with its own CREATE statements)")
	}
	return strings.Join(out, "\n") + "\n", nil
}

func convertUnit(name string, ds config.DataSource) string {
	props := map[string]any{}
	for k, v := range ds.CustomPoolProps {
		props[k] = v
	}
	ms := func(k string, d int64) {
		if d > 0 {
			props[k] = strconv.FormatInt(d, 10)
		}
	}
	ms("connectionTimeoutMilliseconds", ds.ConnectionTimeout.Milliseconds())
	ms("idleTimeoutMilliseconds", ds.IdleTimeout.Milliseconds())
	ms("maxLifetimeMilliseconds", ds.MaxLifetime.Milliseconds())
	ms("maxPoolSize", int64(ds.MaxPoolSize))
	ms("minPoolSize", int64(ds.MinPoolSize))
	s := name + " (URL=" + rule.Quote(ds.URL) + ", USER=" + rule.Quote(ds.Username) + ", PASSWORD=" + rule.Quote(ds.Password)
	if p := rule.ConvertProps(props); p != "" {
		s += ", " + p
	}
	return s + ")"
}
