package dbconfig

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
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
	missing := func(rule string, names []string) {
		var absent []string
		for _, n := range names {
			if !sources[n] && !slices.Contains(absent, n) {
				absent = append(absent, n)
			}
		}
		if len(absent) > 0 {
			errs = append(errs, &sqlerr.Error{Code: 10102, SQLState: "44000", Message: fmt.Sprintf("Storage units '[%s]' do not exist in database '%s'.", strings.Join(absent, ", "), db.Name)})
			_ = rule
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
				missing("readwrite_splitting", names)
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

// checkAlgorithms checks the algorithm definitions defs ({name: {type,
// props}}) of kind: each has a type (10401), one of known (10404; known
// nil accepts any, as for the mask and encrypt algorithms, which upstream's
// plugins add to), whose props its upstream init accepts as family checks
// them (10400, the message naming the algorithm; a type family does not
// have is not checked).
func checkAlgorithms(dbName, kind string, defs map[string]any, known []string, family AlgorithmFamily) []*sqlerr.Error {
	var errs []*sqlerr.Error
	for _, name := range sortedNames(defs) {
		def := mapOf(defs[name])
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

func checkSharding(dbName string, c map[string]any, missing func(string, []string)) []*sqlerr.Error {
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
	tables := mapOf(c["tables"])
	for _, name := range sortedNames(tables) {
		t := mapOf(tables[name])
		if nodes, _ := t["actualDataNodes"].(string); nodes != "" {
			missing("sharding", dataSourcesOfNodes(nodes))
		}
		strategy(name, t["databaseStrategy"])
		strategy(name, t["tableStrategy"])
		generator(name, t["keyGenerateStrategy"])
	}
	auto := mapOf(c["autoTables"])
	for _, name := range sortedNames(auto) {
		t := mapOf(auto[name])
		if ds, _ := t["actualDataSources"].(string); ds != "" {
			var names []string
			for _, part := range splitTop(ds) {
				names = append(names, expand(strings.TrimSpace(part))...)
			}
			missing("sharding", names)
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

// dataSourcesOfNodes returns the data source names of an actualDataNodes
// expression ("ds_${0..1}.t_order_${0..1}, ds_2.t_x"), expanding the
// inline ranges and lists of the data source part. A part it cannot
// expand (any other Groovy) is left out: nothing is claimed about it.
func dataSourcesOfNodes(nodes string) []string {
	var out []string
	for _, node := range splitTop(nodes) {
		node = strings.TrimSpace(node)
		ds := node
		if i := topDot(node); i >= 0 {
			ds = node[:i]
		}
		out = append(out, expand(ds)...)
	}
	return out
}

// splitTop splits s at the commas outside ${...}.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// topDot is the index of the first '.' outside ${...}, or -1.
func topDot(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
		case '.':
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

var (
	inlineRe = regexp.MustCompile(`\$\{([^}]*)\}|\$->\{([^}]*)\}`)
	rangeRe  = regexp.MustCompile(`^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$`)
	listRe   = regexp.MustCompile(`^\s*\[(.*)\]\s*$`)
)

// expand evaluates the ${a..b} and ${['x', 'y']} parts of an inline
// expression into every name it stands for (bounded to 10,000 names). It
// returns nil for an expression it cannot evaluate.
func expand(expr string) []string {
	loc := inlineRe.FindStringSubmatchIndex(expr)
	if loc == nil {
		if strings.ContainsAny(expr, "${}") {
			return nil
		}
		return []string{expr}
	}
	body := expr[loc[2]:loc[3]]
	if loc[2] < 0 {
		body = expr[loc[4]:loc[5]]
	}
	var values []string
	if m := rangeRe.FindStringSubmatch(body); m != nil {
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		if b < a || b-a > 10000 {
			return nil
		}
		for i := a; i <= b; i++ {
			values = append(values, strconv.Itoa(i))
		}
	} else if m := listRe.FindStringSubmatch(body); m != nil {
		for _, v := range strings.Split(m[1], ",") {
			values = append(values, strings.Trim(strings.TrimSpace(v), `'"`))
		}
	} else {
		return nil
	}
	var out []string
	for _, v := range values {
		rest := expand(expr[loc[1]:])
		if rest == nil {
			return nil
		}
		for _, r := range rest {
			out = append(out, expr[:loc[0]]+v+r)
			if len(out) > 10000 {
				return nil
			}
		}
	}
	return out
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
