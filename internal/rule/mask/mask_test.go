package mask_test

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/rule/mask"
	"github.com/shardkeeper/shardkeeper/internal/rule/ruletest"
)

// TestConformance runs the rule families' suite on the mask rule.
func TestConformance(t *testing.T) {
	create := "CREATE MASK RULE t_user (COLUMNS((NAME=phone, TYPE(NAME='MASK_FIRST_N_LAST_M', PROPERTIES('first-n'=3, 'last-m'=4, 'replace-char'='*'))), (NAME=pwd, TYPE(NAME='MD5'))))"
	ruletest.Run(t, mask.Family, []ruletest.Case{
		{Name: "create", Statements: []string{create},
			Refused: map[string]int{
				create: 10204, // DuplicateRuleException
				"CREATE MASK RULE a (COLUMNS((NAME=c, TYPE(NAME='MD5')))), a (COLUMNS((NAME=c, TYPE(NAME='MD5'))))": 10204,
				"ALTER MASK RULE t_x (COLUMNS((NAME=c, TYPE(NAME='MD5'))))":                                         10202, // MissingRequiredRuleException
				"DROP MASK RULE t_x": 10202,
				"CREATE MASK RULE a (COLUMNS((NAME=c, TYPE(NAME='KEEP_FIRST_N_LAST_M'))))":             10400, // AlgorithmInitializationException
				"CREATE MASK RULE a (COLUMNS((NAME=c, TYPE(NAME='NO_SUCH'))))":                         30000, // SPI-00001
				"CREATE MASK RULE a (COLUMNS((NAME=c, TYPE(NAME='MD5')), (NAME=c, TYPE(NAME='MD5'))))": 10200,
			},
			Show: "SHOW MASK RULES",
			Rows: [][]string{
				{"t_user", "phone", "MASK_FIRST_N_LAST_M", `{"first-n":"3","last-m":"4","replace-char":"*"}`},
				{"t_user", "pwd", "MD5", ""},
			},
			Count: 1},
		{Name: "alter drops the unused algorithm", Statements: []string{create, "ALTER MASK RULE t_user (COLUMNS((NAME=pwd, TYPE(NAME='MD5'))))",
			"CREATE MASK RULE IF NOT EXISTS t_user (COLUMNS((NAME=x, TYPE(NAME='MD5')))), t_2 (COLUMNS((NAME=c, TYPE(NAME='MD5'))))"},
			Show: "SHOW MASK RULE T_USER", Rows: [][]string{{"t_user", "pwd", "MD5", ""}}, Count: 2},
		{Name: "drop", Statements: []string{create, "DROP MASK RULE IF EXISTS t_x, t_user"}, Gone: true},
	})
}
