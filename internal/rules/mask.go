package rules

import (
	"fmt"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// The mask rule statements: CREATE, ALTER and DROP MASK RULE, as
// upstream's Create/Alter/DropMaskRuleExecutor check and write them. The
// rule's content is upstream's YAML: tables: {t: {columns: {c:
// {maskAlgorithm: name}}}}, maskAlgorithms: {name: {type, props}}.

var maskRule = tableRule{
	ruleType:   "mask",
	label:      "Mask",
	algorithms: "maskAlgorithms",
	uses: func(col map[string]any) []string {
		if n := Text(col["maskAlgorithm"]); n != "" {
			return []string{n}
		}
		return nil
	},
}

// maskAlgorithmSPI is the SPI upstream names when a mask algorithm type
// does not exist.
const maskAlgorithmSPI = "org.apache.shardingsphere.mask.spi.MaskAlgorithm"

// maskDefinitions turns the rules of CREATE or ALTER MASK RULE into table
// definitions: each column's algorithm is named "{table}_{column}_{type}"
// in lower case, as upstream's MaskRuleStatementConverter names it.
func maskDefinitions(rules []distsql.MaskRule) []tableDefinition {
	defs := make([]tableDefinition, 0, len(rules))
	for _, r := range rules {
		defs = append(defs, tableDefinition{table: r.Table, value: func(c map[string]any) (map[string]any, error) {
			columns := map[string]any{}
			for _, col := range r.Columns {
				if _, twice := columns[col.Name]; twice {
					return nil, dbconfig.InvalidRule("mask", r.Table, fmt.Sprintf("column '%s' is named twice", col.Name))
				}
				if err := checkSPIType(maskAlgorithmSPI, col.Algorithm.Type, dbconfig.MaskAlgorithmTypes); err != nil {
					return nil, err
				}
				alg := algorithmValue(col.Algorithm)
				if err := dbconfig.MaskAlgorithms.Check(col.Algorithm.Type, Map(alg["props"])); err != nil {
					return nil, err
				}
				name := strings.ToLower(r.Table + "_" + col.Name + "_" + col.Algorithm.Type)
				section(c, "maskAlgorithms")[name] = alg
				columns[col.Name] = map[string]any{"maskAlgorithm": name}
			}
			return map[string]any{"columns": columns}, nil
		}})
	}
	return defs
}
