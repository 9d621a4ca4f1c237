package sharding

import (
	"context"
	"errors"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// findKey returns the key of m equal to name in any case ("" if none).
// notPlain is at least how many keys of m are not plain (PlainName), -1
// when not counted. It looks name up and, for an ASCII name when no key
// of m is other than plain, its lower case (the only plain key that can
// equal it): O(len(name)). Only otherwise (a key that is not plain, a
// name that is not ASCII, which Unicode case folding may make equal to
// others, or no count) does it scan every key of m.
func findKey(m map[string]any, name string, notPlain int) string {
	if _, ok := m[name]; ok {
		return name
	}
	if notPlain == 0 && isASCII(name) {
		if lower := strings.ToLower(name); lower != name {
			if _, ok := m[lower]; ok {
				return lower
			}
		}
		return ""
	}
	for k := range m {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	return ""
}

// isASCII reports whether s is ASCII.
func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// tableLookup finds the tables of sharding rule content c by name in any
// case, as upstream's executors compare them, by lookup where the count
// of c's table names that are not plain allows (findKey). notPlain is, by
// section, at least that count, from rule.Database.ShardingNotPlain and
// kept by added as the change puts tables in (a removal leaves it an
// upper bound); nil when not counted: every lookup that misses scans.
type tableLookup struct {
	c        map[string]any
	notPlain map[string]int
}

// newTableLookup is the tableLookup of c, the content of d's sharding
// rule as a change computes it.
func newTableLookup(d rule.Database, c map[string]any) *tableLookup {
	return &tableLookup{c: c, notPlain: maps.Clone(d.ShardingNotPlain)}
}

// added counts table name, put in section of c by the change.
func (l *tableLookup) added(section, name string) {
	if l.notPlain != nil && !PlainName(name) {
		l.notPlain[section]++
	}
}

// key is findKey of name in section of c.
func (l *tableLookup) key(section, name string) string {
	notPlain := -1
	if l.notPlain != nil {
		notPlain = l.notPlain[section]
	}
	return findKey(rule.Map(l.c[section]), name, notPlain)
}

// table returns the section ("tables" or "autoTables") and key of table
// name in c ("", "" if none).
func (l *tableLookup) table(name string) (sectionName, key string) {
	for _, f := range tableSections {
		if k := l.key(f, name); k != "" {
			return f, k
		}
	}
	return "", ""
}

func checkType(kind, typ string, known []string) error {
	if !slices.Contains(known, strings.ToUpper(typ)) {
		return rule.InvalidAlgorithm(kind, typ, "")
	}
	return nil
}

// strategyValue turns a strategy of the statement into the rule's form,
// adding its algorithm to c under name algName.
func strategyValue(c map[string]any, ruleType, owner string, st Strategy, algName string) (map[string]any, error) {
	typ := strings.ToLower(st.Type)
	if typ == "none" {
		return map[string]any{"none": nil}, nil
	}
	if st.Algorithm == nil {
		return nil, rule.InvalidRule(ruleType, owner, fmt.Sprintf("the %s strategy has no sharding algorithm", typ))
	}
	if err := checkType("sharding", st.Algorithm.Type, AlgorithmTypes); err != nil {
		return nil, err
	}
	body := map[string]any{"shardingAlgorithmName": algName}
	switch typ {
	case "standard":
		if len(st.Columns) != 1 {
			return nil, rule.InvalidRule(ruleType, owner, "a standard strategy takes one SHARDING_COLUMN")
		}
		body["shardingColumn"] = st.Columns[0]
	case "complex":
		if len(st.Columns) < 2 {
			return nil, rule.InvalidRule(ruleType, owner, "a complex strategy takes SHARDING_COLUMNS with two columns or more")
		}
		body["shardingColumns"] = strings.Join(st.Columns, ",")
	case "hint":
	default:
		return nil, rule.InvalidRule(ruleType, owner, fmt.Sprintf("strategy type '%s' is not STANDARD, COMPLEX, HINT or NONE", st.Type))
	}
	rule.Section(c, "shardingAlgorithms")[algName] = rule.AlgorithmValue(*st.Algorithm)
	return map[string]any{typ: body}, nil
}

// tableValue turns one table of CREATE or ALTER SHARDING TABLE RULE into
// the rule's form, adding its algorithms, key generator and auditors to c
// under upstream's generated names; it returns the section it belongs in,
// or ctx's error once ctx is done.
func tableValue(ctx context.Context, db string, c map[string]any, r TableRule) (string, map[string]any, error) {
	const ruleType = "sharding table"
	if err := rule.CheckName(ruleType, r.Table); err != nil {
		return "", nil, err
	}
	lower := strings.ToLower
	t := map[string]any{}
	field := "tables"
	if r.Auto() {
		field = "autoTables"
		units := strings.Join(r.StorageUnits, ",")
		if _, err := inline.Expand(units, inline.MaxNames); errors.Is(err, inline.ErrTooMany) {
			return "", nil, tooManyNames(ruleType, r.Table, "storage units", units, err)
		} else if err != nil {
			return "", nil, rule.InvalidRule(ruleType, r.Table, fmt.Sprintf("storage units '%s' are not a valid inline expression", units))
		}
		if err := checkType("sharding", r.Algorithm.Type, AlgorithmTypes); err != nil {
			return "", nil, err
		}
		if !slices.Contains(AutoAlgorithmTypes, strings.ToUpper(r.Algorithm.Type)) {
			return "", nil, rule.InvalidAlgorithm("sharding", r.Algorithm.Type, fmt.Sprintf("auto sharding algorithm is required for rule `%s`", r.Table))
		}
		name := lower(r.Table + "_" + r.Algorithm.Type)
		rule.Section(c, "shardingAlgorithms")[name] = rule.AlgorithmValue(*r.Algorithm)
		t["actualDataSources"] = strings.Join(r.StorageUnits, ",")
		t["shardingStrategy"] = map[string]any{"standard": map[string]any{"shardingColumn": r.ShardingColumn, "shardingAlgorithmName": name}}
	} else {
		nodes := strings.Join(r.DataNodes, ",")
		expanded, err := inline.ExpandContext(ctx, nodes, inline.MaxNames)
		if ctx.Err() != nil {
			return "", nil, ctx.Err()
		}
		if errors.Is(err, inline.ErrTooMany) {
			return "", nil, tooManyNames(ruleType, r.Table, "data nodes", nodes, err)
		} else if err != nil {
			return "", nil, rule.InvalidRule(ruleType, r.Table, fmt.Sprintf("data nodes '%s' are not a valid inline expression", nodes))
		}
		for _, n := range expanded {
			if ds, tbl, ok := strings.Cut(n, "."); !ok || ds == "" || tbl == "" {
				return "", nil, &sqlerr.Error{Code: 13000, SQLState: "HY004", Message: fmt.Sprintf("Invalid format for actual data node '%s'.", n)}
			}
		}
		t["actualDataNodes"] = nodes
		for _, s := range []struct {
			field, kind string
			st          *Strategy
		}{{"databaseStrategy", "database", r.DatabaseStrategy}, {"tableStrategy", "table", r.TableStrategy}} {
			if s.st == nil {
				continue
			}
			algName := ""
			if s.st.Algorithm != nil {
				algName = lower(r.Table + "_" + s.kind + "_" + s.st.Algorithm.Type)
			}
			v, err := strategyValue(c, ruleType, r.Table, *s.st, algName)
			if err != nil {
				return "", nil, err
			}
			t[s.field] = v
		}
	}
	if k := r.KeyGenerate; k != nil {
		if err := checkType("key generator", k.Algorithm.Type, KeyGeneratorTypes); err != nil {
			return "", nil, err
		}
		name := lower(r.Table + "_" + k.Algorithm.Type)
		rule.Section(c, "keyGenerators")[name] = rule.AlgorithmValue(k.Algorithm)
		t["keyGenerateStrategy"] = map[string]any{"column": k.Column, "keyGeneratorName": name}
	}
	if a := r.Audit; a != nil {
		var names []any
		for _, alg := range a.Auditors {
			if err := checkType("auditor", alg.Type, AuditorTypes); err != nil {
				return "", nil, err
			}
			name := lower(r.Table + "_" + alg.Type)
			rule.Section(c, "auditors")[name] = rule.AlgorithmValue(alg)
			names = append(names, name)
		}
		t["auditStrategy"] = map[string]any{"auditorNames": names, "allowHintDisable": a.AllowHintDisable}
	}
	_ = db
	return field, t, nil
}

// removeTable removes table key of section f from c with its 5.5.4 key
// generate strategies, then the algorithms, key generators and auditors
// the table used that nothing else uses (refs, which it tells what it
// removed).
func removeTable(c map[string]any, refs *references, f, key string) {
	var names [3][]string
	eachName(rule.Map(rule.Map(c[f])[key]), func(kind int, n string) { names[kind] = append(names[kind], n) })
	delete(rule.Map(c[f]), key)
	refs.touch(f, key)
	strategies := rule.Map(c["keyGenerateStrategies"])
	for name, s := range strategies {
		if strings.EqualFold(rule.Text(rule.Map(s)["logicTable"]), key) && !strings.EqualFold(rule.Text(rule.Map(s)["keyGenerateType"]), "sequence") {
			delete(strategies, name)
			refs.touch("keyGenerateStrategies", name)
		}
	}
	dropUnused(c, refs, names[algorithmName], names[generatorName], names[auditorName])
}

// The kinds of names a sharding rule's tables refer to.
const (
	algorithmName = iota
	generatorName
	auditorName
)

// eachName calls fn with each algorithm, key generator and auditor name
// table tm refers to: a strategy's algorithm under any of standard,
// complex and hint (as the check reads them), its key generator, its
// auditors.
func eachName(tm map[string]any, fn func(kind int, name string)) {
	for _, f := range []string{"databaseStrategy", "tableStrategy", "shardingStrategy"} {
		s := rule.Map(tm[f])
		for _, typ := range []string{"standard", "complex", "hint"} {
			if n := rule.Text(rule.Map(s[typ])["shardingAlgorithmName"]); n != "" {
				fn(algorithmName, n)
			}
		}
	}
	if n := rule.Text(rule.Map(tm["keyGenerateStrategy"])["keyGeneratorName"]); n != "" {
		fn(generatorName, n)
	}
	for _, n := range rule.Values(rule.Map(tm["auditStrategy"])["auditorNames"]) {
		fn(auditorName, rule.Text(n))
	}
}

// entryNames calls fn with each name entry v of section (one of
// referringSections) refers to: a table's or auto table's (eachName), a
// key generate strategy's key generator.
func entryNames(section string, v any, fn func(kind int, name string)) {
	if section == "keyGenerateStrategies" {
		if n := rule.Text(rule.Map(v)["keyGeneratorName"]); n != "" {
			fn(generatorName, n)
		}
		return
	}
	eachName(rule.Map(v), fn)
}

// defaultNames calls fn with each name the defaults of rule c refer to.
func defaultNames(c map[string]any, fn func(kind int, name string)) {
	eachName(map[string]any{"databaseStrategy": c["defaultDatabaseStrategy"], "tableStrategy": c["defaultTableStrategy"],
		"keyGenerateStrategy": c["defaultKeyGenerateStrategy"], "auditStrategy": c["defaultAuditStrategy"]}, fn)
}

// eachUsedName calls fn with each algorithm, key generator and auditor
// name rule c refers to (its tables', its defaults', its 5.5.4 key
// generate strategies'), without building anything.
func eachUsedName(c map[string]any, fn func(kind int, name string)) {
	for _, f := range referringSections {
		for _, v := range rule.Map(c[f]) {
			entryNames(f, v, fn)
		}
	}
	defaultNames(c, fn)
}

// usedNames lists the algorithm, key generator and auditor names the
// tables of m (name -> table) refer to.
func usedNames(m map[string]any) (algs, gens, auditors []string) {
	for _, t := range m {
		eachName(rule.Map(t), func(kind int, n string) {
			switch kind {
			case algorithmName:
				algs = append(algs, n)
			case generatorName:
				gens = append(gens, n)
			default:
				auditors = append(auditors, n)
			}
		})
	}
	return algs, gens, auditors
}

// inUse returns every algorithm, key generator and auditor name the rule
// c refers to.
func inUse(c map[string]any) (algs, gens, auditors map[string]bool) {
	used := [3]map[string]bool{{}, {}, {}}
	eachUsedName(c, func(kind int, n string) { used[kind][n] = true })
	return used[algorithmName], used[generatorName], used[auditorName]
}

// dropUnused removes the named algorithms, key generators and auditors
// nothing in c uses any more (refs.used). It looks for those names only,
// so that a table dropped next to thousands builds nothing of theirs.
func dropUnused(c map[string]any, refs *references, algs, gens, auditors []string) {
	for kind, names := range [3][]string{algs, gens, auditors} {
		for _, n := range names {
			if !refs.used(c, kind, n) {
				delete(rule.Map(c[sectionOfKind[kind]]), n)
			}
		}
	}
}

// sectionOfKind is the section that holds the names of each kind.
var sectionOfKind = [3]string{algorithmName: "shardingAlgorithms", generatorName: "keyGenerators", auditorName: "auditors"}

// references answers whether a sharding rule c that a change made of
// the rule read (before: for a change, d.Rules[Type], whose copy it
// changes; for the check, d.Before) still refers to a name. Where the
// caller counted the references of the rule read
// (rule.Database.BeforeUses), it answers from that count, corrected by
// the entries the change touched (touch), at a cost of what it touched;
// otherwise it scans c. Whoever replaces, adds or removes an entry of
// referringSections touches it before it asks.
type references struct {
	before  map[string]any                 // the rule read
	uses    func(section, name string) int // its references; nil: scan
	touched map[[2]string]bool             // by section and name
}

// newReferences returns the references of the sharding rule of d as a
// change starts from it.
func newReferences(d rule.Database) *references {
	return &references{before: d.Rules[Type], uses: d.BeforeUses, touched: map[[2]string]bool{}}
}

// touch records that the change replaces, adds or removes entry name of
// section.
func (r *references) touch(section, name string) {
	r.touched[[2]string{section, name}] = true
}

// report tells edits every entry the change touched and every
// algorithm, key generator and auditor those entries name before or after
// it, then declares them complete: all the named entries a change of
// tables adds, replaces or removes, since the algorithms, key generators
// and auditors it writes are those its new tables name (tableValue) and
// those it removes are those its removed tables named (dropUnused). c is
// the rule as the change leaves it.
func (r *references) report(edits *rule.Edits, c map[string]any) {
	if edits == nil {
		return
	}
	named := func(kind int, n string) { edits.Touch(sectionOfKind[kind], n) }
	for e := range r.touched {
		edits.Touch(e[0], e[1])
		entryNames(e[0], rule.Map(r.before[e[0]])[e[1]], named)
		entryNames(e[0], rule.Map(c[e[0]])[e[1]], named)
	}
	edits.Complete()
}

// used reports whether rule c refers to name of kind.
func (r *references) used(c map[string]any, kind int, name string) bool {
	want := usedName{kind, name}
	n := 0
	count := func(k int, s string) {
		if (usedName{k, s}) == want {
			n++
		}
	}
	if r.uses == nil {
		eachUsedName(c, count)
		return n > 0
	}
	defaultNames(c, count)
	if n > 0 {
		return true
	}
	n = r.uses(sectionOfKind[kind], name)
	uncount := func(k int, s string) {
		if (usedName{k, s}) == want {
			n--
		}
	}
	for e := range r.touched {
		entryNames(e[0], rule.Map(r.before[e[0]])[e[1]], uncount) // as read: in the count
		entryNames(e[0], rule.Map(c[e[0]])[e[1]], count)          // as the change left it
	}
	return n > 0
}

// countNames refuses a statement whose tables' DATANODES and
// STORAGE_UNITS stand for more than inline.MaxRuleNames names together, or
// one of them for more than inline.MaxNames (10200), counting them before
// any is built.
func countNames(rules []TableRule) error {
	total := 0
	for _, r := range rules {
		what, expr := "data nodes", strings.Join(r.DataNodes, ",")
		if r.Auto() {
			what, expr = "storage units", strings.Join(r.StorageUnits, ",")
		}
		n, err := inline.Count(expr, inline.MaxNames)
		if errors.Is(err, inline.ErrTooMany) {
			return tooManyNames("sharding table", r.Table, what, expr, err)
		}
		if total += n; total > inline.MaxRuleNames {
			return rule.InvalidRule("sharding table", r.Table, fmt.Sprintf("the statement's data nodes and storage units stand for more than %d names, the most one statement may", inline.MaxRuleNames))
		}
	}
	return nil
}

// createTableRule is CREATE or ALTER SHARDING TABLE RULE. Its
// change stops with ctx's error once ctx is done (the statement killed or
// its client gone), between tables and inside their expansions.
func createTableRule(rules []TableRule, ifNotExists, alter bool) rule.Change {
	return func(ctx context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
		db := d.Name
		if err := countNames(rules); err != nil {
			return nil, err
		}
		names := make([]string, len(rules))
		for i, r := range rules {
			names[i] = r.Table
		}
		todo := names
		var keys []string // ALTER: the tables replaced, as c spells them, in names' order
		var err error
		tables := newTableLookup(d, c)
		refs := newReferences(d)
		if alter {
			keys, err = shardingTables.Alter(db, tables.items(names), names)
		} else {
			todo, err = shardingTables.Create(db, tables.items(names), names, ifNotExists)
		}
		if err != nil {
			return nil, err
		}
		for i, r := range rules {
			if !slices.Contains(todo, r.Table) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if alter { // a CREATE's tables are not in c (Create)
				if f, key := tables.table(keys[i]); f != "" {
					removeTable(c, refs, f, key)
				}
			}
			f, t, err := tableValue(ctx, db, c, r)
			if err != nil {
				return nil, err
			}
			rule.Section(c, f)[r.Table] = t
			refs.touch(f, r.Table)
			tables.added(f, r.Table)
		}
		refs.report(d.Edits, c)
		return rule.Prune(c), nil
	}
}

// shardingTables is CREATE, ALTER and DROP of the sharding rule's tables
// and auto tables: names match in any case, as upstream's executors
// compare them.
var shardingTables = rule.Named{RuleType: "sharding", Label: "sharding", Kind: "sharding table", Case: rule.FoldCase}

// items are the tables and auto tables of c that names match (in any
// case, exactly where one does), as named items: what shardingTables'
// Create, Alter and Drop look up of them, found without building a set
// of every table (a statement names a few of thousands), and without a
// scan of every table where the count allows (findKey).
func (l *tableLookup) items(names []string) map[string]any {
	items := map[string]any{}
	for _, name := range names {
		if slices.ContainsFunc(tableSections[:], func(f string) bool { _, ok := rule.Map(l.c[f])[name]; return ok }) {
			items[name] = true
			continue
		}
		if _, k := l.table(name); k != "" {
			items[k] = true
		}
	}
	return items
}

func dropTableRule(st *DropTableRule) rule.Change {
	return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
		db := d.Name
		tables := newTableLookup(d, c)
		keys, err := shardingTables.Drop(db, tables.items(st.Tables), st.Tables, st.IfExists)
		if err != nil {
			return nil, err
		}
		var bound []string // named as the statement names them
		for _, t := range st.Tables {
			if f, _ := tables.table(t); f == "" {
				continue
			}
			for _, b := range rule.Values(c["bindingTables"]) {
				_, ref := BindingParts(rule.Text(b))
				if slices.ContainsFunc(ref, func(n string) bool { return strings.EqualFold(n, t) }) {
					bound = append(bound, t)
					break
				}
			}
		}
		if len(bound) > 0 {
			return nil, rule.RuleInUse("Sharding", db, bound)
		}
		refs := newReferences(d)
		for _, t := range keys {
			if f, key := tables.table(t); f != "" {
				removeTable(c, refs, f, key)
			}
		}
		refs.report(d.Edits, c)
		return rule.Prune(c), nil
	}
}

func tableReferenceRule(refs []TableReference, ifNotExists, alter bool) rule.Change {
	return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
		db := d.Name
		existing := map[string]int{}
		list := rule.Values(c["bindingTables"])
		for i, b := range list {
			name, _ := BindingParts(rule.Text(b))
			existing[strings.ToLower(name)] = i
		}
		var dup, absent, missingTables []string
		tables := newTableLookup(d, c)
		for _, r := range refs {
			if err := rule.CheckName("sharding table reference", r.Name); err != nil {
				return nil, err
			}
			_, ok := existing[strings.ToLower(r.Name)]
			switch {
			case alter && !ok:
				absent = append(absent, r.Name)
			case !alter && ok && !ifNotExists:
				dup = append(dup, r.Name)
			}
			for _, t := range r.Tables {
				if f, _ := tables.table(t); f == "" && !slices.Contains(missingTables, t) {
					missingTables = append(missingTables, t)
				}
			}
		}
		if len(dup) > 0 {
			return nil, rule.DuplicateRule("sharding table reference", db, dup)
		}
		if len(absent) > 0 {
			return nil, rule.MissingRule("Sharding table reference", db, absent)
		}
		if len(missingTables) > 0 {
			return nil, rule.MissingRule("Sharding", db, missingTables)
		}
		// A table belongs to one reference at most.
		taken := map[string]string{}
		for _, b := range list {
			name, tables := BindingParts(rule.Text(b))
			for _, t := range tables {
				taken[strings.ToLower(t)] = strings.ToLower(name)
			}
		}
		for _, r := range refs {
			_, ok := existing[strings.ToLower(r.Name)]
			if !alter && ok {
				continue // IF NOT EXISTS
			}
			var twice []string
			for _, t := range r.Tables {
				if owner, ok := taken[strings.ToLower(t)]; ok && owner != strings.ToLower(r.Name) {
					twice = append(twice, t)
				}
			}
			if len(twice) > 0 {
				return nil, rule.DuplicateRule("sharding table reference", db, twice)
			}
			if len(r.Tables) < 2 {
				return nil, rule.InvalidRule("sharding table reference", r.Name, "a reference rule names two tables or more")
			}
			elem := r.Name + ":" + strings.Join(r.Tables, ",")
			if i, ok := existing[strings.ToLower(r.Name)]; ok {
				list[i] = elem
			} else {
				list = append(list, elem)
				existing[strings.ToLower(r.Name)] = len(list) - 1
			}
			for _, t := range r.Tables {
				taken[strings.ToLower(t)] = strings.ToLower(r.Name)
			}
		}
		c["bindingTables"] = list
		return rule.Prune(c), nil
	}
}

func dropTableReferenceRule(st *DropTableReferenceRule) rule.Change {
	return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
		db := d.Name
		list := rule.Values(c["bindingTables"])
		var absent []string
		for _, n := range st.Names {
			found := false
			for _, b := range list {
				name, _ := BindingParts(rule.Text(b))
				found = found || strings.EqualFold(name, n)
			}
			if !found && !st.IfExists {
				absent = append(absent, n)
			}
		}
		if len(absent) > 0 {
			return nil, rule.MissingRule("Sharding table reference", db, absent)
		}
		var keep []any
		for _, b := range list {
			name, _ := BindingParts(rule.Text(b))
			if !slices.ContainsFunc(st.Names, func(n string) bool { return strings.EqualFold(n, name) }) {
				keep = append(keep, b)
			}
		}
		c["bindingTables"] = keep
		return rule.Prune(c), nil
	}
}

func defaultStrategy(st *CreateDefaultStrategy) rule.Change {
	field := defaultStrategyField(st.Kind)
	return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
		db := d.Name
		_, exists := c[field]
		switch {
		case st.Alter && !exists:
			return nil, rule.MissingRule("Default sharding strategy", db, []string{strings.ToLower(st.Kind)})
		case !st.Alter && exists && st.IfNotExists:
			return c, nil
		case !st.Alter && exists:
			return nil, rule.DuplicateRule("default sharding strategy", db, []string{strings.ToLower(st.Kind)})
		}
		oldAlg := strategyAlgorithm(c[field])
		delete(c, field)
		algName := ""
		if st.Strategy.Algorithm != nil {
			algName = strings.ToLower("default_" + st.Kind + "_" + st.Strategy.Algorithm.Type)
		}
		v, err := strategyValue(c, "default sharding strategy", strings.ToLower(st.Kind), st.Strategy, algName)
		if err != nil {
			return nil, err
		}
		c[field] = v
		if oldAlg != "" && oldAlg != algName {
			dropUnused(c, newReferences(d), []string{oldAlg}, nil, nil) // the defaults are read from c
		}
		return rule.Prune(c), nil
	}
}

// defaultStrategyField is the sharding rule's field of the default
// strategy of kind DATABASE or TABLE.
func defaultStrategyField(kind string) string {
	if kind == "TABLE" {
		return "defaultTableStrategy"
	}
	return "defaultDatabaseStrategy"
}

func dropDefaultStrategy(st *DropDefaultStrategy) rule.Change {
	field := defaultStrategyField(st.Kind)
	return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
		db := d.Name
		if _, ok := c[field]; !ok {
			if st.IfExists {
				return c, nil
			}
			return nil, rule.MissingRule("Default sharding strategy", db, []string{strings.ToLower(st.Kind)})
		}
		alg := strategyAlgorithm(c[field])
		delete(c, field)
		if alg != "" {
			dropUnused(c, newReferences(d), []string{alg}, nil, nil) // the defaults are read from c
		}
		return rule.Prune(c), nil
	}
}

// dropNamed drops named algorithms of section f (shardingAlgorithms or
// keyGenerators) that nothing uses.
func dropNamed(f, kind string, names []string, ifExists bool) rule.Change {
	return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
		db := d.Name
		m := rule.Map(c[f])
		var absent, used []string
		refs := newReferences(d)
		for _, n := range names {
			if _, ok := m[n]; !ok {
				if !ifExists {
					absent = append(absent, n)
				}
				continue
			}
			if refs.used(c, nameKinds[f], n) {
				used = append(used, n)
			}
		}
		if len(absent) > 0 {
			return nil, rule.MissingAlgorithm(kind, db, absent)
		}
		if len(used) > 0 {
			return nil, rule.AlgorithmInUse(strings.ToUpper(kind[:1])+kind[1:], db, used)
		}
		for _, n := range names {
			delete(m, n)
		}
		return rule.Prune(c), nil
	}
}

func keyGenerateStrategy(st *CreateKeyGenerateStrategy) rule.Change {
	return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
		db := d.Name
		if err := rule.CheckName("sharding key generate strategy", st.Name); err != nil {
			return nil, err
		}
		strategies := rule.Section(c, "keyGenerateStrategies")
		_, exists := strategies[st.Name]
		switch {
		case st.Alter && !exists:
			return nil, rule.MissingRule("Sharding key generate strategy", db, []string{st.Name})
		case !st.Alter && exists && st.IfNotExists:
			return rule.Prune(c), nil
		case !st.Alter && exists:
			return nil, rule.DuplicateRule("sharding key generate strategy", db, []string{st.Name})
		}
		def := st.Definition
		entry := map[string]any{}
		if def.Sequence != "" {
			entry["keyGenerateType"] = "sequence"
			entry["keyGenerateSequence"] = def.Sequence
		} else {
			if f, _ := newTableLookup(d, c).table(def.Table); f == "" {
				return nil, rule.MissingRule("Sharding", db, []string{def.Table})
			}
			entry["keyGenerateType"] = "column"
			entry["logicTable"] = def.Table
			entry["keyGenerateColumn"] = def.Column
		}
		var oldGen string
		if old := rule.Map(strategies[st.Name]); old != nil {
			oldGen = rule.Text(old["keyGeneratorName"])
		}
		if def.Algorithm != nil {
			if err := checkType("key generator", def.Algorithm.Type, KeyGeneratorTypes); err != nil {
				return nil, err
			}
			name := strings.ToLower(st.Name + "_" + def.Algorithm.Type)
			rule.Section(c, "keyGenerators")[name] = rule.AlgorithmValue(*def.Algorithm)
			entry["keyGeneratorName"] = name
		} else {
			if _, ok := rule.Map(c["keyGenerators"])[def.Generator]; !ok {
				return nil, rule.MissingAlgorithm("key generator", db, []string{def.Generator})
			}
			entry["keyGeneratorName"] = def.Generator
		}
		strategies[st.Name] = entry
		if oldGen != "" {
			refs := newReferences(d)
			refs.touch("keyGenerateStrategies", st.Name)
			dropUnused(c, refs, nil, []string{oldGen}, nil)
		}
		return rule.Prune(c), nil
	}
}

func dropKeyGenerateStrategy(st *DropKeyGenerateStrategy) rule.Change {
	return func(_ context.Context, d rule.Database, c map[string]any) (map[string]any, error) {
		db := d.Name
		strategies := rule.Map(c["keyGenerateStrategies"])
		var absent []string
		for _, n := range st.Names {
			if _, ok := strategies[n]; !ok && !st.IfExists {
				absent = append(absent, n)
			}
		}
		if len(absent) > 0 {
			return nil, rule.MissingRule("Sharding key generate strategy", db, absent)
		}
		for _, n := range st.Names {
			delete(strategies, n)
		}
		return rule.Prune(c), nil
	}
}

// strategyAlgorithm is the algorithm name of a strategy map ({standard:
// {...}}, {complex: ...}, {hint: ...}; "" for none).
func strategyAlgorithm(v any) string {
	m := rule.Map(v)
	for _, typ := range []string{"standard", "complex", "hint"} {
		if body, ok := m[typ]; ok {
			return rule.Text(rule.Map(body)["shardingAlgorithmName"])
		}
	}
	return ""
}

// BindingParts splits a bindingTables element, "name:t1,t2" or "t1,t2"
// (named by BindingName), into its name and tables.
func BindingParts(s string) (string, []string) {
	name, ref, ok := strings.Cut(s, ":")
	if !ok {
		ref, name = s, BindingName(s)
	}
	var tables []string
	for _, t := range strings.Split(ref, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tables = append(tables, t)
		}
	}
	return name, tables
}

// Change is the change st makes to the sharding rule; nil when st is
// none of the rule's changes.
func (family) Change(st distsql.Statement) rule.Change {
	switch st := st.(type) {
	case *CreateTableRule:
		return createTableRule(st.Rules, st.IfNotExists, false)
	case *AlterTableRule:
		return createTableRule(st.Rules, false, true)
	case *DropTableRule:
		return dropTableRule(st)
	case *CreateTableReferenceRule:
		return tableReferenceRule(st.Rules, st.IfNotExists, false)
	case *AlterTableReferenceRule:
		return tableReferenceRule(st.Rules, false, true)
	case *DropTableReferenceRule:
		return dropTableReferenceRule(st)
	case *CreateDefaultStrategy:
		return defaultStrategy(st)
	case *DropDefaultStrategy:
		return dropDefaultStrategy(st)
	case *DropAlgorithm:
		return dropNamed("shardingAlgorithms", "sharding", st.Names, st.IfExists)
	case *DropKeyGenerator:
		return dropNamed("keyGenerators", "key generator", st.Names, st.IfExists)
	case *CreateKeyGenerateStrategy:
		return keyGenerateStrategy(st)
	case *DropKeyGenerateStrategy:
		return dropKeyGenerateStrategy(st)
	}
	return nil
}
