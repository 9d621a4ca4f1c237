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
//
// When the change checked is this rule's, an entry of c that is d.Before's
// own (rule.Same: the change left it alone) is not checked again, since it
// was when it was written (or an upstream node wrote it) against the same
// units; its references are, when the change removed an algorithm or key
// generator that one of them may still name (every one of them where
// d.BeforeUses is nil, those that name it by that count otherwise: then
// all of them, to name each in the errors). So a change of one table of
// thousands checks that table, and counts the others' names only when
// it adds names.
func (family) Check(ctx context.Context, d rule.Database, c map[string]any) ([]*sqlerr.Error, error) {
	bounded := d.Changing == "" || d.Changing == Type
	var old map[string]any
	if d.Changing == Type {
		old = d.Before
	}
	// touched are the names of section's entries the change added,
	// replaced or removed: from d.Changed where the caller compared the
	// entries (every section the check reads is a named field), else by
	// comparing c's and old's.
	touched := func(section string) []string {
		var names []string
		if d.Changed != nil {
			for k := range d.Changed {
				if k[0] == section {
					names = append(names, k[1])
				}
			}
			return names
		}
		m, om := rule.Map(c[section]), rule.Map(old[section])
		for k, v := range m {
			if ov, ok := om[k]; !ok || !rule.Same(ov, v) {
				names = append(names, k)
			}
		}
		for k := range om {
			if _, ok := m[k]; !ok {
				names = append(names, k)
			}
		}
		return names
	}
	kept := func(section, name string, v any) bool {
		if old == nil {
			return false
		}
		if d.Changed != nil {
			_, ok := rule.Map(old[section])[name]
			return ok && !d.Changed[[2]string{section, name}]
		}
		ov, ok := rule.Map(old[section])[name]
		return ok && rule.Same(ov, v)
	}
	// changedOf is the entries of section (m, in c) that are not kept.
	changedOf := func(section string, m map[string]any) map[string]any {
		if old == nil {
			return m
		}
		out := map[string]any{}
		for _, k := range touched(section) {
			if v, ok := m[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	// lost reports whether the change removed an entry of section (c's m).
	lost := func(section string, m map[string]any) bool {
		for _, k := range touched(section) {
			if _, ok := m[k]; !ok {
				return true
			}
		}
		return false
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
	errs = append(errs, rule.CheckAlgorithms(dbName, "sharding", changedOf("shardingAlgorithms", algorithms), AlgorithmTypes, nil)...)
	errs = append(errs, rule.CheckAlgorithms(dbName, "key generate", changedOf("keyGenerators", generators), KeyGeneratorTypes, nil)...)
	errs = append(errs, rule.CheckAlgorithms(dbName, "sharding audit", changedOf("auditors", auditors), AuditorTypes, nil)...)
	lostAlgorithms, lostGenerators := lost("shardingAlgorithms", algorithms), lost("keyGenerators", generators)
	if (lostAlgorithms || lostGenerators) && old != nil && d.BeforeUses != nil {
		// Whether an entry the change left alone refers to what it
		// removed is in the count of old's references, corrected by the
		// entries the change touched: only then is every entry checked
		// again (and so named in the errors, as a full check names them).
		refs := &references{before: old, uses: d.BeforeUses, touched: map[[2]string]bool{}}
		for _, s := range referringSections {
			for _, name := range touched(s) {
				refs.touch(s, name)
			}
		}
		stillUsed := func(section string, m map[string]any) bool {
			for _, name := range touched(section) {
				if _, kept := m[name]; !kept && refs.used(c, nameKinds[section], name) {
					return true
				}
			}
			return false
		}
		lostAlgorithms = lostAlgorithms && stillUsed("shardingAlgorithms", algorithms)
		lostGenerators = lostGenerators && stillUsed("keyGenerators", generators)
	}
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
	// grown is what the changed tables' expressions stand for (namesOf),
	// less what they stood for in old: the rule's names grow by it.
	// built bounds the names built for the missing units check.
	grown, built := 0, 0
	count := func(section, table, what, expr string) bool {
		n, err := namesOf(expr)
		grown += n
		built += n
		if errors.Is(err, inline.ErrTooMany) {
			if bounded && expressionOf(old, section, table) != expr {
				errs = append(errs, tooManyNames("sharding table", table, what, expr, err))
			}
			return false
		}
		return err == nil && built <= inline.MaxRuleNames // past the bound, no more names are built
	}
	for _, s := range []struct{ section, field string }{{"tables", "actualDataNodes"}, {"autoTables", "actualDataSources"}} {
		if old == nil {
			break // nothing removed
		}
		for _, table := range touched(s.section) {
			v, had := rule.Map(old[s.section])[table]
			if _, ok := rule.Map(c[s.section])[table]; had && !ok {
				if expr, _ := rule.Map(v)[s.field].(string); expr != "" {
					n, _ := namesOf(expr)
					grown -= n // a table the change removed
				}
			}
		}
	}
	// toCheck is section's entries (m) to look at, in name order: all of
	// them, or only those the change made when no algorithm or key
	// generator went (the others' references still hold).
	toCheck := func(section string, m map[string]any) []string {
		if old == nil || lostAlgorithms || lostGenerators {
			return sortedNames(m)
		}
		return sortedNames(changedOf(section, m))
	}
	// A table's expression names data sources (tables: data nodes, auto
	// tables: storage units) and its strategies name algorithms.
	for _, s := range []struct {
		section, what string
		strategies    []string
		sources       func(ctx context.Context, expr string) []string
	}{
		{"tables", "data nodes", []string{"databaseStrategy", "tableStrategy"}, func(ctx context.Context, expr string) []string {
			ds, _ := DataSourcesOfNodes(ctx, expr, inline.MaxNames)
			return ds
		}},
		{"autoTables", "storage units", []string{"shardingStrategy"}, func(ctx context.Context, expr string) []string {
			names, _ := inline.ExpandContext(ctx, expr, inline.MaxNames)
			return names
		}},
	} {
		m := rule.Map(c[s.section])
		for _, name := range toCheck(s.section, m) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			t := rule.Map(m[name])
			left := kept(s.section, name, m[name])
			if !left {
				if expr := expressionOf(old, s.section, name); expr != "" {
					n, _ := namesOf(expr)
					grown -= n // what the table stood for before the change
				}
				if expr := expressionOf(c, s.section, name); expr != "" && count(s.section, name, s.what, expr) {
					sources := s.sources(ctx, expr)
					if err := ctx.Err(); err != nil {
						return nil, err
					}
					missing(sources)
				}
			}
			if !left || lostAlgorithms {
				for _, f := range s.strategies {
					strategy(name, t[f])
				}
			}
			if !left || lostGenerators {
				generator(name, t["keyGenerateStrategy"])
			}
		}
	}
	strategies := rule.Map(c["keyGenerateStrategies"]) // 5.5.4's rule-level strategies
	for _, name := range toCheck("keyGenerateStrategies", strategies) {
		if lostGenerators || !kept("keyGenerateStrategies", name, strategies[name]) {
			generator(name, strategies[name])
		}
	}
	if bounded && grown > 0 {
		// The rule grows: what it stood for before, and so now, is counted.
		before := 0
		if d.BeforeNames != nil {
			before = *d.BeforeNames
		} else {
			before = TallyOf(old).Total()
		}
		if total := before + grown; total > inline.MaxRuleNames {
			errs = append(errs, rule.InvalidRule("sharding", dbName, fmt.Sprintf("its tables' data nodes and data sources stand for more than %d names, the most one rule may", inline.MaxRuleNames)))
		}
	}
	strategy("default", c["defaultDatabaseStrategy"])
	strategy("default", c["defaultTableStrategy"])
	generator("default", c["defaultKeyGenerateStrategy"])
	return errs, nil
}

// expressionOf is the expression that names data sources of table in
// section ("tables": actualDataNodes, "autoTables": actualDataSources) of
// sharding rule content c, "" when it has none.
func expressionOf(c map[string]any, section, table string) string {
	field := "actualDataNodes"
	if section == "autoTables" {
		field = "actualDataSources"
	}
	expr, _ := rule.Map(rule.Map(c[section])[table])[field].(string)
	return expr
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
	return boundsReason(total, over)
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
