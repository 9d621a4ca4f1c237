package sharding

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// The algorithm types ShardingSphere ships, by SPI (upper case): every
// sharding algorithm, those an auto table may use, key generators and
// sharding auditors. Read-only.
var (
	AlgorithmTypes     = []string{"INLINE", "MOD", "HASH_MOD", "VOLUME_RANGE", "BOUNDARY_RANGE", "AUTO_INTERVAL", "INTERVAL", "CLASS_BASED", "COMPLEX_INLINE", "HINT_INLINE", "COSID_MOD", "COSID_INTERVAL", "COSID_INTERVAL_SNOWFLAKE"}
	AutoAlgorithmTypes = []string{"MOD", "HASH_MOD", "VOLUME_RANGE", "BOUNDARY_RANGE", "AUTO_INTERVAL", "CLASS_BASED", "COSID_MOD", "COSID_INTERVAL", "COSID_INTERVAL_SNOWFLAKE"}
	KeyGeneratorTypes  = []string{"SNOWFLAKE", "UUID", "COSID", "COSID_SNOWFLAKE", "NANOID"}
	AuditorTypes       = []string{"DML_SHARDING_CONDITIONS"}
)

// Check checks sharding rule content c of database d as upstream's
// ShardingRuleConfigurationChecker does: every data source its data nodes
// and auto tables name is one of d.Sources (10102), every algorithm, key
// generator and auditor a strategy names is defined (10402) and of a type
// upstream ships. The bounds on the names its expressions stand for
// (inline.MaxNames per expression, inline.MaxRuleNames per rule) are held
// when the change checked is this rule's or d.Changing is "" (an import),
// and then only on what c adds to d.Before; tables beyond the bounds are
// left out of the other checks. Once ctx is done it stops, between tables
// and inside their expansions, and returns ctx's error.
func (family) Check(ctx context.Context, d rule.Database, c map[string]any) ([]*sqlerr.Error, error) {
	bounded := d.Changing == "" || d.Changing == Type
	var old map[string]any
	if d.Changing == Type {
		old = d.Before
	}
	dbName := d.Name
	var errs []*sqlerr.Error
	missing := func(names []string) {
		var absent []string
		seen := map[string]bool{}
		for _, n := range names {
			if !d.Sources[n] && !seen[n] {
				seen[n] = true
				absent = append(absent, n)
			}
		}
		if len(absent) > 0 {
			errs = append(errs, rule.MissingStorageUnits(dbName, absent))
		}
	}
	algorithms := rule.Map(c["shardingAlgorithms"])
	generators := rule.Map(c["keyGenerators"])
	auditors := rule.Map(c["auditors"])
	errs = append(errs, rule.CheckAlgorithms(dbName, "sharding", algorithms, AlgorithmTypes, nil)...)
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
				errs = append(errs, tooManyNames("sharding table", table, what, expr, err))
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
			ds, _ := DataSourcesOfNodes(ctx, nodes, inline.MaxNames)
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

// tooManyNames is the refusal (InvalidRule, 10200) of an expression of
// rule name that stands for more names than the bound err (from
// inline.Count or inline.Expand) names; what is "data nodes" or "storage
// units". Only the first 64 bytes of expr are shown.
func tooManyNames(ruleType, name, what, expr string, err error) *sqlerr.Error {
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

// BeyondBounds describes how sharding rule content c passes the bounds
// on the names a rule's expressions may stand for (inline.MaxNames per
// expression, inline.MaxRuleNames per rule), "" when it does not or c is
// nil. Such a rule was written by another node (an upstream node has no
// bound): statements that add names to it are refused. It counts without
// building names, in time linear in the rule's size.
func BeyondBounds(c map[string]any) string {
	total, over := 0, 0
	eachExpression(c, func(_, _, expr string) {
		n, err := namesOf(expr)
		if errors.Is(err, inline.ErrTooMany) {
			over++
		}
		total += n
	})
	switch {
	case over > 0:
		return fmt.Sprintf("%d of its tables' expressions stand for more than %d names each, the most one expression may", over, inline.MaxNames)
	case total > inline.MaxRuleNames:
		return fmt.Sprintf("its tables' expressions stand for %d names, more than the %d one rule may", total, inline.MaxRuleNames)
	}
	return ""
}

// eachExpression calls f with each expression of sharding rule content c
// that names data sources: section "tables" and a table's
// actualDataNodes, or "autoTables" and its actualDataSources.
func eachExpression(c map[string]any, f func(section, table, expr string)) {
	for _, s := range []struct{ section, field string }{{"tables", "actualDataNodes"}, {"autoTables", "actualDataSources"}} {
		for table, t := range rule.Map(c[s.section]) {
			if expr, _ := rule.Map(t)[s.field].(string); expr != "" {
				f(s.section, table, expr)
			}
		}
	}
}

// namesOf is the number of names expr stands for, counted before any is
// built (inline.Count); beyond inline.MaxNames it is inline.MaxNames+1
// with inline.ErrTooMany, wrapped.
func namesOf(expr string) (int, error) {
	n, err := inline.Count(expr, inline.MaxNames)
	if errors.Is(err, inline.ErrTooMany) {
		return inline.MaxNames + 1, err
	}
	return n, err
}
