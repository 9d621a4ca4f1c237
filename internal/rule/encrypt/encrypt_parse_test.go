package encrypt_test

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/encrypt"
	"github.com/shardkeeper/shardkeeper/internal/rule/ruletest"
)

type (
	table = rule.Table[encrypt.Column]
	col   = rule.NamedColumn[encrypt.Column]
	item  = encrypt.Item
)

func TestParseEncrypt(t *testing.T) {
	str := func(s string) distsql.Value { return distsql.Value{Kind: distsql.StringValue, Text: s} }
	typ := func(s string) *distsql.Algorithm { return &distsql.Algorithm{Type: s} }
	aes := &distsql.Algorithm{Type: "AES", Props: []distsql.Property{{Key: "aes-key-value", Value: str("123456abc")}, {Key: "digest-algorithm-name", Value: str("SHA-1")}}}
	ruletest.Parses(t, encrypt.Family.Read, map[string]distsql.Statement{
		"CREATE ENCRYPT RULE t_user (COLUMNS((NAME=pwd,CIPHER=pwd_cipher,ENCRYPT_ALGORITHM(TYPE(NAME='AES',PROPERTIES('aes-key-value'='123456abc', 'digest-algorithm-name'='SHA-1'))))));": &rule.Define[encrypt.Column]{Family: "encrypt", Tables: []table{{Name: "t_user", Columns: []col{{Name: "pwd", Def: encrypt.Column{Cipher: item{Name: "pwd_cipher", Algorithm: aes}}}}}}},
		"create encrypt rule if not exists t (columns((name=a, cipher=a_c, assisted_query=a_q, like_query_column=a_l, encrypt_algorithm(type(name='AES')), assisted_query_algorithm(type(name='MD5')), like_query_algorithm(type(name='CHAR_DIGEST_LIKE'))), (NAME=b, ASSISTED_QUERY_COLUMN=b_q, CIPHER=b_c, ENCRYPT_ALGORITHM(TYPE(NAME='RC4')))))": &rule.Define[encrypt.Column]{Family: "encrypt", IfNotExists: true, Tables: []table{{Name: "t", Columns: []col{
			{Name: "a", Def: encrypt.Column{Cipher: item{Name: "a_c", Algorithm: typ("AES")},
				AssistedQuery: &item{Name: "a_q", Algorithm: typ("MD5")}, LikeQuery: &item{Name: "a_l", Algorithm: typ("CHAR_DIGEST_LIKE")}}},
			{Name: "b", Def: encrypt.Column{Cipher: item{Name: "b_c", Algorithm: typ("RC4")}, AssistedQuery: &item{Name: "b_q"}}}}}}},
		"ALTER ENCRYPT RULE t_user (COLUMNS((NAME=pwd,CIPHER=pwd_cipher,ENCRYPT_ALGORITHM(TYPE(NAME='AES')))))": &rule.Define[encrypt.Column]{Family: "encrypt", Alter: true, Tables: []table{{Name: "t_user", Columns: []col{{Name: "pwd", Def: encrypt.Column{Cipher: item{Name: "pwd_cipher", Algorithm: typ("AES")}}}}}}},
		"DROP ENCRYPT RULE t_user ":        &rule.DropTables{Family: "encrypt", Tables: []string{"t_user"}},
		"DROP ENCRYPT RULE IF EXISTS a, b": &rule.DropTables{Family: "encrypt", IfExists: true, Tables: []string{"a", "b"}},
		"SHOW ENCRYPT RULES":               &rule.ShowTables{Family: "encrypt"},
		"SHOW ENCRYPT RULES FROM db":       &rule.ShowTables{Family: "encrypt", Database: "db"},
		"SHOW ENCRYPT TABLE RULE t_user;":  &rule.ShowTables{Family: "encrypt", Table: "t_user"},
		"SHOW ENCRYPT RULE t_user FROM db": &rule.ShowTables{Family: "encrypt", Table: "t_user", Database: "db"},
		"COUNT ENCRYPT RULE":               &distsql.CountRule{Type: "encrypt"},
	})
}

func TestParseEncryptErrors(t *testing.T) {
	ruletest.ParseErrors(t, encrypt.Family.Read, map[string]string{
		"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, ENCRYPT_ALGORITHM(TYPE(NAME='AES')))))":                                                                 "CIPHER expected",
		"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, CIPHER=cc)))":                                                                                           "ENCRYPT_ALGORITHM expected",
		"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, CIPHER=cc, CIPHER=cd, ENCRYPT_ALGORITHM(TYPE(NAME='AES')))))":                                           "CIPHER given twice",
		"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, CIPHER=cc, ENCRYPT_ALGORITHM(TYPE(NAME='AES')), ASSISTED_QUERY_ALGORITHM(TYPE(NAME='MD5')))))":          "ASSISTED_QUERY_ALGORITHM without ASSISTED_QUERY",
		"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, CIPHER=cc, ENCRYPT_ALGORITHM(TYPE(NAME='AES')), LIKE_QUERY_ALGORITHM(TYPE(NAME='CHAR_DIGEST_LIKE')))))": "LIKE_QUERY_ALGORITHM without LIKE_QUERY",
		"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, PLAIN=p, CIPHER=cc, ENCRYPT_ALGORITHM(TYPE(NAME='AES')))))":                                             "CIPHER or ASSISTED_QUERY or",
		"CREATE ENCRYPT RULE t (COLUMNS((CIPHER=cc)))":                                                                                                   "NAME expected",
		"SHOW ENCRYPT RULE": "table name expected",
	})
}
