package rules

import "slices"

// tableRule is the shape the mask and encrypt rules share: a "tables"
// section of entries named by their table, whose columns name algorithms
// of one section of the rule (maskAlgorithms, encryptors). Upstream's
// statements for them check and write alike; only the column content
// differs.
type tableRule struct {
	ruleType string // the registry's type: "mask", "encrypt"
	// label is the rule as upstream's MissingRequiredRuleException names
	// it ("Mask"); DuplicateRuleException names it by ruleType.
	label string
	// algorithms is the rule's section of named algorithms.
	algorithms string
	// uses returns the algorithm names a column of a table names.
	uses func(column map[string]any) []string
}

// tableDefinition is one table of a CREATE or ALTER statement: its name
// and a function that returns its entry, adding the algorithms it names
// to content c.
type tableDefinition struct {
	table string
	value func(c map[string]any) (map[string]any, error)
}

// define is CREATE (alter false) or ALTER of the tables defs: CREATE
// refuses a table the rule has (DuplicateRuleException, 10204) unless
// ifNotExists, which leaves it as it is; ALTER refuses one it does not have
// (MissingRequiredRuleException, 10202), replaces the others' entries and
// drops the algorithms no table uses any more, as upstream's executors do.
// A table named twice in the statement is a duplicate.
func (k tableRule) define(defs []tableDefinition, ifNotExists, alter bool) (string, change) {
	return k.ruleType, func(db string, c map[string]any) (map[string]any, error) {
		tables := Map(c["tables"])
		var dup, absent, seen []string
		var todo []tableDefinition
		for _, d := range defs {
			if err := checkName(k.ruleType, d.table); err != nil {
				return nil, err
			}
			if slices.Contains(seen, d.table) {
				dup = append(dup, d.table)
				continue
			}
			seen = append(seen, d.table)
			_, exists := tables[d.table]
			switch {
			case alter && !exists:
				absent = append(absent, d.table)
			case !alter && exists && ifNotExists:
				continue
			case !alter && exists:
				dup = append(dup, d.table)
			}
			todo = append(todo, d)
		}
		if len(dup) > 0 {
			return nil, duplicateRule(k.ruleType, db, dup)
		}
		if len(absent) > 0 {
			return nil, missingRule(k.label, db, absent)
		}
		for _, d := range todo {
			v, err := d.value(c)
			if err != nil {
				return nil, err
			}
			section(c, "tables")[d.table] = v
		}
		if alter {
			k.dropUnusedAlgorithms(c)
		}
		return prune(c), nil
	}
}

// drop is DROP of tables: a table the rule does not have is refused
// (MissingRequiredRuleException, 10202) unless ifExists; the algorithms no
// table uses any more go with the tables.
func (k tableRule) drop(names []string, ifExists bool) (string, change) {
	return k.ruleType, func(db string, c map[string]any) (map[string]any, error) {
		tables := Map(c["tables"])
		var absent []string
		for _, n := range names {
			if _, ok := tables[n]; !ok && !ifExists && !slices.Contains(absent, n) {
				absent = append(absent, n)
			}
		}
		if len(absent) > 0 {
			return nil, missingRule(k.label, db, absent)
		}
		dropped := false
		for _, n := range names {
			if _, ok := tables[n]; ok {
				delete(tables, n)
				dropped = true
			}
		}
		if !dropped {
			return c, nil // IF EXISTS of nothing: the rule as it was
		}
		k.dropUnusedAlgorithms(c)
		return prune(c), nil
	}
}

// dropUnusedAlgorithms removes the algorithms no column of c names.
func (k tableRule) dropUnusedAlgorithms(c map[string]any) {
	used := map[string]bool{}
	for _, t := range Map(c["tables"]) {
		for _, col := range Map(Map(t)["columns"]) {
			for _, n := range k.uses(Map(col)) {
				used[n] = true
			}
		}
	}
	algs := Map(c[k.algorithms])
	for n := range algs {
		if !used[n] {
			delete(algs, n)
		}
	}
}
