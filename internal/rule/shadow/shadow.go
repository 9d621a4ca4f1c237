// Package shadow is the shadow rule family: CREATE, ALTER and DROP SHADOW
// RULE, DROP SHADOW ALGORITHM, CREATE, ALTER and DROP DEFAULT SHADOW
// ALGORITHM, SHOW SHADOW RULE(S), SHOW SHADOW TABLE RULE(S), SHOW SHADOW
// ALGORITHMS and SHOW DEFAULT SHADOW ALGORITHM with upstream 5.5's
// grammar, columns and codes (features/shadow/distsql), and the rule's
// checks, units in use, logical data sources and COUNT. The rule's
// content is upstream's YAML: dataSources: {name:
// {productionDataSourceName, shadowDataSourceName}}, tables: {t:
// {dataSourceNames: [name], shadowAlgorithmNames: [alg]}},
// shadowAlgorithms: {alg: {type, props}}, defaultShadowAlgorithmName.
package shadow

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

// Family is the shadow rule family.
var Family rule.Family = family{}

type family struct{}

// The rule's fields.
const (
	dataSources = "dataSources"
	tables      = "tables"
	algorithms  = "shadowAlgorithms"
	defaultName = "defaultShadowAlgorithmName"
	production  = "productionDataSourceName"
	shadowUnit  = "shadowDataSourceName"
	tableUnits  = "dataSourceNames"
	tableAlgs   = "shadowAlgorithmNames"
)

// defaultAlgorithm is the name upstream gives the algorithm of CREATE and
// ALTER DEFAULT SHADOW ALGORITHM.
const defaultAlgorithm = "default_shadow_algorithm"

// algorithmSPI is the SPI upstream names when a shadow algorithm type
// does not exist.
const algorithmSPI = "org.apache.shardingsphere.shadow.spi.ShadowAlgorithm"

// Algorithms are the shadow algorithm types, with what their init checks
// of props (AbstractColumnMatchedShadowAlgorithm: a column and an
// operation). Read-only.
var Algorithms = rule.Algorithms{
	"VALUE_MATCH": {Class: "ColumnValueMatchedShadowAlgorithm", Props: columnMatched},
	"REGEX_MATCH": {Class: "ColumnRegexMatchedShadowAlgorithm", Props: columnMatched},
	"SQL_HINT":    {Class: "SQLHintShadowAlgorithm"},
}

var columnMatched = []rule.PropCheck{
	{Key: "column", Check: func(_, _ string, ok bool) string {
		if !ok {
			return "Column shadow algorithm column cannot be null"
		}
		return ""
	}},
	{Key: "operation", Check: func(_, v string, ok bool) string {
		switch {
		case !ok:
			return "Column shadow algorithm operation cannot be null"
		case !slices.Contains([]string{"select", "insert", "update", "delete"}, strings.ToLower(v)):
			return "Column shadow algorithm operation must be one of [select, insert, update, delete]"
		}
		return ""
	}},
}

// named is CREATE, ALTER and DROP of the rule's data sources (its rules,
// by name): names match exactly, as upstream's executors compare them.
var named = rule.Named{RuleType: "shadow", Label: "Shadow", Case: rule.ExactCase}

func (family) Type() string { return "shadow" }

func (family) Statements() string {
	return "CREATE, ALTER and DROP SHADOW RULE, DROP SHADOW ALGORITHM, CREATE, ALTER and DROP DEFAULT SHADOW ALGORITHM"
}

func (family) Read(p *distsql.Parser) (distsql.Statement, bool) { return read(p) }

func (family) Change(st distsql.Statement) rule.Change {
	switch st := st.(type) {
	case *CreateRule:
		return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			return createRule(d, c, st)
		}
	case *AlterRule:
		return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			return alterRule(d, c, st)
		}
	case *DropRule:
		return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			return dropRule(d, c, st)
		}
	case *DropAlgorithm:
		return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			return dropAlgorithm(d, c, st)
		}
	case *CreateDefaultAlgorithm:
		return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			if rule.Map(c[algorithms])[defaultAlgorithm] != nil {
				if st.IfNotExists {
					return c, nil
				}
				return nil, rule.AlgorithmInUse("Shadow", d.Name, []string{defaultAlgorithm})
			}
			return setDefault(c, st.Algorithm)
		}
	case *AlterDefaultAlgorithm:
		return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			if err := checkAlgorithm(st.Algorithm); err != nil {
				return nil, err
			}
			if rule.Map(c[algorithms])[defaultAlgorithm] == nil {
				return nil, rule.UnregisteredAlgorithm("Shadow", rule.JavaList([]string{defaultAlgorithm}), d.Name)
			}
			return setDefault(c, st.Algorithm)
		}
	case *DropDefaultAlgorithm:
		return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
			name := rule.Text(c[defaultName])
			if name == "" {
				if st.IfExists {
					return c, nil
				}
				return nil, rule.UnregisteredAlgorithm("Shadow", "default", d.Name)
			}
			delete(c, defaultName)
			if !used(c)[name] {
				delete(rule.Map(c[algorithms]), name)
			}
			return rule.Prune(c), nil
		}
	}
	return nil
}

// setDefault makes a the default algorithm of c, named defaultAlgorithm.
func setDefault(c map[string]any, a distsql.Algorithm) (map[string]any, error) {
	if err := checkAlgorithm(a); err != nil {
		return nil, err
	}
	rule.Section(c, algorithms)[defaultAlgorithm] = rule.AlgorithmValue(a)
	c[defaultName] = defaultAlgorithm
	return c, nil
}

// checkAlgorithm checks a's type and props as upstream's
// TypedSPILoader.checkService does.
func checkAlgorithm(a distsql.Algorithm) error {
	if err := rule.CheckSPIType(algorithmSPI, a.Type, Algorithms.Types()); err != nil {
		return err
	}
	if err := Algorithms.Check(a.Type, rule.Map(rule.AlgorithmValue(a)["props"])); err != nil {
		return err
	}
	return nil
}

// algorithmName is upstream's name for the index-th algorithm of table of
// rule: "{rule}_{table}_{type}_{index}" in lower case.
func algorithmName(ruleName, table, typ string, index int) string {
	return strings.ToLower(fmt.Sprintf("%s_%s_%s_%d", ruleName, table, typ, index))
}

// checkDefinitions checks the rules of CREATE or ALTER as upstream's
// executors do after their name checks: source and shadow are storage
// units of d (MissingRequiredStorageUnitsException, 10102), no algorithm
// name is generated twice (DuplicateRuleException), each algorithm's type
// and props are fine.
func checkDefinitions(d rule.Database, defs []Definition) error {
	var missing []string
	for _, def := range defs {
		for _, u := range []string{def.Source, def.Shadow} {
			if !slices.Contains(d.Units, u) && !slices.Contains(missing, u) {
				missing = append(missing, u)
			}
		}
	}
	if len(missing) > 0 {
		return rule.MissingStorageUnits(d.Name, missing)
	}
	var names, dup []string
	for _, def := range defs {
		for _, t := range def.Tables {
			for i, a := range t.Algorithms {
				n := algorithmName(def.Name, t.Name, a.Type, i)
				if slices.Contains(names, n) {
					dup = append(dup, n)
				}
				names = append(names, n)
			}
		}
	}
	if len(dup) > 0 {
		return rule.DuplicateRule("shadow", d.Name, dup)
	}
	for _, def := range defs {
		for _, t := range def.Tables {
			for _, a := range t.Algorithms {
				if err := checkAlgorithm(a); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// put writes definition def into c: its data sources, each table's entry
// naming def (merged with the table's other rules) and its algorithms.
func put(c map[string]any, def Definition) {
	rule.Section(c, dataSources)[def.Name] = map[string]any{production: def.Source, shadowUnit: def.Shadow}
	for _, t := range def.Tables {
		// A changed copy replaces the table's entry (c's entries are the
		// rule's as read, see config.CopyFields).
		entry := maps.Clone(rule.Map(rule.Section(c, tables)[t.Name]))
		if entry == nil {
			entry = map[string]any{}
		}
		rule.Section(c, tables)[t.Name] = entry
		entry[tableUnits] = rule.AnyList(appendNew(rule.List(entry[tableUnits]), def.Name))
		names := rule.List(entry[tableAlgs])
		for i, a := range t.Algorithms {
			n := algorithmName(def.Name, t.Name, a.Type, i)
			rule.Section(c, algorithms)[n] = rule.AlgorithmValue(a)
			names = appendNew(names, n)
		}
		entry[tableAlgs] = rule.AnyList(names)
	}
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(slices.Clone(list), s)
}

// logicalSources are the data sources other rules of d define, which a
// shadow rule may not be named after.
func logicalSources(d rule.Database) []string {
	var out []string
	for name := range d.Sources {
		if !slices.Contains(d.Units, name) && rule.Map(d.Rules["shadow"][dataSources])[name] == nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// createRule is CREATE SHADOW RULE: a name given twice, or one the rule
// has, is a duplicate (unless IF NOT EXISTS for the latter), a name of a
// logical data source another rule defines is refused
// (InvalidRuleConfigurationException), then checkDefinitions.
func createRule(d rule.Database, c map[string]any, st *CreateRule) (map[string]any, error) {
	names := ruleNames(st.Rules)
	todo, err := named.Create(d.Name, rule.Map(c[dataSources]), names, st.IfNotExists)
	if err != nil {
		return nil, err
	}
	var clash []string
	for _, n := range names {
		if slices.Contains(logicalSources(d), n) {
			clash = append(clash, n)
		}
	}
	if len(clash) > 0 {
		return nil, rule.InvalidRule("shadow", rule.JavaList(clash), rule.JavaList(clash)+" already exists in storage unit")
	}
	if err := checkDefinitions(d, st.Rules); err != nil {
		return nil, err
	}
	for _, def := range st.Rules {
		if slices.Contains(todo, def.Name) {
			put(c, def)
		}
	}
	return rule.Prune(c), nil
}

// alterRule is ALTER SHADOW RULE: a name given twice is a duplicate, one
// the rule does not have is missing (MissingRequiredRuleException), then
// checkDefinitions; each rule's data sources and tables are replaced, and
// the algorithms nothing uses any more go.
func alterRule(d rule.Database, c map[string]any, st *AlterRule) (map[string]any, error) {
	if _, err := named.Alter(d.Name, rule.Map(c[dataSources]), ruleNames(st.Rules)); err != nil {
		return nil, err
	}
	if err := checkDefinitions(d, st.Rules); err != nil {
		return nil, err
	}
	for _, def := range st.Rules {
		removeFromTables(c, def.Name)
		put(c, def)
	}
	dropUnusedAlgorithms(c)
	return rule.Prune(c), nil
}

// dropRule is DROP SHADOW RULE: a name the rule does not have is refused
// (MissingRequiredRuleException, 10202) unless IF EXISTS; the tables no
// rule names any more and the algorithms nothing uses go with the rules.
func dropRule(d rule.Database, c map[string]any, st *DropRule) (map[string]any, error) {
	keys, err := named.Drop(d.Name, rule.Map(c[dataSources]), st.Names, st.IfExists)
	if err != nil || len(keys) == 0 {
		return c, err
	}
	for _, k := range keys {
		delete(rule.Map(c[dataSources]), k)
		removeFromTables(c, k)
	}
	dropUnusedAlgorithms(c)
	return rule.Prune(c), nil
}

// dropAlgorithm is DROP SHADOW ALGORITHM: without IF EXISTS, an algorithm
// the rule does not have is refused (MissingRequiredAlgorithmException),
// and one a table with data sources uses, or the default, is in use
// (InUsedAlgorithmException, 10403); the algorithms go, and so do the
// tables left without algorithms and data sources.
func dropAlgorithm(d rule.Database, c map[string]any, st *DropAlgorithm) (map[string]any, error) {
	algs := rule.Map(c[algorithms])
	if !st.IfExists {
		var absent, inUse []string
		for _, n := range st.Names {
			if _, ok := algs[n]; !ok && !slices.Contains(absent, n) {
				absent = append(absent, n)
			}
		}
		if len(absent) > 0 {
			return nil, rule.MissingAlgorithm("shadow", d.Name, absent)
		}
		for _, t := range rule.Map(c[tables]) {
			tm := rule.Map(t)
			if len(rule.List(tm[tableUnits])) == 0 {
				continue
			}
			for _, n := range rule.List(tm[tableAlgs]) {
				if slices.Contains(st.Names, n) && !slices.Contains(inUse, n) {
					inUse = append(inUse, n)
				}
			}
		}
		slices.Sort(inUse)
		if len(inUse) > 0 {
			return nil, rule.AlgorithmInUse("Shadow", d.Name, inUse)
		}
		if def := rule.Text(c[defaultName]); def != "" && slices.Contains(st.Names, def) {
			return nil, rule.AlgorithmInUse("Shadow", d.Name, []string{def})
		}
	}
	changed := false
	for _, n := range st.Names {
		if _, ok := algs[n]; ok {
			delete(algs, n)
			changed = true
		}
	}
	if !changed {
		return c, nil
	}
	for name, t := range rule.Map(c[tables]) {
		tm := rule.Map(t)
		algs := rule.List(tm[tableAlgs])
		left := slices.DeleteFunc(slices.Clone(algs), func(n string) bool { return slices.Contains(st.Names, n) })
		if len(left) == len(algs) {
			continue
		}
		if len(left) == 0 && len(rule.List(tm[tableUnits])) == 0 {
			delete(rule.Map(c[tables]), name)
			continue
		}
		tm = maps.Clone(tm) // replaced, not changed in place
		tm[tableAlgs] = rule.AnyList(left)
		rule.Map(c[tables])[name] = tm
	}
	if slices.Contains(st.Names, rule.Text(c[defaultName])) {
		delete(c, defaultName)
	}
	return rule.Prune(c), nil
}

func ruleNames(defs []Definition) []string {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	return names
}

// removeFromTables removes rule name from every table's data sources; a
// table no rule names any more goes. A table it changes is replaced by a
// changed copy (c's entries are the rule's as read, see
// config.CopyFields).
func removeFromTables(c map[string]any, name string) {
	ts := rule.Map(c[tables])
	for t, v := range ts {
		tm := rule.Map(v)
		units := rule.List(tm[tableUnits])
		left := slices.DeleteFunc(slices.Clone(units), func(n string) bool { return n == name })
		if len(left) == 0 {
			delete(ts, t)
			continue
		}
		if len(left) < len(units) {
			tm = maps.Clone(tm)
			tm[tableUnits] = rule.AnyList(left)
			ts[t] = tm
		}
	}
}

// used returns the algorithms c's tables and default name.
func used(c map[string]any) map[string]bool {
	out := map[string]bool{}
	for _, t := range rule.Map(c[tables]) {
		for _, n := range rule.List(rule.Map(t)[tableAlgs]) {
			out[n] = true
		}
	}
	if n := rule.Text(c[defaultName]); n != "" {
		out[n] = true
	}
	return out
}

// dropUnusedAlgorithms removes the algorithms nothing in c names, as
// upstream's UnusedAlgorithmFinder finds them.
func dropUnusedAlgorithms(c map[string]any) {
	u := used(c)
	algs := rule.Map(c[algorithms])
	for n := range algs {
		if !u[n] {
			delete(algs, n)
		}
	}
}

// Show answers the family's queries with upstream's columns
// (ShowShadowRuleExecutor, ShowShadowTableRulesExecutor,
// ShowShadowAlgorithmsExecutor, ShowDefaultShadowAlgorithmExecutor).
func (family) Show(_ context.Context, st distsql.Statement, read rule.Read) (rule.Rows, bool, error) {
	return rule.ShowContent(st, read, show)
}

func show(st distsql.Statement, c map[string]any) (rule.Rows, bool) {
	algs := rule.Map(c[algorithms])
	switch st := st.(type) {
	case *ShowRules:
		rows := rule.Rows{Columns: []string{"shadow_table", "rule_name", "source_name", "shadow_name", "algorithm_type", "algorithm_props"}, Rows: [][]string{}}
		sources := rule.Map(c[dataSources])
		ts := rule.Map(c[tables])
		for _, name := range rule.SortedKeys(sources) {
			if st.Rule != "" && !strings.EqualFold(st.Rule, name) {
				continue
			}
			ds := rule.Map(sources[name])
			for _, t := range rule.SortedKeys(ts) {
				tm := rule.Map(ts[t])
				if !slices.Contains(rule.List(tm[tableUnits]), name) {
					continue
				}
				for _, a := range rule.List(tm[tableAlgs]) {
					alg := rule.Map(algs[a])
					rows.Rows = append(rows.Rows, []string{t, name, rule.Text(ds[production]), rule.Text(ds[shadowUnit]), rule.Text(alg["type"]), rule.PropsText(alg["props"])})
				}
			}
		}
		return rows, true
	case *ShowTableRules:
		rows := rule.Rows{Columns: []string{"shadow_table", "shadow_algorithm_name"}, Rows: [][]string{}}
		ts := rule.Map(c[tables])
		for _, t := range rule.SortedKeys(ts) {
			if st.Table == "" || strings.EqualFold(st.Table, t) {
				rows.Rows = append(rows.Rows, []string{t, strings.Join(rule.List(rule.Map(ts[t])[tableAlgs]), ",")})
			}
		}
		return rows, true
	case *ShowAlgorithms:
		rows := rule.Rows{Columns: []string{"shadow_algorithm_name", "type", "props", "is_default"}, Rows: [][]string{}}
		def := rule.Text(c[defaultName])
		for _, n := range rule.SortedKeys(algs) {
			alg := rule.Map(algs[n])
			rows.Rows = append(rows.Rows, []string{n, rule.Text(alg["type"]), rule.PropsText(alg["props"]), fmt.Sprint(n == def)})
		}
		return rows, true
	case *ShowDefaultAlgorithm:
		rows := rule.Rows{Columns: []string{"shadow_algorithm_name", "type", "props"}, Rows: [][]string{}}
		if def := rule.Text(c[defaultName]); def != "" {
			if alg := rule.Map(algs[def]); alg != nil {
				rows.Rows = append(rows.Rows, []string{def, rule.Text(alg["type"]), rule.PropsText(alg["props"])})
			}
		}
		return rows, true
	}
	return rule.Rows{}, false
}

// Check checks c as upstream's ShadowRuleConfigurationChecker does: each
// data source's production and shadow units exist (10102), every
// algorithm a table or the default names is defined (10402), each
// algorithm's type and props are fine.
func (family) Check(_ context.Context, d rule.Database, c map[string]any) ([]*sqlerr.Error, error) {
	var errs []*sqlerr.Error
	var missing []string
	sources := rule.Map(c[dataSources])
	for _, name := range rule.SortedKeys(sources) {
		ds := rule.Map(sources[name])
		for _, u := range []string{rule.Text(ds[production]), rule.Text(ds[shadowUnit])} {
			if u != "" && !d.Sources[u] && !slices.Contains(missing, u) {
				missing = append(missing, u)
			}
		}
	}
	if len(missing) > 0 {
		errs = append(errs, rule.MissingStorageUnits(d.Name, missing))
	}
	errs = append(errs, rule.CheckAlgorithms(d.Name, "shadow", rule.Map(c[algorithms]), Algorithms.Types(), Algorithms)...)
	algs := rule.Map(c[algorithms])
	ts := rule.Map(c[tables])
	for _, t := range rule.SortedKeys(ts) {
		for _, n := range rule.List(rule.Map(ts[t])[tableAlgs]) {
			if _, ok := algs[n]; !ok {
				errs = append(errs, rule.UnregisteredAlgorithm("shadow", n, d.Name+"."+t))
			}
		}
	}
	if n := rule.Text(c[defaultName]); n != "" && algs[n] == nil {
		errs = append(errs, rule.UnregisteredAlgorithm("shadow", n, d.Name))
	}
	return errs, nil
}

// Units: each data source uses its production and shadow units.
func (family) Units(_ rule.Database, c map[string]any) []rule.Use {
	sources := rule.Map(c[dataSources])
	var out []rule.Use
	for _, name := range rule.SortedKeys(sources) {
		ds := rule.Map(sources[name])
		var units []string
		for _, u := range []string{rule.Text(ds[production]), rule.Text(ds[shadowUnit])} {
			if u != "" {
				units = append(units, u)
			}
		}
		out = append(out, rule.Use{Item: name, Units: units})
	}
	return out
}

// Defines: the rule's data sources are logical data sources.
func (family) Defines(c map[string]any) []string { return rule.SortedKeys(rule.Map(c[dataSources])) }

// Count: one per data source, as upstream's ShadowCountResultRowBuilder
// counts.
func (family) Count(_ context.Context, _ rule.Database, c map[string]any) ([]rule.Counted, error) {
	if c == nil {
		return nil, nil
	}
	return []rule.Counted{{Rule: "shadow", Count: len(rule.Map(c[dataSources]))}}, nil
}

// Convert: CONVERT YAML CONFIGURATION leaves the rule out, as upstream's
// converter does.
func (family) Convert(map[string]any) ([]string, bool) { return nil, false }

// Items: the data sources, tables and algorithms one item each, the
// default algorithm's name as it is.
func (family) Items() rule.Items {
	return rule.Items{Named: []string{"dataSources", "tables", "shadowAlgorithms"}, Raw: []string{"defaultShadowAlgorithmName"}}
}

// Upstream: the registry holds the content as it is.
func (family) Upstream(paths.Layout, map[string]any) error { return nil }
