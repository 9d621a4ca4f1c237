package dbconfig

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rule/sharding"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// The algorithm types ShardingSphere ships, by SPI (upper case): every
// sharding algorithm, those an auto table may use, key generators and
// sharding auditors. Read-only.
var (
	ShardingAlgorithmTypes = []string{"INLINE", "MOD", "HASH_MOD", "VOLUME_RANGE", "BOUNDARY_RANGE", "AUTO_INTERVAL", "INTERVAL", "CLASS_BASED", "COMPLEX_INLINE", "HINT_INLINE", "COSID_MOD", "COSID_INTERVAL", "COSID_INTERVAL_SNOWFLAKE"}
	AutoAlgorithmTypes     = []string{"MOD", "HASH_MOD", "VOLUME_RANGE", "BOUNDARY_RANGE", "AUTO_INTERVAL", "CLASS_BASED", "COSID_MOD", "COSID_INTERVAL", "COSID_INTERVAL_SNOWFLAKE"}
	KeyGeneratorTypes      = []string{"SNOWFLAKE", "UUID", "COSID", "COSID_SNOWFLAKE", "NANOID"}
	AuditorTypes           = []string{"DML_SHARDING_CONDITIONS"}
)

// checkRules checks db's rules as ShardingSphere's import checkers do
// before anything is written: every data source a rule names is a storage
// unit of db (or a readwrite-splitting or shadow data source the rules
// define), every algorithm a strategy or column names is defined, every
// algorithm's type exists, and every mask and encrypt algorithm's props are
// ones its upstream init accepts. It returns every problem, each an
// *sqlerr.Error; or, once ctx is done (the statement killed or its client
// gone), ctx's error, the check stopping there.
func checkRules(ctx context.Context, db config.Database) ([]*sqlerr.Error, error) {
	return CheckChange(ctx, db, "", nil)
}

// CheckChange is what a rule change checks (as an import checks every
// rule, upstream's codes): the rules of db after a change of the rule of
// type changed of db, whose content was old before (nil for a new rule). The bounds on
// the names a rule's expressions stand for (inline.MaxNames per
// expression, inline.MaxRuleNames per rule) hold for what the change
// adds: the rules it leaves as they are, and the tables of the changed
// rule it leaves as they are, are not refused for passing them, since
// another node may have written them so (an upstream node has no bound);
// a change of another rule goes on, and a change that does not add names
// (a DROP) may shrink such a rule. Tables beyond the bounds are left out
// of the other checks. With changed "" every rule is checked as new.
// Once ctx is done it stops, between rules and tables and inside their
// expansions, and returns ctx's error.
func CheckChange(ctx context.Context, db config.Database, changed string, old map[string]any) ([]*sqlerr.Error, error) {
	d := familyDatabase(db)
	sources := d.Sources // units and the families' logical data sources
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
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := rule.CheckProps(r.Type, r.Content); err != nil {
			errs = append(errs, err)
			continue
		}
		if f, ok := families.ByType(r.Type); ok {
			errs = append(errs, f.Check(d, r.Content)...)
			continue
		}
		switch r.Type {
		case "sharding":
			bounded := changed == "" || changed == r.Type
			var before map[string]any
			if changed == r.Type {
				before = old
			}
			sharding, err := checkSharding(ctx, db.Name, r.Content, missing, bounded, before)
			if err != nil {
				return nil, err
			}
			errs = append(errs, sharding...)
		}
	}
	return errs, nil
}

// checkSharding checks sharding rule content c of database dbName, the
// bounds on its names only when bounded, and then only on what c adds to
// old, its content before (see CheckChange); it stops with ctx's error
// once ctx is done.
func checkSharding(ctx context.Context, dbName string, c map[string]any, missing func([]string), bounded bool, old map[string]any) ([]*sqlerr.Error, error) {
	var errs []*sqlerr.Error
	algorithms := rule.Map(c["shardingAlgorithms"])
	generators := rule.Map(c["keyGenerators"])
	auditors := rule.Map(c["auditors"])
	errs = append(errs, rule.CheckAlgorithms(dbName, "sharding", algorithms, ShardingAlgorithmTypes, nil)...)
	errs = append(errs, rule.CheckAlgorithms(dbName, "key generate", generators, KeyGeneratorTypes, nil)...)
	errs = append(errs, rule.CheckAlgorithms(dbName, "sharding audit", auditors, AuditorTypes, nil)...)
	strategy := func(where string, s any) {
		for _, kind := range []string{"standard", "complex", "hint"} {
			name, _ := rule.Map(rule.Map(s)[kind])["shardingAlgorithmName"].(string)
			if name != "" {
				if _, ok := algorithms[name]; !ok {
					errs = append(errs, &sqlerr.Error{Code: 10402, SQLState: "42S02", Message: fmt.Sprintf("'sharding' algorithm '%s' on %s.%s is unregistered.", name, dbName, where)})
				}
			}
		}
	}
	generator := func(where string, s any) {
		if name, _ := rule.Map(s)["keyGeneratorName"].(string); name != "" {
			if _, ok := generators[name]; !ok {
				errs = append(errs, &sqlerr.Error{Code: 10402, SQLState: "42S02", Message: fmt.Sprintf("'key generate' algorithm '%s' on %s.%s is unregistered.", name, dbName, where)})
			}
		}
	}
	// total is the names the rule's expressions stand for (namesOf,
	// against inline.MaxRuleNames); before is old's, and had the
	// expressions old had.
	total, before, had := 0, 0, map[string]bool{}
	eachExpression(old, func(section, table, expr string) {
		n, _ := namesOf(expr)
		before += n
		had[section+"/"+table+"\x00"+expr] = true
	})
	count := func(section, table, what, expr string) bool {
		n, err := namesOf(expr)
		total += n
		if errors.Is(err, inline.ErrTooMany) {
			if bounded && !had[section+"/"+table+"\x00"+expr] {
				errs = append(errs, TooManyNames("sharding table", table, what, expr, err))
			}
			return false
		}
		return err == nil && total <= inline.MaxRuleNames // past the bound, no more names are built
	}
	tables := rule.Map(c["tables"])
	for _, name := range sortedNames(tables) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t := rule.Map(tables[name])
		if nodes, _ := t["actualDataNodes"].(string); nodes != "" && count("tables", name, "data nodes", nodes) {
			ds, _ := sharding.DataSourcesOfNodes(ctx, nodes, inline.MaxNames)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			missing(ds)
		}
		strategy(name, t["databaseStrategy"])
		strategy(name, t["tableStrategy"])
		generator(name, t["keyGenerateStrategy"])
	}
	auto := rule.Map(c["autoTables"])
	for _, name := range sortedNames(auto) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t := rule.Map(auto[name])
		if ds, _ := t["actualDataSources"].(string); ds != "" && count("autoTables", name, "storage units", ds) {
			names, _ := inline.ExpandContext(ctx, ds, inline.MaxNames)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			missing(names)
		}
		strategy(name, t["shardingStrategy"])
		generator(name, t["keyGenerateStrategy"])
	}
	strategies := rule.Map(c["keyGenerateStrategies"]) // 5.5.4's rule-level strategies
	for _, name := range sortedNames(strategies) {
		generator(name, strategies[name])
	}
	if bounded && total > inline.MaxRuleNames && total > before {
		errs = append(errs, rule.InvalidRule("sharding", dbName, fmt.Sprintf("its tables' data nodes and data sources stand for more than %d names, the most one rule may", inline.MaxRuleNames)))
	}
	strategy("default", c["defaultDatabaseStrategy"])
	strategy("default", c["defaultTableStrategy"])
	generator("default", c["defaultKeyGenerateStrategy"])
	return errs, nil
}

// TooManyNames is the refusal (InvalidRule, 10200) of an expression of
// rule name that stands for more names than the bound err (from
// inline.Count or inline.Expand) names; what is "data nodes" or "storage
// units". Only the first 64 bytes of expr are shown.
func TooManyNames(ruleType, name, what, expr string, err error) *sqlerr.Error {
	if len(expr) > 64 {
		expr = expr[:64] + "..."
	}
	return rule.InvalidRule(ruleType, name, fmt.Sprintf("%s '%s' are refused: %v (the bounds: %d names for one expression, %d for one statement or one rule)", what, expr, err, inline.MaxNames, inline.MaxRuleNames))
}

func sortedNames(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// familyDatabase is db as the rule families' checks read it.
func familyDatabase(db config.Database) rule.Database {
	contents := make(map[string]map[string]any, len(db.Rules))
	for _, r := range db.Rules {
		contents[r.Type] = r.Content
	}
	return families.Database(db.Name, slices.Sorted(maps.Keys(db.DataSources)), contents)
}
