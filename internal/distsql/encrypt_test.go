package distsql

import (
	"testing"
)

func TestParseEncrypt(t *testing.T) {
	str := func(s string) Value { return Value{Kind: StringValue, Text: s} }
	aes := &Algorithm{Type: "AES", Props: []Property{{Key: "aes-key-value", Value: str("123456abc")}, {Key: "digest-algorithm-name", Value: str("SHA-1")}}}
	checkParses(t, []parseCase{
		{"CREATE ENCRYPT RULE t_user (COLUMNS((NAME=pwd,CIPHER=pwd_cipher,ENCRYPT_ALGORITHM(TYPE(NAME='AES',PROPERTIES('aes-key-value'='123456abc', 'digest-algorithm-name'='SHA-1'))))));",
			&CreateEncryptRule{Rules: []EncryptRule{{Table: "t_user", Columns: []EncryptColumn{{Name: "pwd", Cipher: EncryptColumnItem{Name: "pwd_cipher", Algorithm: aes}}}}}}},
		{"create encrypt rule if not exists t (columns((name=a, cipher=a_c, assisted_query=a_q, like_query_column=a_l, encrypt_algorithm(type(name='AES')), assisted_query_algorithm(type(name='MD5')), like_query_algorithm(type(name='CHAR_DIGEST_LIKE'))), (NAME=b, ASSISTED_QUERY_COLUMN=b_q, CIPHER=b_c, ENCRYPT_ALGORITHM(TYPE(NAME='RC4')))))",
			&CreateEncryptRule{IfNotExists: true, Rules: []EncryptRule{{Table: "t", Columns: []EncryptColumn{
				{Name: "a", Cipher: EncryptColumnItem{Name: "a_c", Algorithm: &Algorithm{Type: "AES"}},
					AssistedQuery: &EncryptColumnItem{Name: "a_q", Algorithm: &Algorithm{Type: "MD5"}}, LikeQuery: &EncryptColumnItem{Name: "a_l", Algorithm: &Algorithm{Type: "CHAR_DIGEST_LIKE"}}},
				{Name: "b", Cipher: EncryptColumnItem{Name: "b_c", Algorithm: &Algorithm{Type: "RC4"}}, AssistedQuery: &EncryptColumnItem{Name: "b_q"}}}}}}},
		{"ALTER ENCRYPT RULE t_user (COLUMNS((NAME=pwd,CIPHER=pwd_cipher,ENCRYPT_ALGORITHM(TYPE(NAME='AES')))))",
			&AlterEncryptRule{Rules: []EncryptRule{{Table: "t_user", Columns: []EncryptColumn{{Name: "pwd", Cipher: EncryptColumnItem{Name: "pwd_cipher", Algorithm: &Algorithm{Type: "AES"}}}}}}}},
		{"DROP ENCRYPT RULE t_user ", &DropEncryptRule{Tables: []string{"t_user"}}},
		{"DROP ENCRYPT RULE IF EXISTS a, b", &DropEncryptRule{IfExists: true, Tables: []string{"a", "b"}}},
		{"SHOW ENCRYPT RULES", &ShowEncryptRules{}},
		{"SHOW ENCRYPT RULES FROM db", &ShowEncryptRules{Database: "db"}},
		{"SHOW ENCRYPT TABLE RULE t_user;", &ShowEncryptRules{Table: "t_user"}},
		{"SHOW ENCRYPT RULE t_user FROM db", &ShowEncryptRules{Table: "t_user", Database: "db"}},
		{"COUNT ENCRYPT RULE", &CountRule{Type: "encrypt"}},
	})
}

func TestParseEncryptErrors(t *testing.T) {
	checkParseErrors(t, []parseErrorCase{
		{"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, ENCRYPT_ALGORITHM(TYPE(NAME='AES')))))", "CIPHER expected"},
		{"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, CIPHER=cc)))", "ENCRYPT_ALGORITHM expected"},
		{"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, CIPHER=cc, CIPHER=cd, ENCRYPT_ALGORITHM(TYPE(NAME='AES')))))", "CIPHER given twice"},
		{"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, CIPHER=cc, ENCRYPT_ALGORITHM(TYPE(NAME='AES')), ASSISTED_QUERY_ALGORITHM(TYPE(NAME='MD5')))))", "ASSISTED_QUERY_ALGORITHM without ASSISTED_QUERY"},
		{"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, CIPHER=cc, ENCRYPT_ALGORITHM(TYPE(NAME='AES')), LIKE_QUERY_ALGORITHM(TYPE(NAME='CHAR_DIGEST_LIKE')))))", "LIKE_QUERY_ALGORITHM without LIKE_QUERY"},
		{"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, PLAIN=p, CIPHER=cc, ENCRYPT_ALGORITHM(TYPE(NAME='AES')))))", "CIPHER or ASSISTED_QUERY or"},
		{"CREATE ENCRYPT RULE t (COLUMNS((CIPHER=cc)))", "NAME expected"},
		{"SHOW ENCRYPT RULE", "table name expected"},
	})
}
