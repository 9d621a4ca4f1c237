package sharding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// The sharding rule's queries, with upstream's columns: SHOW SHARDING
// TABLE RULE(S), ALGORITHMS, KEY GENERATORS, AUDITORS, TABLE REFERENCE
// RULES, DEFAULT SHARDING STRATEGY, KEY GENERATE STRATEGIES, UNUSED
// SHARDING ALGORITHMS / KEY GENERATORS / AUDITORS, TABLE RULES USED and
// TABLE NODES. A database without the rule answers no rows, as upstream's
// rule-aware executors do.

var tableRuleColumns = []string{"table", "actual_data_nodes", "actual_data_sources", "database_strategy_type",
	"database_sharding_column", "database_sharding_algorithm_type", "database_sharding_algorithm_props", "table_strategy_type",
	"table_sharding_column", "table_sharding_algorithm_type", "table_sharding_algorithm_props", "key_generate_column",
	"key_generator_type", "key_generator_props", "auditor_types", "allow_hint_disable"}

// Show answers the rule's queries from the statement's database's
// sharding rule (see the columns above); ok is false, with nothing read,
// for any other statement. ctx bounds SHOW SHARDING TABLE NODES' expansion.
func (family) Show(ctx context.Context, st distsql.Statement, read rule.Read) (rule.Rows, bool, error) {
	switch st.(type) {
	case *ShowTableRules, *ShowAlgorithms, *ShowKeyGenerators, *ShowAuditors, *ShowTableReferenceRules, *ShowDefaultStrategy,
		*ShowKeyGenerateStrategies, *ShowUnusedAlgorithms, *ShowUnusedKeyGenerators, *ShowUnusedAuditors, *ShowTableRulesUsed, *ShowTableNodes:
	default:
		return rule.Rows{}, false, nil
	}
	_, c, err := read()
	if err != nil {
		return rule.Rows{}, true, err
	}
	switch st := st.(type) {
	case *ShowTableRules:
		return showTableRules(c, st), true, nil
	case *ShowAlgorithms:
		return named(c, "shardingAlgorithms", nil), true, nil
	case *ShowKeyGenerators:
		return named(c, "keyGenerators", nil), true, nil
	case *ShowAuditors:
		return named(c, "auditors", nil), true, nil
	case *ShowUnusedAlgorithms:
		algs, _, _ := inUse(c)
		return named(c, "shardingAlgorithms", algs), true, nil
	case *ShowUnusedKeyGenerators:
		_, gens, _ := inUse(c)
		return named(c, "keyGenerators", gens), true, nil
	case *ShowUnusedAuditors:
		_, _, auditors := inUse(c)
		return named(c, "auditors", auditors), true, nil
	case *ShowTableReferenceRules:
		return showTableReferenceRules(c, st), true, nil
	case *ShowDefaultStrategy:
		return showDefaultStrategy(c), true, nil
	case *ShowKeyGenerateStrategies:
		return showKeyGenerateStrategies(c, st), true, nil
	case *ShowTableRulesUsed:
		return showTableRulesUsed(c, st), true, nil
	case *ShowTableNodes:
		rows, err := showTableNodes(ctx, c, st)
		return rows, true, err
	}
	return rule.Rows{}, false, nil
}

// Count is COUNT SHARDING RULE: the tables and auto tables
// (sharding_table) and the table references (sharding_table_reference);
// none for a database without the rule.
func (family) Count(_ context.Context, _ rule.Database, c map[string]any) ([]rule.Counted, error) {
	if c == nil {
		return nil, nil
	}
	return []rule.Counted{
		{Rule: "sharding_table", Count: len(rule.Map(c["tables"])) + len(rule.Map(c["autoTables"]))},
		{Rule: "sharding_table_reference", Count: len(rule.Values(c["bindingTables"]))},
	}, nil
}

// shownStrategy reads a strategy map ({standard: {...}}, {complex: ...},
// {hint: ...}, {none: ...}): its type, sharding column(s) and algorithm.
type shownStrategy struct {
	typ, column, algorithm string
	present                bool
}

func readStrategy(v any) shownStrategy {
	m := rule.Map(v)
	for _, typ := range []string{"standard", "complex", "hint", "none"} {
		if body, ok := m[typ]; ok {
			b := rule.Map(body)
			col := rule.Text(b["shardingColumn"])
			if typ == "complex" {
				col = rule.Text(b["shardingColumns"])
			}
			return shownStrategy{typ: strings.ToUpper(typ), column: col, algorithm: rule.Text(b["shardingAlgorithmName"]), present: true}
		}
	}
	return shownStrategy{}
}

func showTableRules(content map[string]any, st *ShowTableRules) rule.Rows {
	res := rule.Rows{Columns: tableRuleColumns, Rows: [][]string{}}
	if content == nil {
		return res
	}
	algorithms := rule.Map(content["shardingAlgorithms"])
	generators := rule.Map(content["keyGenerators"])
	auditors := rule.Map(content["auditors"])
	strategyCells := func(sc shownStrategy) (typ, col, algType, algProps string) {
		if !sc.present {
			return "", "", "", ""
		}
		if sc.typ == "NONE" {
			// Upstream's NoneShardingStrategyConfiguration has an empty
			// type: the e2e datasets show empty cells for a none strategy.
			return "", "", "", ""
		}
		alg := rule.Map(algorithms[sc.algorithm])
		return sc.typ, sc.column, rule.Text(alg["type"]), rule.PropsText(alg["props"])
	}
	pick := func(own, def any) any {
		if own != nil {
			return own
		}
		return def
	}
	// ownKey is a table's key generate strategy: its keyGenerateStrategy,
	// or (5.5.4 layout) the rule-level column strategy naming the table,
	// as a {column, keyGeneratorName} map.
	ownKey := func(name string, t map[string]any) any {
		if ks := t["keyGenerateStrategy"]; ks != nil {
			return ks
		}
		strategies := rule.Map(content["keyGenerateStrategies"])
		for _, sn := range rule.SortedKeys(strategies) {
			ks := rule.Map(strategies[sn])
			if strings.EqualFold(rule.Text(ks["logicTable"]), name) && !strings.EqualFold(rule.Text(ks["keyGenerateType"]), "sequence") {
				return map[string]any{"column": ks["keyGenerateColumn"], "keyGeneratorName": ks["keyGeneratorName"]}
			}
		}
		return nil
	}
	keyCells := func(ks any) (col, typ, props string) {
		k := rule.Map(ks)
		if k == nil {
			return "", "", ""
		}
		gen := rule.Map(generators[rule.Text(k["keyGeneratorName"])])
		return rule.Text(k["column"]), rule.Text(gen["type"]), rule.PropsText(gen["props"])
	}
	auditCells := func(as any) (types, allow string) {
		a := rule.Map(as)
		if a == nil {
			return "", ""
		}
		var list []string
		if names, ok := a["auditorNames"].([]any); ok {
			for _, n := range names {
				list = append(list, rule.Text(rule.Map(auditors[rule.Text(n)])["type"]))
			}
		}
		allowHint := "false"
		if b, ok := a["allowHintDisable"].(bool); ok && b {
			allowHint = "true"
		}
		return strings.Join(list, ","), allowHint
	}
	match := func(name string) bool { return st.Table == "" || strings.EqualFold(st.Table, name) }
	tables := rule.Map(content["tables"])
	for _, name := range rule.SortedKeys(tables) {
		if !match(name) {
			continue
		}
		t := rule.Map(tables[name])
		dbType, dbCol, dbAlg, dbProps := strategyCells(readStrategy(pick(t["databaseStrategy"], content["defaultDatabaseStrategy"])))
		tType, tCol, tAlg, tProps := strategyCells(readStrategy(pick(t["tableStrategy"], content["defaultTableStrategy"])))
		kCol, kType, kProps := keyCells(pick(ownKey(name, t), content["defaultKeyGenerateStrategy"]))
		aTypes, aAllow := auditCells(pick(t["auditStrategy"], content["defaultAuditStrategy"]))
		res.Rows = append(res.Rows, []string{name, rule.Text(t["actualDataNodes"]), "", dbType, dbCol, dbAlg, dbProps,
			tType, tCol, tAlg, tProps, kCol, kType, kProps, aTypes, aAllow})
	}
	autoTables := rule.Map(content["autoTables"])
	for _, name := range rule.SortedKeys(autoTables) {
		if !match(name) {
			continue
		}
		t := rule.Map(autoTables[name])
		tType, tCol, tAlg, tProps := strategyCells(readStrategy(pick(t["shardingStrategy"], content["defaultTableStrategy"])))
		kCol, kType, kProps := keyCells(pick(ownKey(name, t), content["defaultKeyGenerateStrategy"]))
		aTypes, aAllow := auditCells(pick(t["auditStrategy"], content["defaultAuditStrategy"]))
		res.Rows = append(res.Rows, []string{name, "", rule.Text(t["actualDataSources"]), "", "", "", "",
			tType, tCol, tAlg, tProps, kCol, kType, kProps, aTypes, aAllow})
	}
	return res
}

// named lists a name -> {type, props} section of the rule, leaving out
// the names in skip (those in use, for the UNUSED queries).
func named(content map[string]any, section string, skip map[string]bool) rule.Rows {
	res := rule.Rows{Columns: []string{"name", "type", "props"}, Rows: [][]string{}}
	algs := rule.Map(content[section])
	for _, name := range rule.SortedKeys(algs) {
		if skip[name] {
			continue
		}
		a := rule.Map(algs[name])
		res.Rows = append(res.Rows, []string{name, rule.Text(a["type"]), rule.PropsText(a["props"])})
	}
	return res
}

func showTableReferenceRules(content map[string]any, st *ShowTableReferenceRules) rule.Rows {
	res := rule.Rows{Columns: []string{"name", "sharding_table_reference"}, Rows: [][]string{}}
	for _, b := range rule.Values(content["bindingTables"]) {
		name, tables := BindingParts(rule.Text(b))
		if st.Name == "" || strings.EqualFold(st.Name, name) {
			res.Rows = append(res.Rows, []string{name, strings.Join(tables, ",")})
		}
	}
	return res
}

func showDefaultStrategy(content map[string]any) rule.Rows {
	res := rule.Rows{Columns: []string{"name", "type", "sharding_column", "sharding_algorithm_name", "sharding_algorithm_type", "sharding_algorithm_props"}, Rows: [][]string{}}
	if content == nil {
		return res
	}
	for _, d := range []struct{ name, field string }{{"TABLE", "defaultTableStrategy"}, {"DATABASE", "defaultDatabaseStrategy"}} {
		sc := readStrategy(content[d.field])
		if !sc.present || sc.typ == "NONE" {
			res.Rows = append(res.Rows, []string{d.name, sc.typ, "", "", "", ""})
			continue
		}
		alg := rule.Map(rule.Map(content["shardingAlgorithms"])[sc.algorithm])
		res.Rows = append(res.Rows, []string{d.name, sc.typ, sc.column, sc.algorithm, rule.Text(alg["type"]), rule.PropsText(alg["props"])})
	}
	return res
}

func showKeyGenerateStrategies(content map[string]any, st *ShowKeyGenerateStrategies) rule.Rows {
	res := rule.Rows{Columns: []string{"name", "type", "table", "column", "sequence", "generator_name", "generator_type", "generator_props"}, Rows: [][]string{}}
	strategies := rule.Map(content["keyGenerateStrategies"])
	gens := rule.Map(content["keyGenerators"])
	for _, name := range rule.SortedKeys(strategies) {
		if st.Name != "" && !strings.EqualFold(st.Name, name) {
			continue
		}
		ks := rule.Map(strategies[name])
		gen := rule.Map(gens[rule.Text(ks["keyGeneratorName"])])
		res.Rows = append(res.Rows, []string{name, strings.ToLower(rule.Text(ks["keyGenerateType"])), rule.Text(ks["logicTable"]), rule.Text(ks["keyGenerateColumn"]),
			rule.Text(ks["keyGenerateSequence"]), rule.Text(ks["keyGeneratorName"]), rule.Text(gen["type"]), rule.PropsText(gen["props"])})
	}
	return res
}

func showTableNodes(ctx context.Context, content map[string]any, st *ShowTableNodes) (rule.Rows, error) {
	res := rule.Rows{Columns: []string{"name", "nodes"}, Rows: [][]string{}}
	match := func(name string) bool { return st.Table == "" || strings.EqualFold(st.Table, name) }
	tables := rule.Map(content["tables"])
	// At most inline.MaxRuleNames nodes are built in all (a rule another
	// node wrote may stand for more): a table past them, or past
	// inline.MaxNames alone, is shown as written.
	left := inline.MaxRuleNames
	for _, name := range rule.SortedKeys(tables) {
		if !match(name) {
			continue
		}
		if err := ctx.Err(); err != nil { // KILL, or the client gone
			return rule.Rows{}, err
		}
		expr := rule.Text(rule.Map(tables[name])["actualDataNodes"])
		nodes, err := inline.Expand(expr, min(inline.MaxNames, left))
		if errors.Is(err, inline.ErrTooMany) {
			nodes = []string{expr} // more than may be built: as written
		} else {
			left -= len(nodes)
		}
		res.Rows = append(res.Rows, []string{name, strings.Join(nodes, ", ")})
	}
	auto := rule.Map(content["autoTables"])
	for _, name := range rule.SortedKeys(auto) {
		if !match(name) {
			continue
		}
		t := rule.Map(auto[name])
		sources, _ := inline.Expand(rule.Text(t["actualDataSources"]), inline.MaxNames)
		alg := rule.Map(rule.Map(content["shardingAlgorithms"])[readStrategy(t["shardingStrategy"]).algorithm])
		n := min(autoShardingCount(alg), inline.MaxNames) // a stored count is not trusted
		var nodes []string
		for i := 0; i < n && len(sources) > 0; i++ {
			nodes = append(nodes, fmt.Sprintf("%s.%s_%d", sources[i%len(sources)], name, i))
		}
		res.Rows = append(res.Rows, []string{name, strings.Join(nodes, ", ")})
	}
	return res, nil
}

// autoShardingCount is the number of actual tables an auto-table
// algorithm makes (0 when this node cannot tell).
func autoShardingCount(alg map[string]any) int {
	props := rule.Map(alg["props"])
	atoi := func(k string) int {
		n, _ := strconv.Atoi(strings.TrimSpace(rule.Text(props[k])))
		return n
	}
	switch strings.ToUpper(rule.Text(alg["type"])) {
	case "MOD", "HASH_MOD":
		return atoi("sharding-count")
	case "BOUNDARY_RANGE":
		return len(strings.Split(rule.Text(props["sharding-ranges"]), ",")) + 1
	case "VOLUME_RANGE":
		lo, hi, v := atoi("range-lower"), atoi("range-upper"), atoi("sharding-volume")
		if v <= 0 || hi < lo {
			return 0
		}
		return (hi-lo)/v + 2
	}
	return 0
}

// showTableRulesUsed lists the tables ("table") and auto tables
// ("auto_table") whose own strategies, key generate strategy (theirs, or a
// 5.5.4 rule-level column strategy naming the table) or audit strategy
// name st.Name, as upstream's ShowShardingTableRulesUsed*Executor.
func showTableRulesUsed(content map[string]any, st *ShowTableRulesUsed) rule.Rows {
	res := rule.Rows{Columns: []string{"type", "name"}, Rows: [][]string{}}
	for _, f := range []struct{ field, typ string }{{"tables", "table"}, {"autoTables", "auto_table"}} {
		tables := rule.Map(content[f.field])
		for _, name := range rule.SortedKeys(tables) {
			algs, gens, auditors := usedNames(map[string]any{"": rule.Map(tables[name])})
			names := algs
			switch st.Kind {
			case "KEY GENERATOR":
				names = append(gens, strategyGenerators(content, name)...)
			case "AUDITOR":
				names = auditors
			}
			if slices.Contains(names, st.Name) {
				res.Rows = append(res.Rows, []string{f.typ, name})
			}
		}
	}
	return res
}

// strategyGenerators returns the key generators of the rule-level (5.5.4)
// column key generate strategies of table.
func strategyGenerators(content map[string]any, table string) []string {
	var out []string
	strategies := rule.Map(content["keyGenerateStrategies"])
	for _, sn := range rule.SortedKeys(strategies) {
		ks := rule.Map(strategies[sn])
		if strings.EqualFold(rule.Text(ks["logicTable"]), table) && !strings.EqualFold(rule.Text(ks["keyGenerateType"]), "sequence") {
			if g := rule.Text(ks["keyGeneratorName"]); g != "" {
				out = append(out, g)
			}
		}
	}
	return out
}
