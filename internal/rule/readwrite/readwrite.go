// Package readwrite is the readwrite-splitting rule family: CREATE, ALTER
// and DROP READWRITE_SPLITTING RULE, SHOW READWRITE_SPLITTING RULE(S) and
// COUNT READWRITE_SPLITTING RULE as upstream's
// ReadwriteSplittingDistSQLStatement.g4 reads them and its executors check
// and write them, the import check, the units the groups use and the
// upstream swap. A rule is data source groups {writeDataSourceName,
// readDataSourceNames, transactionalReadQueryStrategy, loadBalancerName}
// with their load balancers {type, props}, each named {rule}_{type} in
// lower case, as upstream's statement converter names it. The read data
// sources' states (SHOW STATUS FROM READWRITE_SPLITTING RULES, ENABLE and
// DISABLE) are the cluster's, not the rule's: internal/metadata keeps them.
package readwrite

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// Family is the readwrite-splitting rule family.
var Family rule.Family = family{}

type family struct{}

// Type is the rule's type in the registry and in configs.
const Type = "readwrite_splitting"

// kind is the rule's name in upstream's messages.
const kind = "Readwrite-splitting"

// Rule is one rule definition of CREATE / ALTER READWRITE_SPLITTING RULE:
// name (WRITE_STORAGE_UNIT=ds, READ_STORAGE_UNITS(ds, ...) [,
// TRANSACTIONAL_READ_QUERY_STRATEGY='...'] [, TYPE(NAME='...' [,
// PROPERTIES(...)])]).
type Rule struct {
	Name       string
	Write      string
	Reads      []string
	Strategy   string // "" when not given
	LoadType   string // the load balancer's TYPE NAME; "" when not given
	LoadProps  []distsql.Property
	HasLoadBal bool
}

// CreateRule is CREATE READWRITE_SPLITTING RULE [IF NOT EXISTS] rule[,
// rule...].
type CreateRule struct {
	IfNotExists bool
	Rules       []Rule
}

// AlterRule is ALTER READWRITE_SPLITTING RULE rule[, rule...].
type AlterRule struct{ Rules []Rule }

// DropRule is DROP READWRITE_SPLITTING RULE [IF EXISTS] name[, name...]
// [FROM db].
type DropRule struct {
	IfExists bool
	Names    []string
	Database string
}

// ShowRules is SHOW READWRITE_SPLITTING RULES [FROM db] or SHOW
// READWRITE_SPLITTING RULE name [FROM db].
type ShowRules struct {
	Name     string // "" for every rule
	Database string
}

// Scope implements distsql.Statement: the session's database.
func (CreateRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement: the session's database.
func (AlterRule) Scope() distsql.Scope { return distsql.SessionDatabase }

// Scope implements distsql.Statement.
func (st DropRule) Scope() distsql.Scope { return distsql.Named(st.Database) }

// Scope implements distsql.Statement.
func (st ShowRules) Scope() distsql.Scope { return distsql.Named(st.Database) }

func (family) Type() string { return Type }

func (family) Statements() string { return "CREATE, ALTER and DROP READWRITE_SPLITTING RULE" }

// Read reads the family's statements. ALTER READWRITE_SPLITTING RULE g
// ENABLE|DISABLE u, a data source's state, is distsql's and read before.
func (family) Read(p *distsql.Parser) (distsql.Statement, bool) {
	switch {
	case p.Keywords("CREATE", "READWRITE_SPLITTING", "RULE"):
		st := &CreateRule{IfNotExists: p.IfNotExists()}
		st.Rules = readRules(p)
		return st, true
	case p.Keywords("ALTER", "READWRITE_SPLITTING", "RULE"):
		return &AlterRule{Rules: readRules(p)}, true
	case p.Keywords("DROP", "READWRITE_SPLITTING", "RULE"):
		st := &DropRule{IfExists: p.IfExists()}
		st.Names = p.Names("rule name")
		st.Database = p.FromDatabase()
		return st, true
	case p.Keywords("SHOW", "READWRITE_SPLITTING", "RULES"):
		return &ShowRules{Database: p.FromDatabase()}, true
	case p.Keywords("SHOW", "READWRITE_SPLITTING", "RULE"):
		st := &ShowRules{Name: p.Identifier("rule name")}
		st.Database = p.FromDatabase()
		return st, true
	}
	return nil, false
}

// readRules reads rule (, rule)* of CREATE / ALTER READWRITE_SPLITTING
// RULE.
func readRules(p *distsql.Parser) []Rule {
	var out []Rule
	for {
		r := Rule{Name: p.Identifier("rule name")}
		p.ExpectSymbol("(")
		for {
			switch {
			case p.Keywords("WRITE_STORAGE_UNIT"), p.Keywords("WRITE_RESOURCE"):
				p.ExpectSymbol("=")
				r.Write = p.IdentOrString("storage unit name")
			case p.Keywords("READ_STORAGE_UNITS"), p.Keywords("READ_RESOURCES"):
				p.ExpectSymbol("(")
				r.Reads = append(r.Reads, p.IdentOrString("storage unit name"))
				for p.Symbol(",") {
					r.Reads = append(r.Reads, p.IdentOrString("storage unit name"))
				}
				p.ExpectSymbol(")")
			case p.Keywords("TRANSACTIONAL_READ_QUERY_STRATEGY"):
				p.ExpectSymbol("=")
				r.Strategy = strings.ToUpper(p.IdentOrString("transactional read query strategy"))
			case p.At("TYPE"):
				r.HasLoadBal = true
				a := p.Algorithm()
				r.LoadType, r.LoadProps = a.Type, a.Props
			default:
				p.OneOf("WRITE_STORAGE_UNIT", "READ_STORAGE_UNITS", "TRANSACTIONAL_READ_QUERY_STRATEGY", "TYPE")
			}
			if !p.Symbol(",") {
				break
			}
		}
		p.ExpectSymbol(")")
		out = append(out, r)
		if !p.Symbol(",") {
			return out
		}
	}
}

// Groups is the groups of readwrite-splitting rule content c:
// dataSourceGroups (5.5.x), dataSources in configs written for older
// releases; nil when it has none.
func Groups(c map[string]any) map[string]any {
	if g := rule.Map(c["dataSourceGroups"]); g != nil {
		return g
	}
	return rule.Map(c["dataSources"])
}

// loadBalancers are upstream's ReadQueryLoadBalanceAlgorithm types.
var loadBalancers = []string{"RANDOM", "ROUND_ROBIN", "WEIGHT"}

// strategies are upstream's TransactionalReadQueryStrategy values.
var strategies = []string{"PRIMARY", "FIXED", "DYNAMIC"}

// groups is CREATE, ALTER and DROP of the rule's groups: names match
// exactly, as upstream's executors compare them; a bad name is refused by
// checkRules, after the duplicates.
var groups = rule.Named{RuleType: kind, Label: kind, Case: rule.ExactCase,
	NameCheck: func(string) error { return nil }}

// Change: CREATE refuses a group the rule has (10204) unless IF NOT
// EXISTS, ALTER one it does not have (10202), DROP one it does not have
// unless IF EXISTS (10202) and one another rule names (10203); CREATE and
// ALTER check their groups as upstream's
// ReadwriteSplittingRuleStatementChecker does (checkRules).
func (family) Change(st distsql.Statement) rule.Change {
	switch st := st.(type) {
	case *CreateRule:
		return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			gs, lbs := contentOf(c)
			todo, err := groups.Create(d.Name, gs, names(st.Rules), st.IfNotExists)
			if err != nil {
				return nil, err
			}
			rules := slices.DeleteFunc(slices.Clone(st.Rules), func(r Rule) bool { return !slices.Contains(todo, r.Name) })
			if len(rules) == 0 {
				return c, nil
			}
			if err := checkRules(d, rules); err != nil {
				return nil, err
			}
			if err := putRules(d.Name, gs, lbs, rules, nil); err != nil {
				return nil, err
			}
			return content(gs, lbs), nil
		}
	case *AlterRule:
		return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			ns := names(st.Rules)
			gs, lbs := contentOf(c)
			if _, err := groups.Alter(d.Name, gs, ns); err != nil {
				return nil, err
			}
			if err := checkRules(d, st.Rules); err != nil {
				return nil, err
			}
			if err := putRules(d.Name, gs, lbs, st.Rules, ns); err != nil {
				return nil, err
			}
			return content(gs, lbs), nil
		}
	case *DropRule:
		return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			gs, lbs := contentOf(c)
			ns, err := groups.Drop(d.Name, gs, st.Names, st.IfExists)
			if err != nil {
				return nil, err
			}
			if len(ns) == 0 {
				return c, nil
			}
			// A group another rule names (a sharding table's data nodes,
			// a single table's unit, the default single unit, ...) is
			// still in use.
			var inUse map[string][]string
			if d.InUse != nil {
				inUse = d.InUse()
			}
			defaultSingle := rule.Text(d.Rules["single"]["defaultDataSource"])
			var used []string
			for _, n := range ns {
				if n == defaultSingle || slices.ContainsFunc(inUse[n], func(r string) bool { return r != "ReadwriteSplittingRule" }) {
					used = append(used, n)
				}
			}
			if len(used) > 0 {
				return nil, rule.RuleInUse(kind, d.Name, used)
			}
			for _, n := range ns {
				delete(gs, n)
			}
			return content(gs, lbs), nil
		}
	}
	return nil
}

// contentOf returns the groups and load balancers of rule content c as
// maps of their own, to change.
func contentOf(c map[string]any) (gs, lbs map[string]any) {
	gs, lbs = maps.Clone(Groups(c)), maps.Clone(rule.Map(c["loadBalancers"]))
	if gs == nil {
		gs = map[string]any{}
	}
	if lbs == nil {
		lbs = map[string]any{}
	}
	return gs, lbs
}

// content is the rule with groups gs and the balancers they use (an
// unused one is dropped); no groups is no rule.
func content(gs, lbs map[string]any) map[string]any {
	c := map[string]any{}
	if len(gs) == 0 {
		return c
	}
	used := map[string]any{}
	for _, g := range gs {
		if n := rule.Text(rule.Map(g)["loadBalancerName"]); n != "" && lbs[n] != nil {
			used[n] = lbs[n]
		}
	}
	c["dataSourceGroups"] = gs
	if len(used) > 0 {
		c["loadBalancers"] = used
	}
	return c
}

// checkRules applies upstream's ReadwriteSplittingRuleStatementChecker to
// the rules of a CREATE or ALTER: storage units exist, write units are
// not shared between rules, read units are not repeated, a rule is not
// named like a unit, the load balancer and the strategy exist.
func checkRules(d rule.Database, rules []Rule) error {
	var missing []string
	seen := map[string]bool{}
	for _, r := range rules {
		for _, u := range append([]string{r.Write}, r.Reads...) {
			if !slices.Contains(d.Units, u) && !seen[u] {
				seen[u] = true
				missing = append(missing, u)
			}
		}
	}
	if len(missing) > 0 {
		return rule.MissingStorageUnits(d.Name, missing)
	}
	invalid := func(name, msg string) error { return rule.InvalidRule(kind, name, msg) }
	writes := map[string]string{}
	for _, r := range rules {
		// The name becomes a registry path segment (the group's item and
		// its load balancer's): no '/', no '..'.
		if _, err := paths.RuleItem(d.Name, Type, "data_source_groups", r.Name); err != nil {
			return invalid(r.Name, fmt.Sprintf("the name is not a valid registry node name: %v", err))
		}
		if r.HasLoadBal {
			if _, err := paths.RuleItem(d.Name, Type, "load_balancers", strings.ToLower(r.Name+"_"+r.LoadType)); err != nil {
				return invalid(r.Name, fmt.Sprintf("the load balancer name is not a valid registry node name: %v", err))
			}
		}
		if slices.Contains(d.Units, r.Name) {
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
		if r.HasLoadBal && !slices.Contains(loadBalancers, strings.ToUpper(r.LoadType)) {
			return rule.ServiceNotFound("org.apache.shardingsphere.infra.algorithm.loadbalancer.core.LoadBalanceAlgorithm", r.LoadType)
		}
		if r.Strategy != "" && !slices.Contains(strategies, r.Strategy) {
			return invalid(r.Name, fmt.Sprintf("No enum constant TransactionalReadQueryStrategy.%s", r.Strategy))
		}
	}
	return nil
}

func names(rules []Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Name
	}
	return out
}

// putRules sets rules (with their load balancers) in gs and lbs, refusing
// a write unit a group other than those the statement changes (alter)
// has.
func putRules(db string, gs, lbs map[string]any, rules []Rule, alter []string) error {
	for _, r := range rules {
		if w := writeUnitOwner(gs, r.Write, r.Name); w != "" && !slices.Contains(alter, w) {
			return rule.InvalidRule(kind, r.Name, fmt.Sprintf("Can not config duplicate write storage unit `%s` in database `%s` (rule %s has it)", r.Write, db, w))
		}
		putRule(gs, lbs, r)
	}
	return nil
}

// writeUnitOwner is the group other than name whose write unit is unit.
func writeUnitOwner(gs map[string]any, unit, name string) string {
	for _, g := range slices.Sorted(maps.Keys(gs)) {
		if g != name && rule.Text(rule.Map(gs[g])["writeDataSourceName"]) == unit {
			return g
		}
	}
	return ""
}

// putRule sets group r.Name (and its load balancer) in gs and lbs.
func putRule(gs, lbs map[string]any, r Rule) {
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
		lbs[name] = map[string]any{"type": strings.ToUpper(r.LoadType), "props": props}
		g["loadBalancerName"] = name
	}
	gs[r.Name] = g
}

// Show answers SHOW READWRITE_SPLITTING RULE(S) (name,
// write_storage_unit_name, read_storage_unit_names,
// transactional_read_query_strategy, load_balancer_type,
// load_balancer_props), the groups by name; SHOW READWRITE_SPLITTING
// RULE name matches the name in any case.
func (family) Show(_ context.Context, st distsql.Statement, read rule.Read) (rule.Rows, bool, error) {
	return rule.ShowContent(st, read, show)
}

func show(st distsql.Statement, c map[string]any) (rule.Rows, bool) {
	show, ok := st.(*ShowRules)
	if !ok {
		return rule.Rows{}, false
	}
	rows := rule.Rows{Columns: []string{"name", "write_storage_unit_name", "read_storage_unit_names",
		"transactional_read_query_strategy", "load_balancer_type", "load_balancer_props"}, Rows: [][]string{}}
	gs := Groups(c)
	lbs := rule.Map(c["loadBalancers"])
	for _, name := range rule.SortedKeys(gs) {
		if show.Name != "" && !strings.EqualFold(show.Name, name) {
			continue
		}
		g := rule.Map(gs[name])
		strategy := rule.Text(g["transactionalReadQueryStrategy"])
		if strategy == "" {
			strategy = "PRIMARY"
		}
		var lbType, lbProps string
		if lb := rule.Map(lbs[rule.Text(g["loadBalancerName"])]); lb != nil {
			lbType, lbProps = rule.Text(lb["type"]), rule.PropsText(lb["props"])
		}
		rows.Rows = append(rows.Rows, []string{name, rule.Text(g["writeDataSourceName"]), rule.Text(g["readDataSourceNames"]),
			strategy, lbType, lbProps})
	}
	return rows, true
}

// Check: every group's write and read data sources exist (10102, one
// refusal per group naming the missing ones).
func (family) Check(_ context.Context, d rule.Database, c map[string]any) ([]*sqlerr.Error, error) {
	var errs []*sqlerr.Error
	for _, name := range rule.SortedKeys(rule.Map(c["dataSourceGroups"])) {
		var absent []string
		for _, u := range sources(rule.Map(rule.Map(c["dataSourceGroups"])[name])) {
			if !d.Sources[u] && !slices.Contains(absent, u) {
				absent = append(absent, u)
			}
		}
		if len(absent) > 0 {
			errs = append(errs, rule.MissingStorageUnits(d.Name, absent))
		}
	}
	return errs, nil
}

// sources are group g's write data source and its read ones.
func sources(g map[string]any) []string {
	var out []string
	if w, ok := g["writeDataSourceName"].(string); ok {
		out = append(out, w)
	}
	for _, r := range rule.Values(g["readDataSourceNames"]) {
		out = append(out, fmt.Sprint(r))
	}
	return out
}

// Units: each group, by name, uses its write and read data sources.
func (family) Units(_ rule.Database, c map[string]any) []rule.Use {
	gs := Groups(c)
	var out []rule.Use
	for _, name := range rule.SortedKeys(gs) {
		out = append(out, rule.Use{Item: name, Units: sources(rule.Map(gs[name]))})
	}
	return out
}

// Defines: the groups are logical data sources other rules may name.
func (family) Defines(c map[string]any) []string {
	return slices.Concat(rule.SortedKeys(rule.Map(c["dataSourceGroups"])), rule.SortedKeys(rule.Map(c["dataSources"])))
}

// Count: one per group, named readwrite_splitting as upstream's
// ReadwriteSplittingCountResultRowBuilder names it.
func (family) Count(_ context.Context, _ rule.Database, c map[string]any) ([]rule.Counted, error) {
	if c == nil {
		return nil, nil
	}
	return []rule.Counted{{Rule: Type, Count: len(Groups(c))}}, nil
}

// Convert: one CREATE READWRITE_SPLITTING RULE per group, in name order,
// its load balancer inline.
func (family) Convert(c map[string]any) ([]string, bool) {
	var out []string
	groups := Groups(c)
	balancers := rule.Map(c["loadBalancers"])
	for _, n := range slices.Sorted(maps.Keys(groups)) {
		g := rule.Map(groups[n])
		s := n + " (WRITE_STORAGE_UNIT=" + rule.Text(g["writeDataSourceName"]) + ", READ_STORAGE_UNITS(" + strings.Join(rule.List(g["readDataSourceNames"]), ", ") + ")"
		if q := rule.Text(g["transactionalReadQueryStrategy"]); q != "" {
			s += ", TRANSACTIONAL_READ_QUERY_STRATEGY=" + rule.Quote(q)
		}
		if lb := rule.Text(g["loadBalancerName"]); lb != "" {
			s += ", " + rule.ConvertAlgorithm(balancers, lb)
		}
		out = append(out, "CREATE READWRITE_SPLITTING RULE "+s+");")
	}
	return out, true
}

// Items: the groups (dataSources in configs written for older releases)
// and the load balancers, one item each.
func (family) Items() rule.Items {
	return rule.Items{Named: []string{"dataSourceGroups", "dataSources", "loadBalancers"}}
}

// Upstream: a group without a transactional read query strategy has
// upstream's default, PRIMARY, written out.
func (family) Upstream(_ paths.Layout, c map[string]any) error {
	for _, g := range rule.Map(c["dataSourceGroups"]) {
		if gm := rule.Map(g); gm != nil {
			if gm["transactionalReadQueryStrategy"] == nil {
				gm["transactionalReadQueryStrategy"] = "PRIMARY"
			}
		}
	}
	return nil
}
