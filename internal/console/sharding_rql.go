package console

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

func listOf(v any) []any {
	l, _ := v.([]any)
	return l
}

// The sharding and broadcast rule queries beyond sharding.go's, with
// upstream's columns: SHOW SHARDING TABLE REFERENCE RULES, SHOW DEFAULT
// SHARDING STRATEGY, SHOW SHARDING KEY GENERATE STRATEGIES, SHOW UNUSED
// SHARDING ALGORITHMS / KEY GENERATORS, SHOW SHARDING TABLE NODES, SHOW
// BROADCAST TABLE RULES, COUNT SHARDING RULE and COUNT BROADCAST RULE. A
// database without the rule answers no rows, as upstream's rule-aware
// executors do.

func (e *Engine) showShardingTableReferenceRules(_ context.Context, s *Session, st *distsql.ShowShardingTableReferenceRules) (*Result, error) {
	rule, err := e.shardingRule(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("name", "sharding_table_reference"), Rows: [][]*string{}}
	for _, b := range listOf(rule["bindingTables"]) {
		name, tables := rules.BindingParts(rules.Text(b))
		if st.Name == "" || strings.EqualFold(st.Name, name) {
			res.Rows = append(res.Rows, strs(name, strings.Join(tables, ",")))
		}
	}
	return res, nil
}

func (e *Engine) showDefaultShardingStrategy(_ context.Context, s *Session, st *distsql.ShowDefaultShardingStrategy) (*Result, error) {
	rule, err := e.shardingRule(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("name", "type", "sharding_column", "sharding_algorithm_name", "sharding_algorithm_type", "sharding_algorithm_props"), Rows: [][]*string{}}
	if rule == nil {
		return res, nil
	}
	for _, d := range []struct{ name, field string }{{"TABLE", "defaultTableStrategy"}, {"DATABASE", "defaultDatabaseStrategy"}} {
		sc := readStrategy(rule[d.field])
		if !sc.present || sc.typ == "NONE" {
			res.Rows = append(res.Rows, strs(d.name, sc.typ, "", "", "", ""))
			continue
		}
		alg := rules.Map(rules.Map(rule["shardingAlgorithms"])[sc.algorithm])
		res.Rows = append(res.Rows, strs(d.name, sc.typ, sc.column, sc.algorithm, rules.Text(alg["type"]), propsJSON(alg["props"])))
	}
	return res, nil
}

func (e *Engine) showShardingKeyGenerateStrategies(_ context.Context, s *Session, st *distsql.ShowShardingKeyGenerateStrategies) (*Result, error) {
	rule, err := e.shardingRule(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("name", "type", "table", "column", "sequence", "generator_name", "generator_type", "generator_props"), Rows: [][]*string{}}
	strategies := rules.Map(rule["keyGenerateStrategies"])
	gens := rules.Map(rule["keyGenerators"])
	for _, name := range sortedKeys(strategies) {
		if st.Name != "" && !strings.EqualFold(st.Name, name) {
			continue
		}
		ks := rules.Map(strategies[name])
		gen := rules.Map(gens[rules.Text(ks["keyGeneratorName"])])
		res.Rows = append(res.Rows, strs(name, strings.ToLower(rules.Text(ks["keyGenerateType"])), rules.Text(ks["logicTable"]), rules.Text(ks["keyGenerateColumn"]),
			rules.Text(ks["keyGenerateSequence"]), rules.Text(ks["keyGeneratorName"]), rules.Text(gen["type"]), propsJSON(gen["props"])))
	}
	return res, nil
}

// unused lists the entries of section (name -> {type, props}) that the
// rule does not use.
func (e *Engine) unused(s *Session, from, section string) (*Result, error) {
	rule, err := e.shardingRule(s, from)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("name", "type", "props"), Rows: [][]*string{}}
	algs, gens, auditors := rules.InUse(rule)
	used := algs
	switch section {
	case "keyGenerators":
		used = gens
	case "auditors":
		used = auditors
	}
	m := rules.Map(rule[section])
	for _, name := range sortedKeys(m) {
		if !used[name] {
			a := rules.Map(m[name])
			res.Rows = append(res.Rows, strs(name, rules.Text(a["type"]), propsJSON(a["props"])))
		}
	}
	return res, nil
}

func (e *Engine) showShardingTableNodes(_ context.Context, s *Session, st *distsql.ShowShardingTableNodes) (*Result, error) {
	rule, err := e.shardingRule(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("name", "nodes"), Rows: [][]*string{}}
	match := func(name string) bool { return st.Table == "" || strings.EqualFold(st.Table, name) }
	tables := rules.Map(rule["tables"])
	for _, name := range sortedKeys(tables) {
		if !match(name) {
			continue
		}
		expr := rules.Text(rules.Map(tables[name])["actualDataNodes"])
		nodes, err := inline.Expand(expr, inline.MaxNames)
		if errors.Is(err, inline.ErrTooMany) {
			nodes = []string{expr} // more than a rule may hold: as written
		}
		res.Rows = append(res.Rows, strs(name, strings.Join(nodes, ", ")))
	}
	auto := rules.Map(rule["autoTables"])
	for _, name := range sortedKeys(auto) {
		if !match(name) {
			continue
		}
		t := rules.Map(auto[name])
		sources, _ := inline.Expand(rules.Text(t["actualDataSources"]), inline.MaxNames)
		alg := rules.Map(rules.Map(rule["shardingAlgorithms"])[readStrategy(t["shardingStrategy"]).algorithm])
		n := min(autoShardingCount(alg), inline.MaxNames) // a stored count is not trusted
		var nodes []string
		for i := 0; i < n && len(sources) > 0; i++ {
			nodes = append(nodes, fmt.Sprintf("%s.%s_%d", sources[i%len(sources)], name, i))
		}
		res.Rows = append(res.Rows, strs(name, strings.Join(nodes, ", ")))
	}
	return res, nil
}

// autoShardingCount is the number of actual tables an auto-table
// algorithm makes (0 when this node cannot tell).
func autoShardingCount(alg map[string]any) int {
	props := rules.Map(alg["props"])
	atoi := func(k string) int {
		n, _ := strconv.Atoi(strings.TrimSpace(rules.Text(props[k])))
		return n
	}
	switch strings.ToUpper(rules.Text(alg["type"])) {
	case "MOD", "HASH_MOD":
		return atoi("sharding-count")
	case "BOUNDARY_RANGE":
		return len(strings.Split(rules.Text(props["sharding-ranges"]), ",")) + 1
	case "VOLUME_RANGE":
		lo, hi, v := atoi("range-lower"), atoi("range-upper"), atoi("sharding-volume")
		if v <= 0 || hi < lo {
			return 0
		}
		return (hi-lo)/v + 2
	}
	return 0
}

func (e *Engine) broadcastTables(s *Session, from string) (string, []any, bool, error) {
	db, err := e.database(s, from)
	if err != nil {
		return "", nil, false, err
	}
	r, ok := db.Rules["broadcast"]
	return db.Name, listOf(r.Content["tables"]), ok, nil
}

func (e *Engine) showBroadcastTableRules(_ context.Context, s *Session, st *distsql.ShowBroadcastTableRules) (*Result, error) {
	_, tables, _, err := e.broadcastTables(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("broadcast_table"), Rows: [][]*string{}}
	for _, t := range tables {
		res.Rows = append(res.Rows, strs(rules.Text(t)))
	}
	return res, nil
}

var countColumns = []Column{{Name: "rule_name"}, {Name: "database"}, {Name: "count", Type: Int64}}

func (e *Engine) countShardingRule(_ context.Context, s *Session, st *distsql.CountShardingRule) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: countColumns, Rows: [][]*string{}}
	r, ok := db.Rules["sharding"]
	if !ok {
		return res, nil
	}
	tables := len(rules.Map(r.Content["tables"])) + len(rules.Map(r.Content["autoTables"]))
	res.Rows = append(res.Rows,
		strs("sharding_table", db.Name, strconv.Itoa(tables)),
		strs("sharding_table_reference", db.Name, strconv.Itoa(len(listOf(r.Content["bindingTables"])))))
	return res, nil
}

func (e *Engine) countBroadcastRule(_ context.Context, s *Session, st *distsql.CountBroadcastRule) (*Result, error) {
	name, tables, ok, err := e.broadcastTables(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: countColumns, Rows: [][]*string{}}
	if ok {
		res.Rows = append(res.Rows, strs("broadcast_table", name, strconv.Itoa(len(tables))))
	}
	return res, nil
}

// showShardingTableRulesUsed lists the tables ("table") and auto tables
// ("auto_table") whose own strategies, key generate strategy (theirs, or a
// 5.5.4 rule-level column strategy naming the table) or audit strategy
// name st.Name, as upstream's ShowShardingTableRulesUsed*Executor.
func (e *Engine) showShardingTableRulesUsed(_ context.Context, s *Session, st *distsql.ShowShardingTableRulesUsed) (*Result, error) {
	rule, err := e.shardingRule(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("type", "name"), Rows: [][]*string{}}
	for _, f := range []struct{ field, typ string }{{"tables", "table"}, {"autoTables", "auto_table"}} {
		tables := rules.Map(rule[f.field])
		for _, name := range sortedKeys(tables) {
			algs, gens, auditors := rules.UsedBy(rules.Map(tables[name]))
			names := algs
			switch st.Kind {
			case "KEY GENERATOR":
				names = append(gens, strategyGenerators(rule, name)...)
			case "AUDITOR":
				names = auditors
			}
			if slices.Contains(names, st.Name) {
				res.Rows = append(res.Rows, strs(f.typ, name))
			}
		}
	}
	return res, nil
}

// strategyGenerators returns the key generators of the rule-level (5.5.4)
// column key generate strategies of table.
func strategyGenerators(rule map[string]any, table string) []string {
	var out []string
	strategies := rules.Map(rule["keyGenerateStrategies"])
	for _, sn := range sortedKeys(strategies) {
		ks := rules.Map(strategies[sn])
		if strings.EqualFold(rules.Text(ks["logicTable"]), table) && !strings.EqualFold(rules.Text(ks["keyGenerateType"]), "sequence") {
			if g := rules.Text(ks["keyGeneratorName"]); g != "" {
				out = append(out, g)
			}
		}
	}
	return out
}
