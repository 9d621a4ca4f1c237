package console

import (
	"context"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// SHOW SHARDING TABLE RULES, ALGORITHMS and KEY GENERATORS: read-only views
// of a database's sharding rule, with ShardingSphere's columns.

var shardingTableRuleColumns = textColumns("table", "actual_data_nodes", "actual_data_sources", "database_strategy_type",
	"database_sharding_column", "database_sharding_algorithm_type", "database_sharding_algorithm_props", "table_strategy_type",
	"table_sharding_column", "table_sharding_algorithm_type", "table_sharding_algorithm_props", "key_generate_column",
	"key_generator_type", "key_generator_props", "auditor_types", "allow_hint_disable")

// shardingRule returns the sharding rule content of the statement's
// database (nil when it has none).
func (e *Engine) shardingRule(s *Session, from string) (map[string]any, error) {
	return e.ruleContent(s, from, "sharding")
}

// ruleContent returns the content of rule typ of the statement's database
// (from, or the session's): nil when the database has no such rule.
func (e *Engine) ruleContent(s *Session, from, typ string) (map[string]any, error) {
	db, err := e.database(s, from)
	if err != nil {
		return nil, err
	}
	r, ok := db.Rules[typ]
	if !ok {
		return nil, nil
	}
	return r.Content, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// strategy reads a strategy map ({standard: {...}}, {complex: ...},
// {hint: ...}, {none: ...}): its type, sharding column(s) and algorithm.
type strategy struct {
	typ, column, algorithm string
	present                bool
}

func readStrategy(v any) strategy {
	m := rule.Map(v)
	for _, typ := range []string{"standard", "complex", "hint", "none"} {
		if body, ok := m[typ]; ok {
			b := rule.Map(body)
			col := rule.Text(b["shardingColumn"])
			if typ == "complex" {
				col = rule.Text(b["shardingColumns"])
			}
			return strategy{typ: strings.ToUpper(typ), column: col, algorithm: rule.Text(b["shardingAlgorithmName"]), present: true}
		}
	}
	return strategy{}
}

func (e *Engine) showShardingTableRules(_ context.Context, s *Session, st *distsql.ShowShardingTableRules) (*Result, error) {
	content, err := e.shardingRule(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: shardingTableRuleColumns, Rows: [][]*string{}}
	if content == nil {
		return res, nil
	}
	algorithms := rule.Map(content["shardingAlgorithms"])
	generators := rule.Map(content["keyGenerators"])
	auditors := rule.Map(content["auditors"])
	strategyCells := func(sc strategy) (typ, col, algType, algProps string) {
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
		for _, sn := range sortedKeys(strategies) {
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
	for _, name := range sortedKeys(tables) {
		if !match(name) {
			continue
		}
		t := rule.Map(tables[name])
		dbType, dbCol, dbAlg, dbProps := strategyCells(readStrategy(pick(t["databaseStrategy"], content["defaultDatabaseStrategy"])))
		tType, tCol, tAlg, tProps := strategyCells(readStrategy(pick(t["tableStrategy"], content["defaultTableStrategy"])))
		kCol, kType, kProps := keyCells(pick(ownKey(name, t), content["defaultKeyGenerateStrategy"]))
		aTypes, aAllow := auditCells(pick(t["auditStrategy"], content["defaultAuditStrategy"]))
		res.Rows = append(res.Rows, strs(name, rule.Text(t["actualDataNodes"]), "", dbType, dbCol, dbAlg, dbProps,
			tType, tCol, tAlg, tProps, kCol, kType, kProps, aTypes, aAllow))
	}
	autoTables := rule.Map(content["autoTables"])
	for _, name := range sortedKeys(autoTables) {
		if !match(name) {
			continue
		}
		t := rule.Map(autoTables[name])
		tType, tCol, tAlg, tProps := strategyCells(readStrategy(pick(t["shardingStrategy"], content["defaultTableStrategy"])))
		kCol, kType, kProps := keyCells(pick(ownKey(name, t), content["defaultKeyGenerateStrategy"]))
		aTypes, aAllow := auditCells(pick(t["auditStrategy"], content["defaultAuditStrategy"]))
		res.Rows = append(res.Rows, strs(name, "", rule.Text(t["actualDataSources"]), "", "", "", "",
			tType, tCol, tAlg, tProps, kCol, kType, kProps, aTypes, aAllow))
	}
	return res, nil
}

func strs(values ...string) []*string {
	out := make([]*string, len(values))
	for i := range values {
		out[i] = &values[i]
	}
	return out
}

// namedAlgorithms lists a name -> {type, props} section of the rule.
func (e *Engine) namedAlgorithms(s *Session, from, section string) (*Result, error) {
	content, err := e.shardingRule(s, from)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("name", "type", "props"), Rows: [][]*string{}}
	algs := rule.Map(content[section])
	for _, name := range sortedKeys(algs) {
		a := rule.Map(algs[name])
		res.Rows = append(res.Rows, strs(name, rule.Text(a["type"]), rule.PropsText(a["props"])))
	}
	return res, nil
}

func (e *Engine) showShardingAlgorithms(_ context.Context, s *Session, st *distsql.ShowShardingAlgorithms) (*Result, error) {
	return e.namedAlgorithms(s, st.Database, "shardingAlgorithms")
}

func (e *Engine) showShardingKeyGenerators(_ context.Context, s *Session, st *distsql.ShowShardingKeyGenerators) (*Result, error) {
	return e.namedAlgorithms(s, st.Database, "keyGenerators")
}
