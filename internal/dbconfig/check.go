package dbconfig

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// The algorithm types ShardingSphere ships, by SPI (upper case): every
// sharding algorithm, those an auto table may use, key generators and
// sharding auditors, mask and encrypt algorithms. Read-only.
var (
	ShardingAlgorithmTypes = []string{"INLINE", "MOD", "HASH_MOD", "VOLUME_RANGE", "BOUNDARY_RANGE", "AUTO_INTERVAL", "INTERVAL", "CLASS_BASED", "COMPLEX_INLINE", "HINT_INLINE", "COSID_MOD", "COSID_INTERVAL", "COSID_INTERVAL_SNOWFLAKE"}
	AutoAlgorithmTypes     = []string{"MOD", "HASH_MOD", "VOLUME_RANGE", "BOUNDARY_RANGE", "AUTO_INTERVAL", "CLASS_BASED", "COSID_MOD", "COSID_INTERVAL", "COSID_INTERVAL_SNOWFLAKE"}
	KeyGeneratorTypes      = []string{"SNOWFLAKE", "UUID", "COSID", "COSID_SNOWFLAKE", "NANOID"}
	AuditorTypes           = []string{"DML_SHARDING_CONDITIONS"}
	MaskAlgorithmTypes     = MaskAlgorithms.Types()
	EncryptAlgorithmTypes  = EncryptAlgorithms.Types()
)

// checkRules checks db's rules as ShardingSphere's import checkers do
// before anything is written: every data source a rule names is a storage
// unit of db (or a readwrite-splitting or shadow data source the rules
// define), every algorithm a strategy or column names is defined, every
// algorithm's type exists, and every mask and encrypt algorithm's props are
// ones its upstream init accepts. It returns every problem, each an
// *sqlerr.Error.
func checkRules(db config.Database) []*sqlerr.Error {
	sources := map[string]bool{}
	for name := range db.DataSources {
		sources[name] = true
	}
	// Logical data sources other rules define.
	for _, r := range db.Rules {
		switch r.Type {
		case "readwrite_splitting":
			for name := range mapOf(r.Content["dataSourceGroups"]) {
				sources[name] = true
			}
			for name := range mapOf(r.Content["dataSources"]) {
				sources[name] = true
			}
		case "shadow":
			for name := range mapOf(r.Content["dataSources"]) {
				sources[name] = true
			}
		}
	}
	var errs []*sqlerr.Error
	missing := func(names []string) {
		var absent []string
		seen := map[string]bool{}
		for _, n := range names {
			if !sources[n] && !seen[n] {
				seen[n] = true
				absent = append(absent, n)
			}
		}
		if len(absent) > 0 {
			errs = append(errs, &sqlerr.Error{Code: 10102, SQLState: "44000", Message: fmt.Sprintf("Storage units '[%s]' do not exist in database '%s'.", strings.Join(absent, ", "), db.Name)})
		}
	}
	for _, r := range db.Rules {
		switch r.Type {
		case "sharding":
			errs = append(errs, checkSharding(db.Name, r.Content, missing)...)
		case "readwrite_splitting":
			for _, g := range mapOf(r.Content["dataSourceGroups"]) {
				gm := mapOf(g)
				var names []string
				if w, ok := gm["writeDataSourceName"].(string); ok {
					names = append(names, w)
				}
				for _, rd := range listOf(gm["readDataSourceNames"]) {
					names = append(names, fmt.Sprint(rd))
				}
				missing(names)
			}
		case "mask":
			errs = append(errs, checkAlgorithms(db.Name, "mask", mapOf(r.Content["maskAlgorithms"]), nil, MaskAlgorithms)...)
			errs = append(errs, checkColumnAlgorithms(db.Name, r.Content, "maskAlgorithms", []columnAlgorithm{{"Mask", "maskAlgorithm"}})...)
		case "encrypt":
			errs = append(errs, checkAlgorithms(db.Name, "encrypt", mapOf(r.Content["encryptors"]), nil, EncryptAlgorithms)...)
			errs = append(errs, checkColumnAlgorithms(db.Name, r.Content, "encryptors", []columnAlgorithm{
				{"Standard encrypt", "cipher.encryptorName"}, {"Assist query encrypt", "assistedQuery.encryptorName"}, {"Like query encrypt", "likeQuery.encryptorName"}})...)
		case "broadcast", "single", "shadow":
		}
	}
	return errs
}

// MaxAlgorithmProps is the most props one algorithm (sharding, key
// generator, auditor, mask, encrypt) may have; upstream's take a handful.
const MaxAlgorithmProps = 1000

// checkAlgorithms checks the algorithm definitions defs ({name: {type,
// props}}) of kind: each has at most MaxAlgorithmProps props (10200), a
// type (10401), one of known (10404; known nil accepts any, as for the
// mask and encrypt algorithms, which upstream's plugins add to), whose
// props its upstream init accepts as family checks
// them (10400, the message naming the algorithm; a type family does not
// have is not checked).
func checkAlgorithms(dbName, kind string, defs map[string]any, known []string, family AlgorithmFamily) []*sqlerr.Error {
	var errs []*sqlerr.Error
	for _, name := range sortedNames(defs) {
		def := mapOf(defs[name])
		if n := len(mapOf(def["props"])); n > MaxAlgorithmProps {
			errs = append(errs, InvalidRule(kind, name, fmt.Sprintf("the algorithm has %d props, more than the %d one algorithm may have", n, MaxAlgorithmProps)))
			continue
		}
		typ, _ := def["type"].(string)
		if typ == "" {
			errs = append(errs, &sqlerr.Error{Code: 10401, SQLState: "42S02", Message: fmt.Sprintf("'%s' algorithm on database.%s is required.", kind, name)})
			continue
		}
		if known != nil && !slices.Contains(known, strings.ToUpper(typ)) {
			errs = append(errs, &sqlerr.Error{Code: 10404, SQLState: "44000", Message: fmt.Sprintf("Invalid %s algorithm configuration '%s': there is no algorithm of type '%s' (known: %s).", kind, name, typ, strings.Join(known, ", "))})
			continue
		}
		if err := family.Check(typ, mapOf(def["props"])); err != nil {
			err.Message = fmt.Sprintf("%s algorithm '%s' of database '%s': %s", kind, name, dbName, err.Message)
			errs = append(errs, err)
		}
	}
	return errs
}

// columnAlgorithm is a field of a mask or encrypt column that names an
// algorithm ("cipher.encryptorName": field encryptorName of the column's
// cipher), and the algorithm's kind as upstream's checker names it.
type columnAlgorithm struct{ kind, field string }

// checkColumnAlgorithms checks that every algorithm the columns of the
// tables of rule content c name (fields) is defined in section, as
// upstream's MaskRuleConfigurationChecker and
// EncryptRuleConfigurationChecker do (UnregisteredAlgorithmException,
// 10402).
func checkColumnAlgorithms(dbName string, c map[string]any, section string, fields []columnAlgorithm) []*sqlerr.Error {
	var errs []*sqlerr.Error
	algorithms := mapOf(c[section])
	tables := mapOf(c["tables"])
	for _, table := range sortedNames(tables) {
		columns := mapOf(mapOf(tables[table])["columns"])
		for _, column := range sortedNames(columns) {
			for _, f := range fields {
				v := columns[column]
				for _, part := range strings.Split(f.field, ".") {
					v = mapOf(v)[part]
				}
				name, _ := v.(string)
				if _, ok := algorithms[name]; name != "" && !ok {
					errs = append(errs, &sqlerr.Error{Code: 10402, SQLState: "42S02", Message: fmt.Sprintf("'%s' algorithm '%s' on %s.%s.%s is unregistered.", f.kind, name, dbName, table, column)})
				}
			}
		}
	}
	return errs
}

func checkSharding(dbName string, c map[string]any, missing func([]string)) []*sqlerr.Error {
	var errs []*sqlerr.Error
	algorithms := mapOf(c["shardingAlgorithms"])
	generators := mapOf(c["keyGenerators"])
	auditors := mapOf(c["auditors"])
	errs = append(errs, checkAlgorithms(dbName, "sharding", algorithms, ShardingAlgorithmTypes, nil)...)
	errs = append(errs, checkAlgorithms(dbName, "key generate", generators, KeyGeneratorTypes, nil)...)
	errs = append(errs, checkAlgorithms(dbName, "sharding audit", auditors, AuditorTypes, nil)...)
	strategy := func(where string, s any) {
		for _, kind := range []string{"standard", "complex", "hint"} {
			name, _ := mapOf(mapOf(s)[kind])["shardingAlgorithmName"].(string)
			if name != "" {
				if _, ok := algorithms[name]; !ok {
					errs = append(errs, &sqlerr.Error{Code: 10402, SQLState: "42S02", Message: fmt.Sprintf("'sharding' algorithm '%s' on %s.%s is unregistered.", name, dbName, where)})
				}
			}
		}
	}
	generator := func(where string, s any) {
		if name, _ := mapOf(s)["keyGeneratorName"].(string); name != "" {
			if _, ok := generators[name]; !ok {
				errs = append(errs, &sqlerr.Error{Code: 10402, SQLState: "42S02", Message: fmt.Sprintf("'key generate' algorithm '%s' on %s.%s is unregistered.", name, dbName, where)})
			}
		}
	}
	// total is the names the rule's expressions stand for, counted before
	// any is built (inline.MaxRuleNames).
	total := 0
	count := func(table, what, expr string) bool {
		n, err := inline.Count(expr, inline.MaxNames)
		if errors.Is(err, inline.ErrTooMany) {
			errs = append(errs, TooManyNames("sharding table", table, what, expr, err))
			return false
		}
		if total += n; total > inline.MaxRuleNames {
			errs = append(errs, InvalidRule("sharding", dbName, fmt.Sprintf("its tables' data nodes and data sources stand for more than %d names, the most one rule may", inline.MaxRuleNames)))
			return false
		}
		return err == nil
	}
	tables := mapOf(c["tables"])
	for _, name := range sortedNames(tables) {
		t := mapOf(tables[name])
		if nodes, _ := t["actualDataNodes"].(string); nodes != "" && count(name, "data nodes", nodes) {
			ds, _ := DataSourcesOfNodes(nodes)
			missing(ds)
		}
		strategy(name, t["databaseStrategy"])
		strategy(name, t["tableStrategy"])
		generator(name, t["keyGenerateStrategy"])
	}
	auto := mapOf(c["autoTables"])
	for _, name := range sortedNames(auto) {
		t := mapOf(auto[name])
		if ds, _ := t["actualDataSources"].(string); ds != "" && count(name, "storage units", ds) {
			names, _ := inline.Expand(ds, inline.MaxNames)
			missing(names)
		}
		strategy(name, t["shardingStrategy"])
		generator(name, t["keyGenerateStrategy"])
	}
	strategies := mapOf(c["keyGenerateStrategies"]) // 5.5.4's rule-level strategies
	for _, name := range sortedNames(strategies) {
		generator(name, strategies[name])
	}
	strategy("default", c["defaultDatabaseStrategy"])
	strategy("default", c["defaultTableStrategy"])
	generator("default", c["defaultKeyGenerateStrategy"])
	return errs
}

// DataSourcesOfNodes returns the data source names of an actualDataNodes
// expression ("ds_${0..1}.t_order_${0..1}, ds_2.t_x"), each once, in the
// order they first appear: the data source parts of its nodes expanded
// together (inline.Expand, at most inline.MaxNames names). Parts it cannot
// expand (any other Groovy) are left out, nothing being claimed about
// them; the error is then inline.ErrSyntax, or inline.ErrTooMany when
// they stand for too many names and none is returned.
func DataSourcesOfNodes(nodes string) ([]string, error) {
	var parts []string
	seenPart := map[string]bool{}
	for _, node := range inline.Split(nodes) {
		node = strings.TrimSpace(node)
		if i := inline.TopDot(node); i >= 0 {
			node = node[:i]
		}
		if !seenPart[node] { // ds_${0..1}.t_a, ds_${0..1}.t_b: expanded once
			seenPart[node] = true
			parts = append(parts, node)
		}
	}
	var out []string
	var first error
	seen := map[string]bool{}
	total := 0
	for _, part := range parts {
		names, err := inline.Expand(part, inline.MaxNames-total)
		if errors.Is(err, inline.ErrTooMany) {
			return nil, err
		}
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		total += len(names)
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out, first
}

// TooManyNames is the refusal (InvalidRule, 10200) of an expression of
// rule name that stands for more names than the bound err (from
// inline.Count or inline.Expand) names; what is "data nodes" or "storage
// units". Only the first 64 bytes of expr are shown.
func TooManyNames(ruleType, name, what, expr string, err error) *sqlerr.Error {
	if len(expr) > 64 {
		expr = expr[:64] + "..."
	}
	return InvalidRule(ruleType, name, fmt.Sprintf("%s '%s' are refused: %v (the bounds: %d names for one expression, %d for one statement or one rule)", what, expr, err, inline.MaxNames, inline.MaxRuleNames))
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func listOf(v any) []any {
	l, _ := v.([]any)
	return l
}

func sortedNames(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
