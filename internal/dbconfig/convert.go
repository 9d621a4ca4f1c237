package dbconfig

import (
	"fmt"
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
		switch r.Type {
		case "sharding":
			out = append(out, convertSharding(c, skip)...)
		default:
			if f, ok := families.ByType(r.Type); ok {
				if sts, ok := f.Convert(c); ok {
					out = append(out, sts...)
					continue
				}
			}
			skip("the " + strings.ToUpper(r.Type) + " rule (convert it with its own CREATE statements)")
		}
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

// convertStrategy is the inside of a strategy of the sharding rule c
// (standard, complex, hint or none), "" when it has none.
func convertStrategy(c, strategy map[string]any) string {
	algs := rule.Map(c["shardingAlgorithms"])
	for _, typ := range []string{"standard", "complex", "hint"} {
		s, ok := strategy[typ]
		if !ok {
			continue
		}
		m := rule.Map(s)
		out := "TYPE=" + rule.Quote(typ)
		switch typ {
		case "standard":
			out += ", SHARDING_COLUMN=" + rule.Text(m["shardingColumn"])
		case "complex":
			out += ", SHARDING_COLUMNS=" + rule.Text(m["shardingColumns"])
		}
		return out + ", SHARDING_ALGORITHM(" + rule.ConvertAlgorithm(algs, rule.Text(m["shardingAlgorithmName"])) + ")"
	}
	if _, ok := strategy["none"]; ok {
		return "TYPE='none'"
	}
	return ""
}

// convertTableOptions are a table's KEY_GENERATE_STRATEGY and
// AUDIT_STRATEGY, each with a leading ", ".
func convertTableOptions(c, t map[string]any) string {
	var s string
	if kg := rule.Map(t["keyGenerateStrategy"]); kg != nil {
		s += ", KEY_GENERATE_STRATEGY(COLUMN=" + rule.Text(kg["column"]) + ", " + rule.ConvertAlgorithm(rule.Map(c["keyGenerators"]), rule.Text(kg["keyGeneratorName"])) + ")"
	}
	if as := rule.Map(t["auditStrategy"]); as != nil {
		var types []string
		for _, n := range rule.List(as["auditorNames"]) {
			types = append(types, rule.ConvertAlgorithm(rule.Map(c["auditors"]), n))
		}
		s += ", AUDIT_STRATEGY(" + strings.Join(types, ", ") + ", ALLOW_HINT_DISABLE=" + strconv.FormatBool(rule.Text(as["allowHintDisable"]) == "true") + ")"
	}
	return s
}

func convertSharding(c map[string]any, skip func(string)) []string {
	var out []string
	tables := rule.Map(c["tables"])
	for _, n := range slices.Sorted(maps.Keys(tables)) {
		t := rule.Map(tables[n])
		s := n + " (DATANODES(" + rule.Quote(rule.Text(t["actualDataNodes"])) + ")"
		if ds := convertStrategy(c, rule.Map(t["databaseStrategy"])); ds != "" {
			s += ", DATABASE_STRATEGY(" + ds + ")"
		}
		if ts := convertStrategy(c, rule.Map(t["tableStrategy"])); ts != "" {
			s += ", TABLE_STRATEGY(" + ts + ")"
		}
		out = append(out, "CREATE SHARDING TABLE RULE "+s+convertTableOptions(c, t)+");")
	}
	auto := rule.Map(c["autoTables"])
	for _, n := range slices.Sorted(maps.Keys(auto)) {
		t := rule.Map(auto[n])
		st := rule.Map(rule.Map(t["shardingStrategy"])["standard"])
		s := n + " (STORAGE_UNITS(" + rule.Text(t["actualDataSources"]) + "), SHARDING_COLUMN=" + rule.Text(st["shardingColumn"]) +
			", " + rule.ConvertAlgorithm(rule.Map(c["shardingAlgorithms"]), rule.Text(st["shardingAlgorithmName"]))
		out = append(out, "CREATE SHARDING TABLE RULE "+s+convertTableOptions(c, t)+");")
	}
	for i, b := range rule.List(c["bindingTables"]) {
		name, list, ok := strings.Cut(b, ":")
		if !ok {
			name, list = fmt.Sprintf("ref_%d", i), b
		}
		out = append(out, "CREATE SHARDING TABLE REFERENCE RULE "+name+" ("+strings.Join(strings.Split(list, ","), ", ")+");")
	}
	for _, d := range []struct{ field, kind string }{{"defaultDatabaseStrategy", "DATABASE"}, {"defaultTableStrategy", "TABLE"}} {
		if s := convertStrategy(c, rule.Map(c[d.field])); s != "" {
			out = append(out, "CREATE DEFAULT SHARDING "+d.kind+" STRATEGY ("+s+");")
		}
	}
	for _, f := range []string{"defaultKeyGenerateStrategy", "defaultAuditStrategy", "defaultShardingColumn", "shardingCache"} {
		if c[f] != nil {
			skip("the sharding rule's " + f + " (no DistSQL statement sets it)")
		}
	}
	return out
}
