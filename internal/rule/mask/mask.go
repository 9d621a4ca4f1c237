// Package mask is the mask rule family: CREATE, ALTER, DROP and SHOW MASK
// RULE(S) as upstream's MaskDistSQLStatement.g4 reads them and its
// executors check and write them, and the rule's checks, registry fields
// and COUNT. The rule's content is upstream's YAML: tables: {t: {columns:
// {c: {maskAlgorithm: name}}}}, maskAlgorithms: {name: {type, props}}.
package mask

import (
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// Family is the mask rule family.
var Family rule.Family = rule.ColumnRule[distsql.Algorithm]{
	RuleType:    "mask",
	Keyword:     "MASK",
	Label:       "Mask",
	Algorithms:  "maskAlgorithms",
	Column:      column,
	Value:       value,
	Uses:        uses,
	Props:       Algorithms,
	Fields:      []rule.ColumnAlgorithm{{Kind: "Mask", Field: "maskAlgorithm"}},
	ShowColumns: []string{"table", "column", "algorithm_type", "algorithm_props"},
	ShowRow:     showRow,
	ColumnName:  "logicColumn",
}

// algorithmSPI is the SPI upstream names when a mask algorithm type does
// not exist.
const algorithmSPI = "org.apache.shardingsphere.mask.spi.MaskAlgorithm"

// column reads NAME=column, TYPE(NAME=type[, PROPERTIES(...)]).
func column(p *distsql.Parser) (string, distsql.Algorithm) {
	p.Expect("NAME")
	p.ExpectSymbol("=")
	name := p.Identifier("column name")
	p.ExpectSymbol(",")
	return name, p.Algorithm()
}

// value is a column's entry: its algorithm, named
// "{table}_{column}_{type}" in lower case as upstream's
// MaskRuleStatementConverter names it, added to algorithms once its type
// and props are checked.
func value(table, column string, a distsql.Algorithm, algorithms map[string]any) (map[string]any, error) {
	if err := rule.CheckSPIType(algorithmSPI, a.Type, Algorithms.Types()); err != nil {
		return nil, err
	}
	alg := rule.AlgorithmValue(a)
	if err := Algorithms.Check(a.Type, rule.Map(alg["props"])); err != nil {
		return nil, err
	}
	name := strings.ToLower(table + "_" + column + "_" + a.Type)
	algorithms[name] = alg
	return map[string]any{"maskAlgorithm": name}, nil
}

func uses(col map[string]any) []string {
	if n := rule.Text(col["maskAlgorithm"]); n != "" {
		return []string{n}
	}
	return nil
}

// showRow is a row of SHOW MASK RULES (ShowMaskRuleExecutor's columns).
func showRow(table, column string, col, c map[string]any) []string {
	alg := rule.Map(rule.Map(c["maskAlgorithms"])[rule.Text(col["maskAlgorithm"])])
	return []string{table, column, rule.Text(alg["type"]), rule.PropsText(alg["props"])}
}

// Algorithms are the mask algorithm types, as upstream's mask algorithms
// and their MaskAlgorithmPropertiesChecker check them. Read-only.
var Algorithms = rule.Algorithms{
	"MD5":                       {Class: "MD5MaskAlgorithm"}, // salt is optional
	"KEEP_FIRST_N_LAST_M":       {Class: "KeepFirstNLastMMaskAlgorithm", Props: firstNLastM},
	"KEEP_FROM_X_TO_Y":          {Class: "KeepFromXToYMaskAlgorithm", Props: fromXToY, Then: rule.FromXNotAfterToY},
	"MASK_FIRST_N_LAST_M":       {Class: "MaskFirstNLastMMaskAlgorithm", Props: firstNLastM},
	"MASK_FROM_X_TO_Y":          {Class: "MaskFromXToYMaskAlgorithm", Props: fromXToY, Then: rule.FromXNotAfterToY},
	"MASK_AFTER_SPECIAL_CHARS":  {Class: "MaskAfterSpecialCharsAlgorithm", Props: specialChars},
	"MASK_BEFORE_SPECIAL_CHARS": {Class: "MaskBeforeSpecialCharsAlgorithm", Props: specialChars},
	"GENERIC_TABLE_RANDOM_REPLACE": {Class: "GenericTableRandomReplaceAlgorithm", Props: []rule.PropCheck{
		{Key: "uppercase-letter-codes", Check: rule.CharList}, {Key: "lowercase-letter-codes", Check: rule.CharList},
		{Key: "digital-codes", Check: rule.CharList}, {Key: "special-codes", Check: rule.CharList}}},
	"TELEPHONE_RANDOM_REPLACE":                {Class: "TelephoneRandomReplaceAlgorithm", Props: []rule.PropCheck{{Key: "network-numbers", Check: rule.IntegerList}}},
	"PERSONAL_IDENTITY_NUMBER_RANDOM_REPLACE": {Class: "PersonalIdentityNumberRandomReplaceAlgorithm", Props: []rule.PropCheck{{Key: "alpha-two-country-area-code", Check: rule.NotEmptyWhenGiven}}},
}

var (
	firstNLastM  = []rule.PropCheck{{Key: "first-n", Check: rule.PositiveInteger}, {Key: "last-m", Check: rule.PositiveInteger}, {Key: "replace-char", Check: rule.SingleChar}}
	fromXToY     = []rule.PropCheck{{Key: "from-x", Check: rule.PositiveInteger}, {Key: "to-y", Check: rule.PositiveInteger}, {Key: "replace-char", Check: rule.SingleChar}}
	specialChars = []rule.PropCheck{{Key: "special-chars", Check: rule.AtLeastOneChar}, {Key: "replace-char", Check: rule.SingleChar}}
)
