package rules

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// CREATE, ALTER and DROP READWRITE_SPLITTING RULE, as ShardingSphere's
// executors run them. A rule is a data source group {writeDataSourceName,
// readDataSourceNames, transactionalReadQueryStrategy, loadBalancerName}
// with its load balancer {type, props} named {rule}_{type} in lower case,
// as upstream's statement converter names it.

const readwriteType = "readwrite_splitting"

// readwriteKind is the rule's name in upstream's messages.
const readwriteKind = "Readwrite-splitting"

// readQueryLoadBalancers are upstream's ReadQueryLoadBalanceAlgorithm
// types.
var readQueryLoadBalancers = []string{"RANDOM", "ROUND_ROBIN", "WEIGHT"}

// transactionalReadQueryStrategies are upstream's
// TransactionalReadQueryStrategy values.
var transactionalReadQueryStrategies = []string{"PRIMARY", "FIXED", "DYNAMIC"}

// readwriteOf returns the groups and load balancers of readwrite-splitting
// rule content c as maps of their own, to change.
func readwriteOf(c map[string]any) (groups, balancers map[string]any) {
	groups, balancers = maps.Clone(ReadwriteGroups(c)), maps.Clone(rule.Map(c["loadBalancers"]))
	if groups == nil {
		groups = map[string]any{}
	}
	if balancers == nil {
		balancers = map[string]any{}
	}
	return groups, balancers
}

// readwriteContent is the rule with groups and the balancers they use (an
// unused one is dropped); no groups is no rule.
func readwriteContent(groups, balancers map[string]any) map[string]any {
	content := map[string]any{}
	if len(groups) == 0 {
		return content
	}
	used := map[string]any{}
	for _, g := range groups {
		if n := rule.Text(rule.Map(g)["loadBalancerName"]); n != "" && balancers[n] != nil {
			used[n] = balancers[n]
		}
	}
	content["dataSourceGroups"] = groups
	if len(used) > 0 {
		content["loadBalancers"] = used
	}
	return content
}

// checkReadwriteRules applies upstream's ReadwriteSplittingRuleStatementChecker
// to the rules of a CREATE or ALTER: storage units exist, write units are
// not shared between rules, read units are not repeated, a rule is not
// named like a unit, the load balancer and the strategy exist.
func checkReadwriteRules(d *metadata.Database, rules []distsql.ReadwriteSplittingRule) error {
	var missing []string
	seen := map[string]bool{}
	for _, r := range rules {
		for _, u := range append([]string{r.Write}, r.Reads...) {
			if _, ok := d.Units[u]; !ok && !seen[u] {
				seen[u] = true
				missing = append(missing, u)
			}
		}
	}
	if len(missing) > 0 {
		return rule.MissingStorageUnits(d.Name, missing)
	}
	invalid := func(name, msg string) error { return rule.InvalidRule(readwriteKind, name, msg) }
	writes := map[string]string{}
	for _, r := range rules {
		// The name becomes a registry path segment (the group's item and
		// its load balancer's): no '/', no '..'.
		if _, err := paths.RuleItem(d.Name, readwriteType, "data_source_groups", r.Name); err != nil {
			return invalid(r.Name, fmt.Sprintf("the name is not a valid registry node name: %v", err))
		}
		if r.HasLoadBal {
			if _, err := paths.RuleItem(d.Name, readwriteType, "load_balancers", strings.ToLower(r.Name+"_"+r.LoadType)); err != nil {
				return invalid(r.Name, fmt.Sprintf("the load balancer name is not a valid registry node name: %v", err))
			}
		}
		if _, ok := d.Units[r.Name]; ok {
			return invalid(r.Name, fmt.Sprintf("[%s] already exists in storage unit", r.Name))
		}
		if other, ok := writes[r.Write]; ok {
			return invalid(r.Name, fmt.Sprintf("Can not config duplicate write storage unit `%s` in database `%s` (rules %s and %s)", r.Write, d.Name, other, r.Name))
		}
		writes[r.Write] = r.Name
		reads := map[string]bool{}
		for _, u := range r.Reads {
			if reads[u] {
				return invalid(r.Name, fmt.Sprintf("Can not config duplicate read storage unit `%s` in database `%s`", u, d.Name))
			}
			reads[u] = true
		}
		if r.HasLoadBal && !slices.Contains(readQueryLoadBalancers, strings.ToUpper(r.LoadType)) {
			return rule.ServiceNotFound("org.apache.shardingsphere.infra.algorithm.loadbalancer.core.LoadBalanceAlgorithm", r.LoadType)
		}
		if r.Strategy != "" && !slices.Contains(transactionalReadQueryStrategies, r.Strategy) {
			return invalid(r.Name, fmt.Sprintf("No enum constant TransactionalReadQueryStrategy.%s", r.Strategy))
		}
	}
	return nil
}

func readwriteNames(rules []distsql.ReadwriteSplittingRule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Name
	}
	return out
}

// putReadwriteRules sets groups rules (with their load balancers) in
// groups and balancers, refusing a write unit another group than those
// the statement changes (alter) has.
func putReadwriteRules(db string, groups, balancers map[string]any, rules []distsql.ReadwriteSplittingRule, alter []string) error {
	for _, r := range rules {
		if w := writeUnitOwner(groups, r.Write, r.Name); w != "" && !slices.Contains(alter, w) {
			return rule.InvalidRule(readwriteKind, r.Name, fmt.Sprintf("Can not config duplicate write storage unit `%s` in database `%s` (rule %s has it)", r.Write, db, w))
		}
		putReadwriteRule(groups, balancers, r)
	}
	return nil
}

// readwriteGroups is CREATE, ALTER and DROP of the rule's groups: names
// match exactly, as upstream's executors compare them; a bad name is
// refused by checkReadwriteRules, after the duplicates.
var readwriteGroups = rule.Named{RuleType: readwriteKind, Label: readwriteKind, Case: rule.ExactCase,
	NameCheck: func(string) error { return nil }}

func createReadwriteRule(st *distsql.CreateReadwriteSplittingRule) databaseChange {
	return func(_ context.Context, d *metadata.Database, c map[string]any) (map[string]any, error) {
		groups, balancers := readwriteOf(c)
		todo, err := readwriteGroups.Create(d.Name, groups, readwriteNames(st.Rules), st.IfNotExists)
		if err != nil {
			return nil, err
		}
		rules := slices.DeleteFunc(slices.Clone(st.Rules), func(r distsql.ReadwriteSplittingRule) bool { return !slices.Contains(todo, r.Name) })
		if len(rules) == 0 {
			return c, nil
		}
		if err := checkReadwriteRules(d, rules); err != nil {
			return nil, err
		}
		if err := putReadwriteRules(d.Name, groups, balancers, rules, nil); err != nil {
			return nil, err
		}
		return readwriteContent(groups, balancers), nil
	}
}

func alterReadwriteRule(st *distsql.AlterReadwriteSplittingRule) databaseChange {
	return func(_ context.Context, d *metadata.Database, c map[string]any) (map[string]any, error) {
		names := readwriteNames(st.Rules)
		groups, balancers := readwriteOf(c)
		if _, err := readwriteGroups.Alter(d.Name, groups, names); err != nil {
			return nil, err
		}
		if err := checkReadwriteRules(d, st.Rules); err != nil {
			return nil, err
		}
		if err := putReadwriteRules(d.Name, groups, balancers, st.Rules, names); err != nil {
			return nil, err
		}
		return readwriteContent(groups, balancers), nil
	}
}

func dropReadwriteRule(st *distsql.DropReadwriteSplittingRule) databaseChange {
	return func(_ context.Context, d *metadata.Database, c map[string]any) (map[string]any, error) {
		groups, balancers := readwriteOf(c)
		names, err := readwriteGroups.Drop(d.Name, groups, st.Names, st.IfExists)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return c, nil
		}
		// A group another rule names (a sharding table's data nodes, a
		// single table's unit, ...) is still in use.
		var used []string
		inUse := dbconfig.UnitsInUse(d, false, true)
		defaultSingle := rule.Text(d.Rules["single"].Content["defaultDataSource"])
		for _, n := range names {
			if n == defaultSingle || slices.ContainsFunc(inUse[n], func(rule string) bool { return rule != "ReadwriteSplittingRule" }) {
				used = append(used, n)
			}
		}
		if len(used) > 0 {
			return nil, rule.RuleInUse(readwriteKind, d.Name, used)
		}
		for _, n := range names {
			delete(groups, n)
		}
		return readwriteContent(groups, balancers), nil
	}
}

// writeUnitOwner is the group other than name whose write unit is unit.
func writeUnitOwner(groups map[string]any, unit, name string) string {
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		if g != name && rule.Text(rule.Map(groups[g])["writeDataSourceName"]) == unit {
			return g
		}
	}
	return ""
}

// putReadwriteRule sets group r.Name (and its load balancer) in groups and
// balancers.
func putReadwriteRule(groups, balancers map[string]any, r distsql.ReadwriteSplittingRule) {
	g := map[string]any{"writeDataSourceName": r.Write, "readDataSourceNames": rule.AnyList(r.Reads)}
	strategy := r.Strategy
	if strategy == "" {
		strategy = "PRIMARY"
	}
	g["transactionalReadQueryStrategy"] = strategy
	if r.HasLoadBal {
		name := strings.ToLower(r.Name + "_" + r.LoadType)
		props := map[string]any{}
		for _, p := range r.LoadProps {
			props[p.Key] = p.Value.Text
		}
		balancers[name] = map[string]any{"type": strings.ToUpper(r.LoadType), "props": props}
		g["loadBalancerName"] = name
	}
	groups[r.Name] = g
}
