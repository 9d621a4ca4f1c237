package encrypt_test

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/rule/encrypt"
	"github.com/shardkeeper/shardkeeper/internal/rule/ruletest"
)

// TestConformance runs the rule families' suite on the encrypt rule.
func TestConformance(t *testing.T) {
	create := "CREATE ENCRYPT RULE t_user (COLUMNS((NAME=pwd, CIPHER=pwd_cipher, ASSISTED_QUERY=pwd_assist, ENCRYPT_ALGORITHM(TYPE(NAME='AES', PROPERTIES('aes-key-value'='123456abc', 'digest-algorithm-name'='SHA-1'))), ASSISTED_QUERY_ALGORITHM(TYPE(NAME='MD5')))))"
	ruletest.Run(t, encrypt.Family, []ruletest.Case{
		{Name: "create", Units: []string{"ds_0"}, Statements: []string{create},
			Refused: map[string]int{
				create: 10204, // DuplicateRuleException
				"ALTER ENCRYPT RULE t_x (COLUMNS((NAME=c, CIPHER=cc, ENCRYPT_ALGORITHM(TYPE(NAME='RC4', PROPERTIES('rc4-key-value'='123456'))))))":                  10202,
				"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, CIPHER=cc, ENCRYPT_ALGORITHM(TYPE(NAME='MD5')))))":                                                         10400, // MD5 cannot decrypt
				"CREATE ENCRYPT RULE t (COLUMNS((NAME=c, CIPHER=cc, ASSISTED_QUERY=c, ENCRYPT_ALGORITHM(TYPE(NAME='RC4', PROPERTIES('rc4-key-value'='123456'))))))": 10200,
			},
			Show:  "SHOW ENCRYPT RULES FROM db",
			Rows:  [][]string{{"t_user", "pwd", "pwd_cipher", "pwd_assist", "", "AES", `{"aes-key-value":"123456abc","digest-algorithm-name":"SHA-1"}`, "MD5", "", "", ""}},
			Count: 1},
		{Name: "create needs units", Refused: map[string]int{create: 10101}, Gone: true},
		{Name: "drop", Units: []string{"ds_0"}, Statements: []string{create, "DROP ENCRYPT RULE t_user"}, Gone: true},
	})
}
