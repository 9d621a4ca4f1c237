// Package sharding is the sharding rule family: CREATE, ALTER and DROP
// SHARDING TABLE RULE, TABLE REFERENCE RULE, DEFAULT SHARDING STRATEGY,
// KEY GENERATE STRATEGY, DROP SHARDING ALGORITHM and KEY GENERATOR, the
// SHOW SHARDING queries and COUNT SHARDING RULE as upstream's
// ShardingDistSQLStatement.g4 reads them and its executors check and write
// them (statements.go, change.go, show.go), the rule's checks
// (check.go, upstream's ShardingRuleConfigurationChecker), its registry
// item layout and upstream form per release, CONVERT output and the
// storage units its tables use (this file). It is listed in
// internal/rule/families.
package sharding

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// Type is the rule's type in the registry and in configs.
const Type = "sharding"

// Family is the sharding rule family.
var Family rule.Family = family{}

type family struct{}

func (family) Type() string { return Type }

// Defines: the sharding rule defines no data sources.
func (family) Defines(map[string]any) []string { return nil }

// Items: tables, auto tables, algorithms, key generators, auditors and
// (5.5.4) key generate strategies are one item per entry; binding tables
// one item per reference, named by BindingName; the default sharding
// column is a raw string (reference 1.6).
func (family) Items() rule.Items {
	return rule.Items{
		Named:    []string{"tables", "autoTables", "shardingAlgorithms", "keyGenerators", "auditors", "keyGenerateStrategies"},
		KeyLists: []string{"bindingTables"},
		Raw:      []string{"defaultShardingColumn"},
	}
}

// Upstream rewrites c, a copy, in place as layout's release writes it:
// a table rule's logicTable, a none strategy as an empty string, an audit
// strategy's allowHintDisable, a binding table reference with its name
// (BindingName); for Layout554 each table's keyGenerateStrategy becomes a
// rule-level keyGenerateStrategies entry (KeyGenerateStrategyName) and the
// sharding cache goes (removed upstream, #38999); before it, the
// rule-level entries go back to their tables and the cache gets its
// defaults. It fails when c holds what layout's release cannot store: a
// key generate strategy of another type than column, or one for a table
// the rule does not have, before Layout554; or two different strategies
// of one name for Layout554.
func (family) Upstream(layout paths.Layout, c map[string]any) error {
	table := func(name string, t map[string]any, strategies ...string) {
		t["logicTable"] = name
		for _, s := range strategies {
			upstreamStrategy(t, s)
		}
		upstreamAudit(t, "auditStrategy")
	}
	eachMap(c, "tables", func(name string, t map[string]any) { table(name, t, "databaseStrategy", "tableStrategy") })
	eachMap(c, "autoTables", func(name string, t map[string]any) { table(name, t, "shardingStrategy") })
	if list, ok := c["bindingTables"].([]any); ok {
		out := make([]any, 0, len(list))
		for _, e := range list {
			out = append(out, bindingElement(fmt.Sprint(e)))
		}
		c["bindingTables"] = out
	}
	upstreamStrategy(c, "defaultDatabaseStrategy")
	upstreamStrategy(c, "defaultTableStrategy")
	upstreamAudit(c, "defaultAuditStrategy")
	if layout == paths.Layout554 {
		delete(c, "shardingCache") // removed upstream (#38999)
		return tableKeysToStrategies(c)
	}
	if cache, ok := c["shardingCache"].(map[string]any); ok {
		setDefault(cache, "allowedMaxSqlLength", 0)
		if rc, ok := cache["routeCache"].(map[string]any); ok {
			setDefault(rc, "initialCapacity", 0)
			setDefault(rc, "maximumSize", 0)
			setDefault(rc, "softValues", false)
		}
	}
	return strategiesToTableKeys(layout, c)
}

// convertStrategy is the inside of a strategy of the sharding rule c
// (standard, complex, hint or none), "" when it has none.
func convertStrategy(c, strategy map[string]any) string {
	algs := rule.Map(c["shardingAlgorithms"])
	for _, typ := range []string{"standard", "complex", "hint"} {
		s, ok := strategy[typ]
		if !ok {
			continue
		}
		m := rule.Map(s)
		out := "TYPE=" + rule.Quote(typ)
		switch typ {
		case "standard":
			out += ", SHARDING_COLUMN=" + rule.Text(m["shardingColumn"])
		case "complex":
			out += ", SHARDING_COLUMNS=" + rule.Text(m["shardingColumns"])
		}
		return out + ", SHARDING_ALGORITHM(" + rule.ConvertAlgorithm(algs, rule.Text(m["shardingAlgorithmName"])) + ")"
	}
	if _, ok := strategy["none"]; ok {
		return "TYPE='none'"
	}
	return ""
}

// convertTableOptions are a table's KEY_GENERATE_STRATEGY and
// AUDIT_STRATEGY, each with a leading ", ".
func convertTableOptions(c, t map[string]any) string {
	var s string
	if kg := rule.Map(t["keyGenerateStrategy"]); kg != nil {
		s += ", KEY_GENERATE_STRATEGY(COLUMN=" + rule.Text(kg["column"]) + ", " + rule.ConvertAlgorithm(rule.Map(c["keyGenerators"]), rule.Text(kg["keyGeneratorName"])) + ")"
	}
	if as := rule.Map(t["auditStrategy"]); as != nil {
		var types []string
		for _, n := range rule.List(as["auditorNames"]) {
			types = append(types, rule.ConvertAlgorithm(rule.Map(c["auditors"]), n))
		}
		s += ", AUDIT_STRATEGY(" + strings.Join(types, ", ") + ", ALLOW_HINT_DISABLE=" + strconv.FormatBool(rule.Text(as["allowHintDisable"]) == "true") + ")"
	}
	return s
}

// Convert is what CONVERT YAML CONFIGURATION writes for c: CREATE
// SHARDING TABLE RULE for its tables and auto tables, CREATE SHARDING
// TABLE REFERENCE RULE for its binding tables, CREATE DEFAULT SHARDING
// DATABASE and TABLE STRATEGY, algorithms inline; what no statement sets
// (a default key generate or audit strategy, the default sharding column,
// the sharding cache) is named first, in "-- not converted:" comment
// lines. ok is always true.
func (family) Convert(c map[string]any) (statements []string, ok bool) {
	var skipped, out []string
	skip := func(what string) { skipped = append(skipped, "-- not converted: "+what) }
	tables := rule.Map(c["tables"])
	for _, n := range slices.Sorted(maps.Keys(tables)) {
		t := rule.Map(tables[n])
		s := n + " (DATANODES(" + rule.Quote(rule.Text(t["actualDataNodes"])) + ")"
		if ds := convertStrategy(c, rule.Map(t["databaseStrategy"])); ds != "" {
			s += ", DATABASE_STRATEGY(" + ds + ")"
		}
		if ts := convertStrategy(c, rule.Map(t["tableStrategy"])); ts != "" {
			s += ", TABLE_STRATEGY(" + ts + ")"
		}
		out = append(out, "CREATE SHARDING TABLE RULE "+s+convertTableOptions(c, t)+");")
	}
	auto := rule.Map(c["autoTables"])
	for _, n := range slices.Sorted(maps.Keys(auto)) {
		t := rule.Map(auto[n])
		st := rule.Map(rule.Map(t["shardingStrategy"])["standard"])
		s := n + " (STORAGE_UNITS(" + rule.Text(t["actualDataSources"]) + "), SHARDING_COLUMN=" + rule.Text(st["shardingColumn"]) +
			", " + rule.ConvertAlgorithm(rule.Map(c["shardingAlgorithms"]), rule.Text(st["shardingAlgorithmName"]))
		out = append(out, "CREATE SHARDING TABLE RULE "+s+convertTableOptions(c, t)+");")
	}
	for i, b := range rule.List(c["bindingTables"]) {
		name, list, ok := strings.Cut(b, ":")
		if !ok {
			name, list = fmt.Sprintf("ref_%d", i), b
		}
		out = append(out, "CREATE SHARDING TABLE REFERENCE RULE "+name+" ("+strings.Join(strings.Split(list, ","), ", ")+");")
	}
	for _, d := range []struct{ field, kind string }{{"defaultDatabaseStrategy", "DATABASE"}, {"defaultTableStrategy", "TABLE"}} {
		if s := convertStrategy(c, rule.Map(c[d.field])); s != "" {
			out = append(out, "CREATE DEFAULT SHARDING "+d.kind+" STRATEGY ("+s+");")
		}
	}
	for _, f := range []string{"defaultKeyGenerateStrategy", "defaultAuditStrategy", "defaultShardingColumn", "shardingCache"} {
		if c[f] != nil {
			skip("the sharding rule's " + f + " (no DistSQL statement sets it)")
		}
	}
	return append(skipped, out...), true
}

// Units returns the tables of c, a sharding rule of database d, then its
// auto tables, each in name order, with the data sources each uses
// (TableUnits), in one budget of inline.MaxRuleNames for the rule.
func (family) Units(d rule.Database, c map[string]any) []rule.Use {
	var out []rule.Use
	left := inline.MaxRuleNames
	for _, section := range []string{"tables", "autoTables"} {
		tables := rule.Map(c[section])
		for _, name := range slices.Sorted(maps.Keys(tables)) {
			out = append(out, rule.Use{Item: name, Units: TableUnits(d, rule.Map(tables[name]), &left)})
		}
	}
	return out
}

// DataSourcesOfNodes returns the data source names of an actualDataNodes
// expression ("ds_${0..1}.t_order_${0..1}, ds_2.t_x"), each once, in the
// order they first appear: the data source parts of its nodes expanded
// together (inline.Expand, at most limit names). Parts it cannot
// expand (any other Groovy) are left out, nothing being claimed about
// them; the error is then inline.ErrSyntax, or inline.ErrTooMany when
// they stand for too many names and none is returned. Once ctx is done
// it returns no names and ctx's error.
func DataSourcesOfNodes(ctx context.Context, nodes string, limit int) ([]string, error) {
	parts := dataSourceParts(nodes)
	var out []string
	var first error
	seen := map[string]bool{}
	total := 0
	for _, part := range parts {
		names, err := inline.ExpandContext(ctx, part, limit-total)
		if errors.Is(err, inline.ErrTooMany) {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		total += len(names)
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out, first
}

// dataSourceParts are the data source parts of the nodes of an
// actualDataNodes expression (ds_${0..1} of ds_${0..1}.t_${0..1}), each
// once.
func dataSourceParts(nodes string) []string {
	var parts []string
	seenPart := map[string]bool{}
	for _, node := range inline.Split(nodes) {
		node = strings.TrimSpace(node)
		if i := inline.TopDot(node); i >= 0 {
			node = node[:i]
		}
		if !seenPart[node] { // ds_${0..1}.t_a, ds_${0..1}.t_b: expanded once
			seenPart[node] = true
			parts = append(parts, node)
		}
	}
	return parts
}

// TableUnits is the data sources that table t of d's sharding
// rule (a table or an auto table) uses, as UnitsInUse counts them and
// SHOW RULES USED STORAGE UNIT lists them (Units): the data source part of its
// actualDataNodes and its actualDataSources, inline expressions expanded;
// one that cannot be read claims nothing. It builds at most *left names
// and takes those it builds off *left: the caller gives the rule's
// tables, in name order, the tables then the auto tables, one budget of
// inline.MaxRuleNames, so that a rule another node wrote beyond the
// bounds costs no more than one within them. An expression of more data
// sources than that, or than inline.MaxNames alone, is not expanded: it
// claims every unit of d whose name it could stand for (unitsMatching).
func TableUnits(d rule.Database, t map[string]any, left *int) []string {
	var out []string
	if nodes, _ := t["actualDataNodes"].(string); nodes != "" {
		names, err := DataSourcesOfNodes(context.Background(), nodes, min(inline.MaxNames, *left))
		if errors.Is(err, inline.ErrTooMany) {
			names = unitsMatching(d, strings.Join(dataSourceParts(nodes), ","))
		} else {
			*left -= len(names)
		}
		out = append(out, names...)
	}
	if ds, _ := t["actualDataSources"].(string); ds != "" {
		names, err := inline.Expand(ds, min(inline.MaxNames, *left))
		if errors.Is(err, inline.ErrTooMany) {
			names = unitsMatching(d, ds)
		} else {
			*left -= len(names)
		}
		out = append(out, names...)
	}
	return out
}

// unitsMatching are the units of d whose names expr, an inline
// expression of data sources, could stand for (inline.Pattern), sorted,
// without expanding it; none when expr cannot be read.
func unitsMatching(d rule.Database, expr string) []string {
	p, err := inline.Pattern(expr)
	if err != nil {
		return nil
	}
	var out []string
	for _, name := range d.Units {
		if p.MatchString(name) {
			out = append(out, name)
		}
	}
	return out
}

// bindingNameLength is the length of a generated binding table reference
// name, as upstream's (YamlShardingTableReferenceRuleConfigurationConverter).
const bindingNameLength = 16

// BindingName is the name shardkeeper gives a binding table reference that
// has none: the first 16 hex digits of the SHA-256 of the reference, so
// that every node persisting the same configuration writes the same item
// (upstream draws a random one). Hex digits match the item pattern of every
// release (5.5.2's [\w\-]+).
func BindingName(reference string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(reference)))
	return hex.EncodeToString(sum[:])[:bindingNameLength]
}

// bindingElement is a bindingTables element as upstream writes it:
// "{name}:{reference}", named by BindingName when it has no name.
func bindingElement(s string) string {
	s = strings.TrimSpace(s)
	if strings.Contains(s, ":") {
		return s
	}
	return BindingName(s) + ":" + s
}

// KeyGenerateStrategyName is the name of the Layout554 key generate
// strategy of a table's keyGenerateStrategy: "{table}_{column}" in lower
// case, as upstream's DistSQL names it (ShardingTableRuleStatementConverter).
func KeyGenerateStrategyName(table, column string) string {
	return strings.ToLower(table + "_" + column)
}

// upstreamStrategy writes the YamlShardingStrategyConfiguration at m[f]
// as upstream does: none as an empty string (NoneYamlTupleProcessor).
func upstreamStrategy(m map[string]any, f string) {
	s, ok := m[f].(map[string]any)
	if !ok {
		return
	}
	if _, ok := s["none"]; ok {
		s["none"] = ""
	}
}

// upstreamAudit writes the primitive allowHintDisable of the audit
// strategy at m[f] (true unless set: the YAML class's default).
func upstreamAudit(m map[string]any, f string) {
	if a, ok := m[f].(map[string]any); ok {
		setDefault(a, "allowHintDisable", true)
	}
}

// tableKeysToStrategies moves each table's and auto table's
// keyGenerateStrategy to a rule-level keyGenerateStrategies entry
// (Layout554, YamlKeyGenerateStrategyRuleConfiguration).
func tableKeysToStrategies(c map[string]any) error {
	strategies, _ := c["keyGenerateStrategies"].(map[string]any)
	if strategies == nil {
		strategies = map[string]any{}
	}
	var err error
	for _, f := range []string{"tables", "autoTables"} {
		eachMap(c, f, func(name string, t map[string]any) {
			ks, ok := t["keyGenerateStrategy"].(map[string]any)
			if !ok {
				return
			}
			delete(t, "keyGenerateStrategy")
			column, _ := ks["column"].(string)
			entry := map[string]any{"keyGenerateType": "column", "logicTable": name, "keyGenerateColumn": column}
			if g, ok := ks["keyGeneratorName"]; ok {
				entry["keyGeneratorName"] = g
			}
			key := KeyGenerateStrategyName(name, column)
			if old, ok := strategies[key].(map[string]any); ok && fmt.Sprint(old) != fmt.Sprint(entry) && err == nil {
				err = fmt.Errorf("table %s: key generate strategy %s is already defined differently", name, key)
			}
			strategies[key] = entry
		})
	}
	if len(strategies) > 0 {
		c["keyGenerateStrategies"] = strategies
	}
	return err
}

// strategiesToTableKeys moves each column keyGenerateStrategies entry to
// its table's keyGenerateStrategy (before Layout554, which has no
// rule-level strategies).
func strategiesToTableKeys(layout paths.Layout, c map[string]any) error {
	strategies, ok := c["keyGenerateStrategies"].(map[string]any)
	if !ok {
		return nil
	}
	delete(c, "keyGenerateStrategies")
	for _, name := range slices.Sorted(maps.Keys(strategies)) {
		s, _ := strategies[name].(map[string]any)
		if typ, _ := s["keyGenerateType"].(string); !strings.EqualFold(typ, "column") && typ != "" {
			return fmt.Errorf("key generate strategy %s is of type %s, which ShardingSphere %s cannot store (only 5.5.4 has rule-level key generate strategies)", name, typ, layout)
		}
		table, _ := s["logicTable"].(string)
		var t map[string]any
		for _, f := range []string{"tables", "autoTables"} {
			if m, ok := c[f].(map[string]any); ok {
				if tm, ok := m[table].(map[string]any); ok {
					t = tm
				}
			}
		}
		if t == nil {
			return fmt.Errorf("key generate strategy %s is for table %q, which has no sharding table rule to hold it in ShardingSphere %s", name, table, layout)
		}
		ks := map[string]any{"column": s["keyGenerateColumn"]}
		if g, ok := s["keyGeneratorName"]; ok {
			ks["keyGeneratorName"] = g
		}
		if old, ok := t["keyGenerateStrategy"]; ok && fmt.Sprint(old) != fmt.Sprint(ks) {
			return fmt.Errorf("table %s has a keyGenerateStrategy and a different key generate strategy %s", table, name)
		}
		t["keyGenerateStrategy"] = ks
	}
	return nil
}

// setDefault sets m[k] to v when m has no non-null value for k.
func setDefault(m map[string]any, k string, v any) {
	if m[k] == nil {
		m[k] = v
	}
}

// eachMap calls fn for each entry of the map m[f] whose value is a map.
func eachMap(m map[string]any, f string, fn func(name string, v map[string]any)) {
	sub, ok := m[f].(map[string]any)
	if !ok {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(sub)) {
		if v, ok := sub[k].(map[string]any); ok {
			fn(k, v)
		}
	}
}
