package console

import (
	"reflect"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/registry"
)

const maskColumns = "table,column,algorithm_type,algorithm_props"

// TestMaskRuleStatements runs CREATE, ALTER and DROP MASK RULE on node 1
// of two and reads their effect with SHOW and COUNT MASK RULE on node 2 as
// soon as each returns (upstream's e2e datasets
// rdl/dataset/distsql_rdl/{create,alter,drop}_mask_rule.xml).
func TestMaskRuleStatements(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		c := newRuleNodes(t, open, 2)
		one, two, s1 := c.first, c.last, c.s1
		run, show := c.run, c.show
		show("SHOW MASK RULES", maskColumns)
		run("CREATE MASK RULE t_mask (COLUMNS((NAME=order_id,TYPE(NAME='MD5'))));")
		show("SHOW MASK RULES", maskColumns, "t_mask| order_id| MD5| ")
		run("ALTER MASK RULE t_mask (COLUMNS((NAME=order_id, TYPE(NAME='MASK_FROM_X_TO_Y', PROPERTIES('from-x'=1, 'to-y'=2, 'replace-char'='*')))));")
		show("SHOW MASK RULES", maskColumns, `t_mask| order_id| MASK_FROM_X_TO_Y| {"from-x":"1","replace-char":"*","to-y":"2"}`)
		// ALTER dropped the algorithm no column uses any more.
		if algs := two.store.Current().Databases["sharding_db"].Rules["mask"].Content["maskAlgorithms"]; !reflect.DeepEqual(algs, map[string]any{
			"t_mask_order_id_mask_from_x_to_y": map[string]any{"type": "MASK_FROM_X_TO_Y", "props": map[string]any{"from-x": "1", "to-y": "2", "replace-char": "*"}}}) {
			t.Errorf("maskAlgorithms after ALTER = %v", algs)
		}
		run("CREATE MASK RULE IF NOT EXISTS t_mask (COLUMNS((NAME=x,TYPE(NAME='MD5')))), t_user (COLUMNS((NAME=password,TYPE(NAME='MD5')), (NAME=telephone, TYPE(NAME='KEEP_FIRST_N_LAST_M', PROPERTIES('first-n'=3, 'last-m'=4, 'replace-char'='*')))))")
		show("SHOW MASK RULE t_user FROM sharding_db", maskColumns,
			"t_user| password| MD5| ", `t_user| telephone| KEEP_FIRST_N_LAST_M| {"first-n":"3","last-m":"4","replace-char":"*"}`)
		show("SHOW MASK RULES t_mask", maskColumns, `t_mask| order_id| MASK_FROM_X_TO_Y| {"from-x":"1","replace-char":"*","to-y":"2"}`)
		show("COUNT MASK RULE", "rule_name,database,count", "mask| sharding_db| 2")

		refuses(t, one, s1, []refusal{
			{"CREATE MASK RULE t_mask (COLUMNS((NAME=order_id,TYPE(NAME='MD5'))))", 10204, "Duplicate mask rule names '[t_mask]' in database 'sharding_db'."},
			{"CREATE MASK RULE t_new (COLUMNS((NAME=c,TYPE(NAME='MD5')))), t_new (COLUMNS((NAME=c,TYPE(NAME='MD5'))))", 10204, "Duplicate mask rule names '[t_new]' in database 'sharding_db'."},
			{"CREATE MASK RULE t_new (COLUMNS((NAME=c,TYPE(NAME='nope'))))", 30000, "SPI-00001: No implementation class load from SPI 'org.apache.shardingsphere.mask.spi.MaskAlgorithm' with type 'nope'."},
			{"CREATE MASK RULE t_new (COLUMNS((NAME=c,TYPE(NAME='MD5')), (NAME=c,TYPE(NAME='MD5'))))", 10200, "Invalid 'mask' rule 't_new', error message is: column 'c' is named twice"},
			// Props upstream's init refuses: an upstream node could not build the rule.
			{"CREATE MASK RULE t_new (COLUMNS((NAME=c,TYPE(NAME='KEEP_FIRST_N_LAST_M',PROPERTIES('last-m'=4,'replace-char'='*')))))", 10400, "Algorithm 'KeepFirstNLastMMaskAlgorithm' initialization failed, reason is: first-n is required."},
			{"ALTER MASK RULE t_mask (COLUMNS((NAME=order_id,TYPE(NAME='MASK_AFTER_SPECIAL_CHARS',PROPERTIES('special-chars'='@','replace-char'='**')))))", 10400, "Algorithm 'MaskAfterSpecialCharsAlgorithm' initialization failed, reason is: replace-char's length must be one."},
			{"ALTER MASK RULE t_none (COLUMNS((NAME=c,TYPE(NAME='MD5'))))", 10202, "Mask rules '[t_none]' do not exist in database 'sharding_db'."},
			{"DROP MASK RULE t_none, t_mask", 10202, "Mask rules '[t_none]' do not exist in database 'sharding_db'."},
		})

		run("DROP MASK RULE IF EXISTS t_none, t_user")
		show("SHOW MASK RULES", maskColumns, `t_mask| order_id| MASK_FROM_X_TO_Y| {"from-x":"1","replace-char":"*","to-y":"2"}`)
		run("DROP MASK RULE t_mask;")
		show("SHOW MASK RULES", maskColumns)
		show("COUNT MASK RULE", "rule_name,database,count")
		if d := two.store.Current().Databases["sharding_db"]; len(d.Rules) != 0 {
			t.Errorf("rules left after every drop: %v", d.Rules)
		}
		run("DROP MASK RULE IF EXISTS t_mask")
	})
}

const encryptColumns = "table,logic_column,cipher_column,assisted_query_column,like_query_column,encryptor_type,encryptor_props,assisted_query_type,assisted_query_props,like_query_type,like_query_props"

// TestEncryptRuleStatements runs CREATE, ALTER and DROP ENCRYPT RULE on
// node 1 of two and reads their effect with SHOW and COUNT ENCRYPT RULE on
// node 2 as soon as each returns (upstream's e2e datasets
// rdl/dataset/distsql_rdl/{create,alter,drop}_encrypt_rule.xml).
func TestEncryptRuleStatements(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		c := newRuleNodes(t, open, 2)
		one, two, s1 := c.first, c.last, c.s1
		run := c.run
		show := func(q string, rows ...string) {
			t.Helper()
			c.show(q, encryptColumns, rows...)
		}
		show("SHOW ENCRYPT RULES")
		run("CREATE ENCRYPT RULE t_user (COLUMNS((NAME=pwd,CIPHER=pwd_cipher,ENCRYPT_ALGORITHM(TYPE(NAME='AES',PROPERTIES('aes-key-value'='123456abc', 'digest-algorithm-name'='SHA-1'))))));")
		show("SHOW ENCRYPT TABLE RULE t_user;", `t_user| pwd| pwd_cipher| | | AES| {"aes-key-value":"123456abc","digest-algorithm-name":"SHA-1"}| | | | `)
		run("ALTER ENCRYPT RULE t_user (COLUMNS((NAME=pwd,CIPHER=pwd_cipher,ENCRYPT_ALGORITHM(TYPE(NAME='AES',PROPERTIES('aes-key-value'='123456abcd', 'digest-algorithm-name'='SHA-256'))))));")
		show("SHOW ENCRYPT TABLE RULE t_user", `t_user| pwd| pwd_cipher| | | AES| {"aes-key-value":"123456abcd","digest-algorithm-name":"SHA-256"}| | | | `)
		run("CREATE ENCRYPT RULE IF NOT EXISTS t_user (COLUMNS((NAME=x,CIPHER=x_c,ENCRYPT_ALGORITHM(TYPE(NAME='AES'))))), t_order (COLUMNS((NAME=phone, CIPHER=phone_c, ASSISTED_QUERY=phone_q, LIKE_QUERY=phone_l, ENCRYPT_ALGORITHM(TYPE(NAME='RC4', PROPERTIES('rc4-key-value'='key-5'))), ASSISTED_QUERY_ALGORITHM(TYPE(NAME='MD5')), LIKE_QUERY_ALGORITHM(TYPE(NAME='CHAR_DIGEST_LIKE')))))")
		show("SHOW ENCRYPT RULES FROM sharding_db",
			`t_order| phone| phone_c| phone_q| phone_l| RC4| {"rc4-key-value":"key-5"}| MD5| | CHAR_DIGEST_LIKE| `,
			`t_user| pwd| pwd_cipher| | | AES| {"aes-key-value":"123456abcd","digest-algorithm-name":"SHA-256"}| | | | `)
		if encs := two.store.Current().Databases["sharding_db"].Rules["encrypt"].Content["encryptors"]; !reflect.DeepEqual(encs, map[string]any{
			"t_user_pwd":           map[string]any{"type": "AES", "props": map[string]any{"aes-key-value": "123456abcd", "digest-algorithm-name": "SHA-256"}},
			"t_order_phone":        map[string]any{"type": "RC4", "props": map[string]any{"rc4-key-value": "key-5"}},
			"assist_t_order_phone": map[string]any{"type": "MD5"},
			"like_t_order_phone":   map[string]any{"type": "CHAR_DIGEST_LIKE"},
		}) {
			t.Errorf("encryptors = %v", encs)
		}
		c.show("COUNT ENCRYPT RULE", "rule_name,database,count", "encrypt| sharding_db| 2")

		refuses(t, one, s1, []refusal{
			{"CREATE ENCRYPT RULE t_user (COLUMNS((NAME=pwd,CIPHER=pwd_cipher,ENCRYPT_ALGORITHM(TYPE(NAME='AES')))))", 10204, "Duplicate encrypt rule names '[t_user]' in database 'sharding_db'."},
			{"CREATE ENCRYPT RULE t_new (COLUMNS((NAME=c,CIPHER=c_c,ENCRYPT_ALGORITHM(TYPE(NAME='nope')))))", 30000, "SPI-00001: No implementation class load from SPI 'org.apache.shardingsphere.encrypt.spi.EncryptAlgorithm' with type 'nope'."},
			{"CREATE ENCRYPT RULE t_new (COLUMNS((NAME=c,CIPHER=c_c,ENCRYPT_ALGORITHM(TYPE(NAME='MD5')))))", 10400, "Algorithm 'MD5AssistedEncryptAlgorithm' initialization failed, reason is: Can not support decrypt."},
			{"CREATE ENCRYPT RULE t_new (COLUMNS((NAME=c,CIPHER=c_c,LIKE_QUERY=c_l,ENCRYPT_ALGORITHM(TYPE(NAME='AES',PROPERTIES('aes-key-value'='k','digest-algorithm-name'='SHA-1'))),LIKE_QUERY_ALGORITHM(TYPE(NAME='MD5')))))", 10400, "Algorithm 'MD5AssistedEncryptAlgorithm' initialization failed, reason is: Can not support like."},
			{"CREATE ENCRYPT RULE t_new (COLUMNS((NAME=c,CIPHER=c_c,ENCRYPT_ALGORITHM(TYPE(NAME='AES',PROPERTIES('digest-algorithm-name'='SHA-1'))))))", 10400, "Algorithm 'DefaultAESPropertiesProvider' initialization failed, reason is: aes-key-value can not be null or empty."},
			{"ALTER ENCRYPT RULE t_user (COLUMNS((NAME=pwd,CIPHER=pwd_c,ENCRYPT_ALGORITHM(TYPE(NAME='RC4',PROPERTIES('rc4-key-value'='k'))))))", 10400, "Algorithm 'RC4EncryptAlgorithm' initialization failed, reason is: Key length has to be between 5 and 255."},
			{"CREATE ENCRYPT RULE t_new (COLUMNS((NAME=c,CIPHER=c_c,LIKE_QUERY=c_l,ENCRYPT_ALGORITHM(TYPE(NAME='RC4',PROPERTIES('rc4-key-value'='key-5'))),LIKE_QUERY_ALGORITHM(TYPE(NAME='CHAR_DIGEST_LIKE',PROPERTIES('start'='u4e00'))))))", 10400, "Algorithm 'CharDigestLikeEncryptAlgorithm' initialization failed, reason is: start can only be a decimal number."},
			{"CREATE ENCRYPT RULE t_new (COLUMNS((NAME=c,CIPHER=c_c,ASSISTED_QUERY=c,ENCRYPT_ALGORITHM(TYPE(NAME='AES')))))", 10200, "Invalid 'encrypt' rule 't_new', error message is: assisted query column or like query column conflicts with logic column"},
			{"ALTER ENCRYPT RULE t_none (COLUMNS((NAME=c,CIPHER=c_c,ENCRYPT_ALGORITHM(TYPE(NAME='AES')))))", 10202, "Encrypt rules '[t_none]' do not exist in database 'sharding_db'."},
			{"DROP ENCRYPT RULE t_none", 10202, "Encrypt rules '[t_none]' do not exist in database 'sharding_db'."},
		})

		run("DROP ENCRYPT RULE t_order")
		if encs := two.store.Current().Databases["sharding_db"].Rules["encrypt"].Content["encryptors"]; len(rule.Map(encs)) != 1 {
			t.Errorf("after DROP of t_order the encryptors are %v, want t_user_pwd's only", encs)
		}
		run("DROP ENCRYPT RULE t_user ")
		show("SHOW ENCRYPT TABLE RULE t_user")
		if d := two.store.Current().Databases["sharding_db"]; len(d.Rules) != 0 {
			t.Errorf("rules left after every drop: %v", d.Rules)
		}
		run("DROP ENCRYPT RULE IF EXISTS t_user")
	})
}
