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
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

// The sharding rule queries beyond sharding.go's, with upstream's
// columns: SHOW SHARDING TABLE REFERENCE RULES, SHOW DEFAULT SHARDING
// STRATEGY, SHOW SHARDING KEY GENERATE STRATEGIES, SHOW UNUSED SHARDING
// ALGORITHMS / KEY GENERATORS, SHOW SHARDING TABLE NODES and COUNT
// SHARDING RULE (the broadcast rule's are its family's). A
// database without the rule answers no rows, as upstream's rule-aware
// executors do.

func (e *Engine) showShardingTableReferenceRules(_ context.Context, s *Session, st *distsql.ShowShardingTableReferenceRules) (*Result, error) {
	content, err := e.shardingRule(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("name", "sharding_table_reference"), Rows: [][]*string{}}
	for _, b := range rule.Values(content["bindingTables"]) {
		name, tables := rules.BindingParts(rule.Text(b))
		if st.Name == "" || strings.EqualFold(st.Name, name) {
			res.Rows = append(res.Rows, strs(name, strings.Join(tables, ",")))
		}
	}
	return res, nil
}

func (e *Engine) showDefaultShardingStrategy(_ context.Context, s *Session, st *distsql.ShowDefaultShardingStrategy) (*Result, error) {
	content, err := e.shardingRule(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("name", "type", "sharding_column", "sharding_algorithm_name", "sharding_algorithm_type", "sharding_algorithm_props"), Rows: [][]*string{}}
	if content == nil {
		return res, nil
	}
	for _, d := range []struct{ name, field string }{{"TABLE", "defaultTableStrategy"}, {"DATABASE", "defaultDatabaseStrategy"}} {
		sc := readStrategy(content[d.field])
		if !sc.present || sc.typ == "NONE" {
			res.Rows = append(res.Rows, strs(d.name, sc.typ, "", "", "", ""))
			continue
		}
		alg := rule.Map(rule.Map(content["shardingAlgorithms"])[sc.algorithm])
		res.Rows = append(res.Rows, strs(d.name, sc.typ, sc.column, sc.algorithm, rule.Text(alg["type"]), rule.PropsText(alg["props"])))
	}
	return res, nil
}

func (e *Engine) showShardingKeyGenerateStrategies(_ context.Context, s *Session, st *distsql.ShowShardingKeyGenerateStrategies) (*Result, error) {
	content, err := e.shardingRule(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("name", "type", "table", "column", "sequence", "generator_name", "generator_type", "generator_props"), Rows: [][]*string{}}
	strategies := rule.Map(content["keyGenerateStrategies"])
	gens := rule.Map(content["keyGenerators"])
	for _, name := range sortedKeys(strategies) {
		if st.Name != "" && !strings.EqualFold(st.Name, name) {
			continue
		}
		ks := rule.Map(strategies[name])
		gen := rule.Map(gens[rule.Text(ks["keyGeneratorName"])])
		res.Rows = append(res.Rows, strs(name, strings.ToLower(rule.Text(ks["keyGenerateType"])), rule.Text(ks["logicTable"]), rule.Text(ks["keyGenerateColumn"]),
			rule.Text(ks["keyGenerateSequence"]), rule.Text(ks["keyGeneratorName"]), rule.Text(gen["type"]), rule.PropsText(gen["props"])))
	}
	return res, nil
}

// unused lists the entries of section (name -> {type, props}) that the
// rule does not use.
func (e *Engine) unused(s *Session, from, section string) (*Result, error) {
	content, err := e.shardingRule(s, from)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("name", "type", "props"), Rows: [][]*string{}}
	algs, gens, auditors := rules.InUse(content)
	used := algs
	switch section {
	case "keyGenerators":
		used = gens
	case "auditors":
		used = auditors
	}
	m := rule.Map(content[section])
	for _, name := range sortedKeys(m) {
		if !used[name] {
			a := rule.Map(m[name])
			res.Rows = append(res.Rows, strs(name, rule.Text(a["type"]), rule.PropsText(a["props"])))
		}
	}
	return res, nil
}

func (e *Engine) showShardingTableNodes(ctx context.Context, s *Session, st *distsql.ShowShardingTableNodes) (*Result, error) {
	content, err := e.shardingRule(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("name", "nodes"), Rows: [][]*string{}}
	match := func(name string) bool { return st.Table == "" || strings.EqualFold(st.Table, name) }
	tables := rule.Map(content["tables"])
	// At most inline.MaxRuleNames nodes are built in all (a rule another
	// node wrote may stand for more): a table past them, or past
	// inline.MaxNames alone, is shown as written.
	left := inline.MaxRuleNames
	for _, name := range sortedKeys(tables) {
		if !match(name) {
			continue
		}
		if err := ctx.Err(); err != nil { // KILL, or the client gone
			return nil, err
		}
		expr := rule.Text(rule.Map(tables[name])["actualDataNodes"])
		nodes, err := inline.Expand(expr, min(inline.MaxNames, left))
		if errors.Is(err, inline.ErrTooMany) {
			nodes = []string{expr} // more than may be built: as written
		} else {
			left -= len(nodes)
		}
		res.Rows = append(res.Rows, strs(name, strings.Join(nodes, ", ")))
	}
	auto := rule.Map(content["autoTables"])
	for _, name := range sortedKeys(auto) {
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
		res.Rows = append(res.Rows, strs(name, strings.Join(nodes, ", ")))
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
	tables := len(rule.Map(r.Content["tables"])) + len(rule.Map(r.Content["autoTables"]))
	res.Rows = append(res.Rows,
		strs("sharding_table", db.Name, strconv.Itoa(tables)),
		strs("sharding_table_reference", db.Name, strconv.Itoa(len(rule.Values(r.Content["bindingTables"])))))
	return res, nil
}

// showShardingTableRulesUsed lists the tables ("table") and auto tables
// ("auto_table") whose own strategies, key generate strategy (theirs, or a
// 5.5.4 rule-level column strategy naming the table) or audit strategy
// name st.Name, as upstream's ShowShardingTableRulesUsed*Executor.
func (e *Engine) showShardingTableRulesUsed(_ context.Context, s *Session, st *distsql.ShowShardingTableRulesUsed) (*Result, error) {
	content, err := e.shardingRule(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("type", "name"), Rows: [][]*string{}}
	for _, f := range []struct{ field, typ string }{{"tables", "table"}, {"autoTables", "auto_table"}} {
		tables := rule.Map(content[f.field])
		for _, name := range sortedKeys(tables) {
			algs, gens, auditors := rules.UsedBy(rule.Map(tables[name]))
			names := algs
			switch st.Kind {
			case "KEY GENERATOR":
				names = append(gens, strategyGenerators(content, name)...)
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
func strategyGenerators(content map[string]any, table string) []string {
	var out []string
	strategies := rule.Map(content["keyGenerateStrategies"])
	for _, sn := range sortedKeys(strategies) {
		ks := rule.Map(strategies[sn])
		if strings.EqualFold(rule.Text(ks["logicTable"]), table) && !strings.EqualFold(rule.Text(ks["keyGenerateType"]), "sequence") {
			if g := rule.Text(ks["keyGeneratorName"]); g != "" {
				out = append(out, g)
			}
		}
	}
	return out
}
