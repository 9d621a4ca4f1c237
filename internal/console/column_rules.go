package console

import (
	"context"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

// SHOW MASK RULES and SHOW ENCRYPT RULES with upstream's columns
// (ShowMaskRuleExecutor, ShowEncryptRuleExecutor): one row per column of
// the rule's tables, tables and columns by name. CREATE, ALTER and DROP
// MASK / ENCRYPT RULE run through internal/rules (sharding_rules.go's
// applyRule). A database without the rule answers no rows.

var (
	maskRuleColumns    = textColumns("table", "column", "algorithm_type", "algorithm_props")
	encryptRuleColumns = textColumns("table", "logic_column", "cipher_column", "assisted_query_column", "like_query_column",
		"encryptor_type", "encryptor_props", "assisted_query_type", "assisted_query_props", "like_query_type", "like_query_props")
)

func (e *Engine) showMaskRules(_ context.Context, s *Session, st *distsql.ShowMaskRules) (*Result, error) {
	return e.tableRuleRows(s, st.Database, "mask", st.Table, maskRuleColumns, func(table, column string, col, rule map[string]any) []*string {
		alg := rules.Map(rules.Map(rule["maskAlgorithms"])[rules.Text(col["maskAlgorithm"])])
		return strs(table, column, rules.Text(alg["type"]), propsJSON(alg["props"]))
	})
}

func (e *Engine) showEncryptRules(_ context.Context, s *Session, st *distsql.ShowEncryptRules) (*Result, error) {
	return e.tableRuleRows(s, st.Database, "encrypt", st.Table, encryptRuleColumns, func(table, column string, col, rule map[string]any) []*string {
		encryptors := rules.Map(rule["encryptors"])
		item := func(f string) (name string, encryptor map[string]any) {
			it := rules.Map(col[f])
			return rules.Text(it["name"]), rules.Map(encryptors[rules.Text(it["encryptorName"])])
		}
		cipher, enc := item("cipher")
		assisted, assistedEnc := item("assistedQuery")
		like, likeEnc := item("likeQuery")
		return strs(table, column, cipher, assisted, like, rules.Text(enc["type"]), propsJSON(enc["props"]),
			rules.Text(assistedEnc["type"]), propsJSON(assistedEnc["props"]), rules.Text(likeEnc["type"]), propsJSON(likeEnc["props"]))
	})
}

// tableRuleRows lists the columns of the tables of rule typ (mask,
// encrypt: tables: {t: {columns: {c: {...}}}}) of the statement's
// database, those of table only when it is not "" (any case), one row
// each as row makes it from the table, the column, the column's content
// and the rule's.
func (e *Engine) tableRuleRows(s *Session, from, typ, table string, columns []Column, row func(table, column string, col, rule map[string]any) []*string) (*Result, error) {
	rule, err := e.ruleContent(s, from, typ)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: columns, Rows: [][]*string{}}
	tables := rules.Map(rule["tables"])
	for _, t := range sortedKeys(tables) {
		if table != "" && !strings.EqualFold(table, t) {
			continue
		}
		cols := rules.Map(rules.Map(tables[t])["columns"])
		for _, c := range sortedKeys(cols) {
			res.Rows = append(res.Rows, row(t, c, rules.Map(cols[c]), rule))
		}
	}
	return res, nil
}
