package distsql

import (
	"testing"
)

func TestParseMask(t *testing.T) {
	str := func(s string) Value { return Value{Kind: StringValue, Text: s} }
	checkParses(t, []parseCase{
		{"CREATE MASK RULE t_mask (COLUMNS((NAME=order_id,TYPE(NAME='MD5'))));",
			&CreateMaskRule{Rules: []MaskRule{{Table: "t_mask", Columns: []MaskColumn{{Name: "order_id", Algorithm: Algorithm{Type: "MD5"}}}}}}},
		{"create mask table rule if not exists a (columns((name=c1, type(name='MD5')), (NAME=c2, TYPE(NAME='KEEP_FIRST_N_LAST_M', PROPERTIES('first-n'=3, 'replace-char'='*'))))), b (COLUMNS((NAME=c, TYPE(NAME='MD5'))))",
			&CreateMaskRule{IfNotExists: true, Rules: []MaskRule{
				{Table: "a", Columns: []MaskColumn{{Name: "c1", Algorithm: Algorithm{Type: "MD5"}},
					{Name: "c2", Algorithm: Algorithm{Type: "KEEP_FIRST_N_LAST_M", Props: []Property{{Key: "first-n", Value: Value{Kind: IntValue, Text: "3"}}, {Key: "replace-char", Value: str("*")}}}}}},
				{Table: "b", Columns: []MaskColumn{{Name: "c", Algorithm: Algorithm{Type: "MD5"}}}}}}},
		{"ALTER MASK RULE t_mask (COLUMNS((NAME=order_id, TYPE(NAME='MASK_FROM_X_TO_Y', PROPERTIES('from-x'=1, 'to-y'=2, 'replace-char'='*')))))",
			&AlterMaskRule{Rules: []MaskRule{{Table: "t_mask", Columns: []MaskColumn{{Name: "order_id", Algorithm: Algorithm{Type: "MASK_FROM_X_TO_Y",
				Props: []Property{{Key: "from-x", Value: Value{Kind: IntValue, Text: "1"}}, {Key: "to-y", Value: Value{Kind: IntValue, Text: "2"}}, {Key: "replace-char", Value: str("*")}}}}}}}}},
		{"DROP MASK RULE t_mask", &DropMaskRule{Tables: []string{"t_mask"}}},
		{"DROP MASK TABLE RULE IF EXISTS a, b", &DropMaskRule{IfExists: true, Tables: []string{"a", "b"}}},
		{"SHOW MASK RULES", &ShowMaskRules{}},
		{"SHOW MASK RULES FROM db;", &ShowMaskRules{Database: "db"}},
		{"SHOW MASK RULES t_user FROM db", &ShowMaskRules{Table: "t_user", Database: "db"}},
		{"SHOW MASK TABLE RULE t_user", &ShowMaskRules{Table: "t_user"}},
		{"COUNT MASK RULE FROM db", &CountRule{Type: "mask", Database: "db"}},
	})
}

func TestParseMaskErrors(t *testing.T) {
	checkParseErrors(t, []parseErrorCase{
		{"CREATE MASK RULE t (NAME=c, TYPE(NAME='MD5'))", "COLUMNS expected"},
		{"CREATE MASK RULE t (COLUMNS((TYPE(NAME='MD5'))))", "NAME expected"},
		{"CREATE MASK RULE t (COLUMNS((NAME=c)))", "',' expected"},
		{"CREATE MASK RULE t (COLUMNS())", "'(' expected"},
		{"ALTER MASK RULE", "table name expected"},
		{"DROP MASK RULE", "table name expected"},
		{"SHOW MASK RULE", "table name expected"},
	})
}
