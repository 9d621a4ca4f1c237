package console

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// ruleNodes is a rulesCluster with a session on sharding_db at its first
// node, where statements run, and one at its last, where their effect is
// read as soon as each statement returned.
type ruleNodes struct {
	t           *testing.T
	first, last *testNode
	s1, sLast   *Session
}

func newRuleNodes(t *testing.T, open func(t *testing.T) registry.Repository, n int) *ruleNodes {
	t.Helper()
	nodes := rulesCluster(t, open, n)
	c := &ruleNodes{t: t, first: nodes[0], last: nodes[n-1], s1: newSession(), sLast: newSession()}
	c.s1.Database, c.sLast.Database = "sharding_db", "sharding_db"
	return c
}

// run runs q at the first node and fails the test on an error or a
// warning.
func (c *ruleNodes) run(q string) {
	c.t.Helper()
	if res := exec(c.t, c.first, c.s1, q); len(res.Warnings) > 0 {
		c.t.Fatalf("%s warned: %v", q, res.Warnings)
	}
}

// show checks SHOW q at the last node: its columns and rows (showRows).
func (c *ruleNodes) show(q string, columns string, rows ...string) {
	c.t.Helper()
	showRows(c.t, c.last, c.sLast, q, columns, rows...)
}

// rulesCluster starts n nodes, each on its own connection to one registry
// namespace and acknowledging, with database sharding_db of units ds_0,
// ds_1 and ds_2 (SQLite files) seen by all of them.
func rulesCluster(t *testing.T, open func(t *testing.T) registry.Repository, n int) []*testNode {
	t.Helper()
	dir := t.TempDir()
	db := config.Database{Name: "sharding_db", DataSources: map[string]config.DataSource{}}
	for i := range 3 {
		db.DataSources[fmt.Sprintf("ds_%d", i)] = config.DataSource{URL: "jdbc:sqlite:" + filepath.Join(dir, fmt.Sprintf("%d.db", i)), MaxPoolSize: 5}
	}
	first := open(t)
	if err := metadatatest.CreateDatabase(testenv.Context(t), first, paths.DefaultLayout, db); err != nil {
		t.Fatal(err)
	}
	var nodes []*testNode
	for i := range n {
		repo := first
		if i > 0 {
			repo = open(t)
		}
		nd := startNode(t, repo, fmt.Sprintf("rules-%d", i+1), nil)
		acknowledge(t, nd)
		nodes = append(nodes, nd)
	}
	for _, nd := range nodes {
		testenv.Eventually(t, "each node to see sharding_db", func() bool {
			d := nd.store.Current().Databases["sharding_db"]
			return d != nil && len(d.Units) == 3
		})
	}
	return nodes
}

// cells splits an upstream dataset row ("a| b | c") as its runner does.
func cells(row string) []string {
	parts := strings.Split(row, "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// showRows runs query q on node n for session s and checks its columns
// (joined with ',') and rows (upstream dataset rows, "a| b", in order).
func showRows(t *testing.T, n *testNode, s *Session, q, columns string, rows ...string) {
	t.Helper()
	res := exec(t, n, s, q)
	if got := strings.Join(columnNames(res), ","); got != columns {
		t.Errorf("%s: columns %s, want %s", q, got, columns)
	}
	want := [][]string{}
	for _, r := range rows {
		want = append(want, cells(r))
	}
	if got := rowStrings(res); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("%s:\n got %q\nwant %q", q, got, want)
	}
}

// refusal is a statement and the code and message it is refused with.
type refusal struct {
	sql  string
	code uint16
	msg  string
}

// refuses runs each statement on node n for session s and checks it is
// refused with its code and message and leaves the registry byte-identical.
func refuses(t *testing.T, n *testNode, s *Session, cases []refusal) {
	t.Helper()
	for _, tc := range cases {
		before := dumpAll(t, n.repo)
		e := execError(t, n, s, tc.sql)
		if e.Code != tc.code || e.Message != tc.msg {
			t.Errorf("%s:\n got %d %q\nwant %d %q", tc.sql, e.Code, e.Message, tc.code, tc.msg)
		}
		if after := dumpAll(t, n.repo); !reflect.DeepEqual(before, after) {
			t.Errorf("%s changed the registry", tc.sql)
		}
	}
}

// TestShardingRuleStatements runs the sharding and broadcast statements on
// node 1 of three and reads their effect on node 3 as soon as each
// returns, with upstream's columns and rows (the e2e datasets under
// shared/reference/shardingsphere-e2e/cases/{rdl,rql}/dataset).
func TestShardingRuleStatements(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		c := newRuleNodes(t, open, 3)
		one, three, s1 := c.first, c.last, c.s1
		run, show := c.run, c.show
		const tableRuleColumns = "table,actual_data_nodes,actual_data_sources,database_strategy_type,database_sharding_column,database_sharding_algorithm_type,database_sharding_algorithm_props,table_strategy_type,table_sharding_column,table_sharding_algorithm_type,table_sharding_algorithm_props,key_generate_column,key_generator_type,key_generator_props,auditor_types,allow_hint_disable"

		// rdl create_sharding_rules.xml
		run("CREATE SHARDING TABLE RULE t_order (DATANODES('ds_2.t_order_${0..1}'),TABLE_STRATEGY(TYPE='standard',SHARDING_COLUMN=order_id,SHARDING_ALGORITHM(TYPE(NAME='inline',PROPERTIES('algorithm-expression'='t_order_${order_id % 2}')))));")
		show("SHOW SHARDING TABLE RULES", tableRuleColumns,
			`t_order| ds_2.t_order_${0..1} | | | | | | STANDARD | order_id| inline| {"algorithm-expression":"t_order_${order_id % 2}"} | | | | | `)
		run("CREATE SHARDING TABLE RULE t_order_item (DATANODES('ds_2.t_order_item_${0..1}'),TABLE_STRATEGY(TYPE='standard',SHARDING_COLUMN=order_id,SHARDING_ALGORITHM(TYPE(NAME='inline',PROPERTIES('algorithm-expression'='t_order_item_${order_id % 2}')))), KEY_GENERATE_STRATEGY(COLUMN=order_item_id,TYPE(NAME='snowflake')))")
		// rdl create_binding_rules.xml
		run("CREATE SHARDING TABLE REFERENCE RULE reference_0 (t_order,t_order_item);")
		show("SHOW SHARDING TABLE REFERENCE RULES", "name,sharding_table_reference", "reference_0| t_order,t_order_item")
		show("COUNT SHARDING RULE", "rule_name,database,count", "sharding_table| sharding_db| 2", "sharding_table_reference| sharding_db| 1")
		show("SHOW SHARDING TABLE NODES t_order", "name,nodes", "t_order| ds_2.t_order_0, ds_2.t_order_1")
		show("SHOW SHARDING KEY GENERATORS", "name,type,props", "t_order_item_snowflake| snowflake| ")
		show("SHOW SHARDING ALGORITHMS", "name,type,props",
			`t_order_item_table_inline| inline| {"algorithm-expression":"t_order_item_${order_id % 2}"}`,
			`t_order_table_inline| inline| {"algorithm-expression":"t_order_${order_id % 2}"}`)

		// Drops refused while in use, upstream's codes.
		if e := execError(t, one, s1, "DROP SHARDING TABLE RULE t_order"); e.Code != 10203 || e.Message != "Sharding rules '[t_order]' in database 'sharding_db' are still in used." {
			t.Errorf("DROP of a bound table: %+v", e)
		}
		if e := execError(t, one, s1, "DROP SHARDING ALGORITHM t_order_table_inline"); e.Code != 10403 {
			t.Errorf("DROP of a used algorithm: %+v", e)
		}
		if e := execError(t, one, s1, "DROP SHARDING KEY GENERATOR t_order_item_snowflake"); e.Code != 10403 {
			t.Errorf("DROP of a used key generator: %+v", e)
		}
		if e := execError(t, one, s1, "CREATE SHARDING TABLE RULE t_order (DATANODES('ds_0.t_order'))"); e.Code != 10204 || e.Message != "Duplicate sharding rule names '[t_order]' in database 'sharding_db'." {
			t.Errorf("CREATE of an existing table: %+v", e)
		}
		run("CREATE SHARDING TABLE RULE IF NOT EXISTS t_order (DATANODES('ds_0.t_order'))")
		if e := execError(t, one, s1, "ALTER SHARDING TABLE RULE t_none (DATANODES('ds_0.t_none'))"); e.Code != 10202 {
			t.Errorf("ALTER of a missing table: %+v", e)
		}

		// rdl alter_sharding_rules.xml
		run("DROP SHARDING TABLE REFERENCE RULE reference_0;")
		show("SHOW SHARDING TABLE REFERENCE RULES", "name,sharding_table_reference")
		run("ALTER SHARDING TABLE RULE t_order (DATANODES('ds_2.t_order_${0..3}'),TABLE_STRATEGY(TYPE='standard',SHARDING_COLUMN=order_id,SHARDING_ALGORITHM(TYPE(NAME='inline',PROPERTIES('algorithm-expression'='t_order_${order_id % 4}')))));")
		show("SHOW SHARDING TABLE RULE t_order", tableRuleColumns,
			`t_order| ds_2.t_order_${0..3} | | | | | | STANDARD | order_id| inline| {"algorithm-expression":"t_order_${order_id % 4}"} | | | | | `)
		run("DROP SHARDING TABLE RULE t_order_item")
		show("SHOW UNUSED SHARDING KEY GENERATORS", "name,type,props")
		show("SHOW SHARDING KEY GENERATORS", "name,type,props")

		// Auto table and its nodes.
		run("CREATE SHARDING TABLE RULE t_auto (STORAGE_UNITS(ds_0,ds_1),SHARDING_COLUMN=order_id,TYPE(NAME='hash_mod',PROPERTIES('sharding-count'='4')))")
		show("SHOW SHARDING TABLE NODES t_auto", "name,nodes", "t_auto| ds_0.t_auto_0, ds_1.t_auto_1, ds_0.t_auto_2, ds_1.t_auto_3")
		if e := execError(t, one, s1, "CREATE SHARDING TABLE RULE t_auto2 (STORAGE_UNITS(ds_0),SHARDING_COLUMN=id,TYPE(NAME='inline',PROPERTIES('algorithm-expression'='x')))"); e.Code != 10404 {
			t.Errorf("an auto table with a non-auto algorithm: %+v", e)
		}

		// Default strategies.
		show("SHOW DEFAULT SHARDING STRATEGY", "name,type,sharding_column,sharding_algorithm_name,sharding_algorithm_type,sharding_algorithm_props",
			"TABLE| | | | | ", "DATABASE| | | | | ")
		run("CREATE DEFAULT SHARDING DATABASE STRATEGY (TYPE='standard', SHARDING_COLUMN=user_id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='ds_${user_id % 2}'))))")
		show("SHOW DEFAULT SHARDING STRATEGY", "name,type,sharding_column,sharding_algorithm_name,sharding_algorithm_type,sharding_algorithm_props",
			"TABLE| | | | | ", `DATABASE| STANDARD| user_id| default_database_inline| inline| {"algorithm-expression":"ds_${user_id % 2}"}`)
		run("DROP DEFAULT SHARDING DATABASE STRATEGY")
		show("SHOW UNUSED SHARDING ALGORITHMS", "name,type,props")
		run("DROP DEFAULT SHARDING DATABASE STRATEGY IF EXISTS")

		// rdl create_broadcast_rules.xml, drop_broadcast_rules.xml
		run("CREATE BROADCAST TABLE RULE t_product_category;")
		show("SHOW BROADCAST TABLE RULES", "broadcast_table", "t_product_category")
		show("COUNT BROADCAST RULE", "rule_name,database,count", "broadcast_table| sharding_db| 1")
		run("DROP BROADCAST TABLE RULE t_product_category")
		show("SHOW BROADCAST TABLE RULES", "broadcast_table")
		if e := execError(t, one, s1, "DROP BROADCAST TABLE RULE t_product_category"); e.Code != 10202 {
			t.Errorf("DROP of a missing broadcast table: %+v", e)
		}
		run("DROP BROADCAST TABLE RULE IF EXISTS t_product_category")

		run("DROP SHARDING TABLE RULE t_order, t_auto")
		show("SHOW SHARDING TABLE RULES", tableRuleColumns)
		if d := three.store.Current().Databases["sharding_db"]; len(d.Rules) != 0 {
			t.Errorf("rules left after every drop: %v", d.Rules)
		}
	})
}

// TestShardingRuleRefusals: bad input gets upstream's code and message and
// leaves the registry byte-identical.
func TestShardingRuleRefusals(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		n := rulesCluster(t, open, 1)[0]
		s := newSession()
		s.Database = "sharding_db"
		exec(t, n, s, "CREATE SHARDING TABLE RULE t_order (DATANODES('ds_${0..1}.t_order'))")
		refuses(t, n, s, []refusal{
			{"CREATE SHARDING TABLE RULE t_bad (DATANODES('ds_9.t_bad'))", 10102, "Storage units '[ds_9]' do not exist in database 'sharding_db'."},
			{"CREATE SHARDING TABLE RULE t_bad (STORAGE_UNITS(ds_0, ds_7), SHARDING_COLUMN=id, TYPE(NAME='mod', PROPERTIES('sharding-count'='2')))", 10102, "Storage units '[ds_7]' do not exist in database 'sharding_db'."},
			{"CREATE SHARDING TABLE RULE t_bad (DATANODES('ds_0.t_bad_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=id, SHARDING_ALGORITHM(TYPE(NAME='nope'))))", 10404, "Invalid sharding algorithm configuration 'nope'."},
			{"CREATE SHARDING TABLE RULE t_bad (DATANODES('ds_0.t_bad'), KEY_GENERATE_STRATEGY(COLUMN=id, TYPE(NAME='increment')))", 10404, "Invalid key generator algorithm configuration 'increment'."},
			{"CREATE SHARDING TABLE RULE t_bad (DATANODES('ds_${0...t_bad'))", 10200, "Invalid 'sharding table' rule 't_bad', error message is: data nodes 'ds_${0...t_bad' are not a valid inline expression"},
			{"CREATE SHARDING TABLE RULE t_bad (DATANODES('ds_0'))", 13000, "Invalid format for actual data node 'ds_0'."},
			{"CREATE SHARDING TABLE RULE `t/x` (DATANODES('ds_0.t_x'))", 10200, "Invalid 'sharding table' rule 't/x', error message is: the name may not contain '/'"},
			{"CREATE SHARDING TABLE REFERENCE RULE `r/1` (t_order, t_order)", 10200, "Invalid 'sharding table reference' rule 'r/1', error message is: the name may not contain '/'"},
			{"CREATE BROADCAST TABLE RULE `b/1`", 10200, "Invalid 'broadcast' rule 'b/1', error message is: the name may not contain '/'"},
			{"DROP SHARDING TABLE RULE t_missing", 10202, "sharding rules '[t_missing]' do not exist in database 'sharding_db'."},
		})
	})
}

// TestKeyGenerateStrategies554 runs the 5.5.4 key generate strategy
// statements on node 1 of two writing the 5.5.4 layout, and reads them on
// node 2 as soon as each returns.
func TestKeyGenerateStrategies554(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		nodes := rulesCluster(t, open, 2)
		one, two := nodes[0], nodes[1]
		one.engine.d.Layout = paths.Layout554
		s1, s2 := newSession(), newSession()
		s1.Database, s2.Database = "sharding_db", "sharding_db"
		for _, q := range []string{
			"CREATE SHARDING TABLE RULE t_order (DATANODES('ds_${0..1}.t_order'), KEY_GENERATE_STRATEGY(COLUMN=order_id, TYPE(NAME='snowflake')))",
			`CREATE SHARDING KEY GENERATE STRATEGY order_seq (SEQUENCE="order_seq", TYPE(NAME="uuid"))`,
			"CREATE SHARDING KEY GENERATE STRATEGY item_id (TABLE=t_order, COLUMN=item_id, GENERATOR=t_order_snowflake)",
		} {
			if res := exec(t, one, s1, q); len(res.Warnings) > 0 {
				t.Fatalf("%s warned: %v", q, res.Warnings)
			}
		}
		res := exec(t, two, s2, "SHOW SHARDING KEY GENERATE STRATEGIES")
		if got := strings.Join(columnNames(res), ","); got != "name,type,table,column,sequence,generator_name,generator_type,generator_props" {
			t.Errorf("columns %s", got)
		}
		want := [][]string{
			{"item_id", "column", "t_order", "item_id", "", "t_order_snowflake", "snowflake", ""},
			{"order_seq", "sequence", "", "", "order_seq", "order_seq_uuid", "uuid", ""},
			{"t_order_order_id", "column", "t_order", "order_id", "", "t_order_snowflake", "snowflake", ""},
		}
		if got := rowStrings(res); !reflect.DeepEqual(got, want) {
			t.Errorf("SHOW SHARDING KEY GENERATE STRATEGIES on node 2:\n got %q\nwant %q", got, want)
		}
		if e := execError(t, one, s1, "DROP SHARDING KEY GENERATOR t_order_snowflake"); e.Code != 10403 {
			t.Errorf("DROP of a key generator a strategy uses: %+v", e)
		}
		exec(t, one, s1, "DROP SHARDING KEY GENERATE STRATEGY order_seq, item_id")
		res = exec(t, two, s2, "SHOW UNUSED SHARDING KEY GENERATORS")
		if got := rowStrings(res); !reflect.DeepEqual(got, [][]string{{"order_seq_uuid", "uuid", ""}}) {
			t.Errorf("SHOW UNUSED SHARDING KEY GENERATORS on node 2: %q", got)
		}
	})
}
