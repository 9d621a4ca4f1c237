package console

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

// CREATE, ALTER, DROP and SHOW READWRITE_SPLITTING RULE(S), COUNT
// READWRITE_SPLITTING RULE and SHOW RULES USED STORAGE UNIT, as
// ShardingSphere's executors answer them. A rule is a data source group
// {writeDataSourceName, readDataSourceNames, transactionalReadQueryStrategy,
// loadBalancerName} with its load balancer {type, props} named
// {rule}_{type} in lower case, as upstream's statement converter names it.

var readwriteRuleColumns = textColumns("name", "write_storage_unit_name", "read_storage_unit_names",
	"transactional_read_query_strategy", "load_balancer_type", "load_balancer_props")

// readwriteGroupsField is the field of the rule's groups: dataSourceGroups
// (5.5.x), dataSources in configs written for older releases.
func readwriteGroups(content map[string]any) map[string]any {
	if g := rules.Map(content["dataSourceGroups"]); g != nil {
		return g
	}
	return rules.Map(content["dataSources"])
}

func (e *Engine) showReadwriteSplittingRules(_ context.Context, s *Session, st *distsql.ShowReadwriteSplittingRules) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: readwriteRuleColumns, Rows: [][]*string{}}
	r, ok := db.Rules["readwrite_splitting"]
	if !ok {
		return res, nil
	}
	groups := readwriteGroups(r.Content)
	balancers := rules.Map(r.Content["loadBalancers"])
	for _, name := range sortedKeys(groups) {
		if st.Name != "" && !strings.EqualFold(st.Name, name) {
			continue
		}
		g := rules.Map(groups[name])
		strategy := rules.Text(g["transactionalReadQueryStrategy"])
		if strategy == "" {
			strategy = "PRIMARY"
		}
		var lbType, lbProps string
		if lb := rules.Map(balancers[rules.Text(g["loadBalancerName"])]); lb != nil {
			lbType, lbProps = rules.Text(lb["type"]), propsJSON(lb["props"])
		}
		res.Rows = append(res.Rows, []*string{str(name), str(rules.Text(g["writeDataSourceName"])), str(rules.Text(g["readDataSourceNames"])),
			str(strategy), str(lbType), str(lbProps)})
	}
	return res, nil
}

// showReadwriteSplittingStatus lists each read storage unit of each group
// with its state (name, storage_unit, status): ENABLED, or DISABLED where
// /nodes/qualified_data_sources says so, as upstream's executor shows them.
func (e *Engine) showReadwriteSplittingStatus(_ context.Context, s *Session, st *distsql.ShowReadwriteSplittingStatus) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("name", "storage_unit", "status"), Rows: [][]*string{}}
	r, ok := db.Rules["readwrite_splitting"]
	if !ok {
		return res, nil
	}
	states := e.d.Metadata.Current().DataSourceStates
	groups := readwriteGroups(r.Content)
	for _, name := range sortedKeys(groups) {
		if st.Name != "" && !strings.EqualFold(st.Name, name) {
			continue
		}
		for _, u := range asList(rules.Map(groups[name])["readDataSourceNames"]) {
			status := metadata.StateEnabled
			if states[metadata.QualifiedDataSource{Database: db.Name, Group: name, Unit: u}] == metadata.StateDisabled {
				status = metadata.StateDisabled
			}
			res.Rows = append(res.Rows, []*string{str(name), str(u), str(status)})
		}
	}
	return res, nil
}

// readQueryLoadBalancers are upstream's ReadQueryLoadBalanceAlgorithm
// types.
var readQueryLoadBalancers = []string{"RANDOM", "ROUND_ROBIN", "WEIGHT"}

// transactionalReadQueryStrategies are upstream's
// TransactionalReadQueryStrategy values.
var transactionalReadQueryStrategies = []string{"PRIMARY", "FIXED", "DYNAMIC"}

// readwriteRuleOf returns the database's readwrite-splitting rule content
// as a deep-enough copy to change: groups and load balancers are new maps.
func readwriteRuleOf(db *metadata.Database) (groups, balancers map[string]any) {
	r := db.Rules["readwrite_splitting"]
	groups, balancers = maps.Clone(readwriteGroups(r.Content)), maps.Clone(rules.Map(r.Content["loadBalancers"]))
	if groups == nil {
		groups = map[string]any{}
	}
	if balancers == nil {
		balancers = map[string]any{}
	}
	return groups, balancers
}

// checkReadwriteRules applies upstream's ReadwriteSplittingRuleStatementChecker
// to the rules of a CREATE or ALTER: storage units exist, write units are
// not shared between rules, read units are not repeated, a rule is not
// named like a unit, the load balancer and the strategy exist.
func checkReadwriteRules(db *metadata.Database, rules []distsql.ReadwriteSplittingRule) error {
	var missing []string
	seen := map[string]bool{}
	for _, r := range rules {
		for _, u := range append([]string{r.Write}, r.Reads...) {
			if _, ok := db.Units[u]; !ok && !seen[u] {
				seen[u] = true
				missing = append(missing, u)
			}
		}
	}
	if len(missing) > 0 {
		return &Error{Code: 10102, SQLState: "44000", Message: fmt.Sprintf("Storage units '[%s]' do not exist in database '%s'.", strings.Join(missing, ", "), db.Name)}
	}
	invalid := func(name, msg string) error {
		return &Error{Code: 10200, SQLState: "44000", Message: fmt.Sprintf("Invalid 'Readwrite-splitting' rule '%s', error message is: %s", name, msg)}
	}
	writes := map[string]string{}
	for _, r := range rules {
		// The name becomes a registry path segment (the group's item and
		// its load balancer's): no '/', no '..'.
		if _, err := paths.RuleItem(db.Name, "readwrite_splitting", "data_source_groups", r.Name); err != nil {
			return invalid(r.Name, fmt.Sprintf("the name is not a valid registry node name: %v", err))
		}
		if r.HasLoadBal {
			if _, err := paths.RuleItem(db.Name, "readwrite_splitting", "load_balancers", strings.ToLower(r.Name+"_"+r.LoadType)); err != nil {
				return invalid(r.Name, fmt.Sprintf("the load balancer name is not a valid registry node name: %v", err))
			}
		}
		if _, ok := db.Units[r.Name]; ok {
			return invalid(r.Name, fmt.Sprintf("[%s] already exists in storage unit", r.Name))
		}
		if other, ok := writes[r.Write]; ok {
			return invalid(r.Name, fmt.Sprintf("Can not config duplicate write storage unit `%s` in database `%s` (rules %s and %s)", r.Write, db.Name, other, r.Name))
		}
		writes[r.Write] = r.Name
		reads := map[string]bool{}
		for _, u := range r.Reads {
			if reads[u] {
				return invalid(r.Name, fmt.Sprintf("Can not config duplicate read storage unit `%s` in database `%s`", u, db.Name))
			}
			reads[u] = true
		}
		if r.HasLoadBal && !slices.Contains(readQueryLoadBalancers, strings.ToUpper(r.LoadType)) {
			return &Error{Code: 30000, SQLState: "HY000", Message: fmt.Sprintf("SPI-00001: No implementation class load from SPI 'org.apache.shardingsphere.infra.algorithm.loadbalancer.core.LoadBalanceAlgorithm' with type '%s'.", r.LoadType)}
		}
		if r.Strategy != "" && !slices.Contains(transactionalReadQueryStrategies, r.Strategy) {
			return invalid(r.Name, fmt.Sprintf("No enum constant TransactionalReadQueryStrategy.%s", r.Strategy))
		}
	}
	return nil
}

// duplicateNames returns the names given more than once, in order.
func duplicateNames(names []string) []string {
	seen := map[string]int{}
	var out []string
	for _, n := range names {
		seen[n]++
		if seen[n] == 2 {
			out = append(out, n)
		}
	}
	return out
}

func ruleNames(rules []distsql.ReadwriteSplittingRule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Name
	}
	return out
}

func (e *Engine) createReadwriteSplittingRule(ctx context.Context, s *Session, st *distsql.CreateReadwriteSplittingRule) (*Result, error) {
	db, err := e.database(s, "")
	if err != nil {
		return nil, err
	}
	if dup := duplicateNames(ruleNames(st.Rules)); len(dup) > 0 {
		return nil, duplicateRule("Readwrite-splitting", dup, db.Name)
	}
	groups, balancers := readwriteRuleOf(db)
	rules := st.Rules
	var existing []string
	for _, r := range st.Rules {
		if _, ok := groups[r.Name]; ok {
			existing = append(existing, r.Name)
		}
	}
	if len(existing) > 0 {
		if !st.IfNotExists {
			return nil, duplicateRule("Readwrite-splitting", existing, db.Name)
		}
		rules = slices.DeleteFunc(slices.Clone(rules), func(r distsql.ReadwriteSplittingRule) bool { return slices.Contains(existing, r.Name) })
	}
	if len(rules) == 0 {
		return &Result{}, nil
	}
	if err := checkReadwriteRules(db, rules); err != nil {
		return nil, err
	}
	for _, r := range rules {
		if w := writeUnitOwner(groups, r.Write, r.Name); w != "" {
			return nil, &Error{Code: 10200, SQLState: "44000", Message: fmt.Sprintf("Invalid 'Readwrite-splitting' rule '%s', error message is: Can not config duplicate write storage unit `%s` in database `%s` (rule %s has it)", r.Name, r.Write, db.Name, w)}
		}
		putReadwriteRule(groups, balancers, r)
	}
	return e.commitReadwrite(ctx, s, db, groups, balancers)
}

func (e *Engine) alterReadwriteSplittingRule(ctx context.Context, s *Session, st *distsql.AlterReadwriteSplittingRule) (*Result, error) {
	db, err := e.database(s, "")
	if err != nil {
		return nil, err
	}
	if dup := duplicateNames(ruleNames(st.Rules)); len(dup) > 0 {
		return nil, duplicateRule("Readwrite-splitting", dup, db.Name)
	}
	groups, balancers := readwriteRuleOf(db)
	var missing []string
	for _, r := range st.Rules {
		if _, ok := groups[r.Name]; !ok {
			missing = append(missing, r.Name)
		}
	}
	if len(missing) > 0 {
		return nil, missingRule("Readwrite-splitting", missing, db.Name)
	}
	if err := checkReadwriteRules(db, st.Rules); err != nil {
		return nil, err
	}
	for _, r := range st.Rules {
		if w := writeUnitOwner(groups, r.Write, r.Name); w != "" && !slices.Contains(ruleNames(st.Rules), w) {
			return nil, &Error{Code: 10200, SQLState: "44000", Message: fmt.Sprintf("Invalid 'Readwrite-splitting' rule '%s', error message is: Can not config duplicate write storage unit `%s` in database `%s` (rule %s has it)", r.Name, r.Write, db.Name, w)}
		}
		putReadwriteRule(groups, balancers, r)
	}
	return e.commitReadwrite(ctx, s, db, groups, balancers)
}

func (e *Engine) dropReadwriteSplittingRule(ctx context.Context, s *Session, st *distsql.DropReadwriteSplittingRule) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	groups, balancers := readwriteRuleOf(db)
	var missing, names []string
	for _, n := range st.Names {
		if _, ok := groups[n]; ok {
			names = append(names, n)
		} else {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 && !st.IfExists {
		return nil, missingRule("Readwrite-splitting", missing, db.Name)
	}
	if len(names) == 0 {
		return &Result{}, nil
	}
	// A group another rule names (a sharding table's data nodes, a
	// single table's unit, ...) is still in use.
	var used []string
	for _, n := range names {
		for typ, r := range db.Rules {
			if typ != "readwrite_splitting" && ruleNamesUnit(r, n) {
				used = append(used, n)
				break
			}
		}
	}
	if len(used) > 0 {
		return nil, &Error{Code: 10203, SQLState: "44000", Message: fmt.Sprintf("Readwrite-splitting rules '[%s]' in database '%s' are still in used.", strings.Join(used, ", "), db.Name)}
	}
	for _, n := range names {
		delete(groups, n)
	}
	return e.commitReadwrite(ctx, s, db, groups, balancers)
}

// writeUnitOwner is the group other than name whose write unit is unit.
func writeUnitOwner(groups map[string]any, unit, name string) string {
	for _, g := range sortedKeys(groups) {
		if g != name && rules.Text(rules.Map(groups[g])["writeDataSourceName"]) == unit {
			return g
		}
	}
	return ""
}

// putReadwriteRule sets group r.Name (and its load balancer) in groups and
// balancers.
func putReadwriteRule(groups, balancers map[string]any, r distsql.ReadwriteSplittingRule) {
	reads := make([]any, len(r.Reads))
	for i, u := range r.Reads {
		reads[i] = u
	}
	g := map[string]any{"writeDataSourceName": r.Write, "readDataSourceNames": reads}
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

// commitReadwrite writes the rule with groups and the balancers they use
// (an unused one is dropped); no groups removes the rule.
func (e *Engine) commitReadwrite(ctx context.Context, s *Session, db *metadata.Database, groups, balancers map[string]any) (*Result, error) {
	content := map[string]any{}
	if len(groups) > 0 {
		used := map[string]any{}
		for _, g := range groups {
			if n := rules.Text(rules.Map(g)["loadBalancerName"]); n != "" && balancers[n] != nil {
				used[n] = balancers[n]
			}
		}
		content["dataSourceGroups"] = groups
		if len(used) > 0 {
			content["loadBalancers"] = used
		}
	}
	return e.commitDatabaseRule(ctx, s, db, config.Rule{Type: "readwrite_splitting", Content: content})
}

// ruleNamesUnit reports whether rule r names the storage unit (or group)
// unit anywhere: a data node, a storage unit list, a single table.
func ruleNamesUnit(r config.Rule, unit string) bool {
	found := false
	walkStrings(r.Content, func(s string) {
		for _, x := range expandInline(s, maxInlineExpansion) {
			for _, tok := range strings.FieldsFunc(x, func(r rune) bool { return r == '.' || r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
				if tok == unit {
					found = true
				}
			}
		}
	})
	return found
}

// duplicateRule is upstream's DuplicateRuleException (10204, 42S01).
func duplicateRule(typ string, names []string, db string) *Error {
	return &Error{Code: 10204, SQLState: "42S01", Message: fmt.Sprintf("Duplicate %s rule names '[%s]' in database '%s'.", typ, strings.Join(names, ", "), db)}
}

// missingRule is upstream's MissingRequiredRuleException (10202, 42S02).
func missingRule(typ string, names []string, db string) *Error {
	return &Error{Code: 10202, SQLState: "42S02", Message: fmt.Sprintf("%s rules '[%s]' do not exist in database '%s'.", typ, strings.Join(names, ", "), db)}
}

var rulesUsedColumns = textColumns("type", "name")

// showRulesUsedStorageUnit lists the rules that use a unit: readwrite-
// splitting groups that read or write it, sharding tables whose data nodes
// are on it, single tables loaded from it, shadow data sources, in
// upstream's order of rule types.
func (e *Engine) showRulesUsedStorageUnit(_ context.Context, s *Session, st *distsql.ShowRulesUsedStorageUnit) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: rulesUsedColumns, Rows: [][]*string{}}
	if _, ok := db.Units[st.Unit]; !ok {
		return nil, &Error{Code: 10102, SQLState: "44000", Message: fmt.Sprintf("Storage units '[%s]' do not exist in database '%s'.", st.Unit, db.Name)}
	}
	add := func(typ, name string) { res.Rows = append(res.Rows, []*string{str(typ), str(name)}) }
	if r, ok := db.Rules["sharding"]; ok {
		for _, f := range []string{"tables", "autoTables"} {
			tables := rules.Map(r.Content[f])
			for _, t := range sortedKeys(tables) {
				tm := rules.Map(tables[t])
				if ruleNamesUnit(config.Rule{Content: map[string]any{"n": tm["actualDataNodes"], "u": tm["storageUnits"]}}, st.Unit) {
					add("sharding", t)
				}
			}
		}
	}
	if r, ok := db.Rules["readwrite_splitting"]; ok {
		groups := readwriteGroups(r.Content)
		for _, g := range sortedKeys(groups) {
			gm := rules.Map(groups[g])
			if rules.Text(gm["writeDataSourceName"]) == st.Unit || slices.Contains(strings.Split(rules.Text(gm["readDataSourceNames"]), ","), st.Unit) {
				add("readwrite_splitting", g)
			}
		}
	}
	if r, ok := db.Rules["shadow"]; ok {
		sources := rules.Map(r.Content["dataSources"])
		for _, n := range sortedKeys(sources) {
			if ruleNamesUnit(config.Rule{Content: rules.Map(sources[n])}, st.Unit) {
				add("shadow", n)
			}
		}
	}
	if r, ok := db.Rules["single"]; ok {
		for _, t := range asList(r.Content["tables"]) {
			if u, table, ok := strings.Cut(t, "."); ok && u == st.Unit && !strings.Contains(table, "*") {
				add("single", table[strings.LastIndexByte(table, '.')+1:])
			}
		}
	}
	return res, nil
}

// asList is a list value's elements as text.
func asList(v any) []string {
	switch x := v.(type) {
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, rules.Text(e))
		}
		return out
	case []string:
		return x
	case string:
		if x == "" {
			return nil
		}
		return []string{x}
	}
	return nil
}

// countRule answers COUNT type RULE: one row per kind of item of the rule
// as upstream's CountRuleExecutor counts them, none when the database has
// no such rule: readwrite-splitting groups, single tables, encrypt and
// mask tables, shadow data sources. The types this node does not count
// (sharding, until its RQL is in) are refused.
func (e *Engine) countRule(ctx context.Context, s *Session, st *distsql.CountRule) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: countColumns, Rows: [][]*string{}}
	add := func(name string, n int) {
		res.Rows = append(res.Rows, []*string{str(name), str(db.Name), str(fmt.Sprint(n))})
	}
	switch st.Type {
	case "readwrite_splitting":
		if r, ok := db.Rules["readwrite_splitting"]; ok {
			add("readwrite_splitting", len(readwriteGroups(r.Content)))
		}
	case "encrypt", "mask":
		// One per table, as upstream's EncryptCountResultRowBuilder and
		// MaskCountResultRowBuilder count.
		if r, ok := db.Rules[st.Type]; ok {
			add(st.Type, len(rules.Map(r.Content["tables"])))
		}
	case "shadow":
		if r, ok := db.Rules["shadow"]; ok {
			add("shadow", len(rules.Map(r.Content["dataSources"])))
		}
	case "single":
		tables, err := e.singleTables(ctx, db)
		if err != nil {
			return nil, err
		}
		add("single", len(tables))
	default:
		return nil, unsupported("COUNT " + strings.ToUpper(st.Type) + " RULE")
	}
	return res, nil
}
