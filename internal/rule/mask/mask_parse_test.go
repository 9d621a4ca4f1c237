package mask_test

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/mask"
	"github.com/shardkeeper/shardkeeper/internal/rule/ruletest"
)

type (
	alg   = distsql.Algorithm
	table = rule.Table[alg]
	col   = rule.NamedColumn[alg]
)

func TestParseMask(t *testing.T) {
	str := func(s string) distsql.Value { return distsql.Value{Kind: distsql.StringValue, Text: s} }
	num := func(s string) distsql.Value { return distsql.Value{Kind: distsql.IntValue, Text: s} }
	ruletest.Parses(t, mask.Family.Read, map[string]distsql.Statement{
		"CREATE MASK RULE t_mask (COLUMNS((NAME=order_id,TYPE(NAME='MD5'))));": &rule.Define[alg]{Family: "mask", Tables: []table{{Name: "t_mask", Columns: []col{{Name: "order_id", Def: alg{Type: "MD5"}}}}}},
		"create mask table rule if not exists a (columns((name=c1, type(name='MD5')), (NAME=c2, TYPE(NAME='KEEP_FIRST_N_LAST_M', PROPERTIES('first-n'=3, 'replace-char'='*'))))), b (COLUMNS((NAME=c, TYPE(NAME='MD5'))))": &rule.Define[alg]{Family: "mask", IfNotExists: true, Tables: []table{
			{Name: "a", Columns: []col{{Name: "c1", Def: alg{Type: "MD5"}},
				{Name: "c2", Def: alg{Type: "KEEP_FIRST_N_LAST_M", Props: []distsql.Property{{Key: "first-n", Value: num("3")}, {Key: "replace-char", Value: str("*")}}}}}},
			{Name: "b", Columns: []col{{Name: "c", Def: alg{Type: "MD5"}}}}}},
		"ALTER MASK RULE t_mask (COLUMNS((NAME=order_id, TYPE(NAME='MASK_FROM_X_TO_Y', PROPERTIES('from-x'=1, 'to-y'=2, 'replace-char'='*')))))": &rule.Define[alg]{Family: "mask", Alter: true, Tables: []table{{Name: "t_mask", Columns: []col{{Name: "order_id", Def: alg{Type: "MASK_FROM_X_TO_Y",
			Props: []distsql.Property{{Key: "from-x", Value: num("1")}, {Key: "to-y", Value: num("2")}, {Key: "replace-char", Value: str("*")}}}}}}}},
		"DROP MASK RULE t_mask":               &rule.DropTables{Family: "mask", Tables: []string{"t_mask"}},
		"DROP MASK TABLE RULE IF EXISTS a, b": &rule.DropTables{Family: "mask", IfExists: true, Tables: []string{"a", "b"}},
		"SHOW MASK RULES":                     &rule.ShowTables{Family: "mask"},
		"SHOW MASK RULES FROM db;":            &rule.ShowTables{Family: "mask", Database: "db"},
		"SHOW MASK RULES t_user FROM db":      &rule.ShowTables{Family: "mask", Table: "t_user", Database: "db"},
		"SHOW MASK TABLE RULE t_user":         &rule.ShowTables{Family: "mask", Table: "t_user"},
		"COUNT MASK RULE FROM db":             &distsql.CountRule{Type: "mask", Database: "db"},
	})
}

func TestParseMaskErrors(t *testing.T) {
	ruletest.ParseErrors(t, mask.Family.Read, map[string]string{
		"CREATE MASK RULE t (NAME=c, TYPE(NAME='MD5'))":    "COLUMNS expected",
		"CREATE MASK RULE t (COLUMNS((TYPE(NAME='MD5'))))": "NAME expected",
		"CREATE MASK RULE t (COLUMNS((NAME=c)))":           "',' expected",
		"CREATE MASK RULE t (COLUMNS())":                   "'(' expected",
		"ALTER MASK RULE":                                  "table name expected",
		"DROP MASK RULE":                                   "table name expected",
		"SHOW MASK RULE":                                   "table name expected",
	})
}
