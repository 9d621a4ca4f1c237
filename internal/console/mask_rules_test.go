package console

import (
	"reflect"
	"testing"

	"github.com/shardkeeper/shardkeeper/registry"
)

const maskColumns = "table,column,algorithm_type,algorithm_props"

// TestMaskRuleStatements runs CREATE, ALTER and DROP MASK RULE on node 1
// of two and reads their effect with SHOW and COUNT MASK RULE on node 2 as
// soon as each returns (upstream's e2e datasets
// rdl/dataset/distsql_rdl/{create,alter,drop}_mask_rule.xml).
func TestMaskRuleStatements(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		nodes := rulesCluster(t, open, 2)
		one, two := nodes[0], nodes[1]
		s1, s2 := newSession(), newSession()
		s1.Database, s2.Database = "sharding_db", "sharding_db"
		run := func(q string) {
			t.Helper()
			if res := exec(t, one, s1, q); len(res.Warnings) > 0 {
				t.Fatalf("%s warned: %v", q, res.Warnings)
			}
		}
		show := func(q string, columns string, rows ...string) {
			t.Helper()
			showRows(t, two, s2, q, columns, rows...)
		}
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

		for _, tc := range []struct {
			sql  string
			code uint16
			msg  string
		}{
			{"CREATE MASK RULE t_mask (COLUMNS((NAME=order_id,TYPE(NAME='MD5'))))", 10204, "Duplicate mask rule names '[t_mask]' in database 'sharding_db'."},
			{"CREATE MASK RULE t_new (COLUMNS((NAME=c,TYPE(NAME='MD5')))), t_new (COLUMNS((NAME=c,TYPE(NAME='MD5'))))", 10204, "Duplicate mask rule names '[t_new]' in database 'sharding_db'."},
			{"CREATE MASK RULE t_new (COLUMNS((NAME=c,TYPE(NAME='nope'))))", 30000, "SPI-00001: No implementation class load from SPI 'org.apache.shardingsphere.mask.spi.MaskAlgorithm' with type 'nope'."},
			{"CREATE MASK RULE t_new (COLUMNS((NAME=c,TYPE(NAME='MD5')), (NAME=c,TYPE(NAME='MD5'))))", 10200, "Invalid 'mask' rule 't_new', error message is: column 'c' is named twice"},
			{"ALTER MASK RULE t_none (COLUMNS((NAME=c,TYPE(NAME='MD5'))))", 10202, "Mask rules '[t_none]' do not exist in database 'sharding_db'."},
			{"DROP MASK RULE t_none, t_mask", 10202, "Mask rules '[t_none]' do not exist in database 'sharding_db'."},
		} {
			before := dumpAll(t, one.repo)
			e := execError(t, one, s1, tc.sql)
			if e.Code != tc.code || e.Message != tc.msg {
				t.Errorf("%s:\n got %d %q\nwant %d %q", tc.sql, e.Code, e.Message, tc.code, tc.msg)
			}
			if after := dumpAll(t, one.repo); !reflect.DeepEqual(before, after) {
				t.Errorf("%s changed the registry", tc.sql)
			}
		}

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
