package main

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rules"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestRuleStatementThreeWays runs the same rule statements (sharding,
// broadcast, readwrite-splitting, single tables, a global rule) through
// the MySQL console, the HTTP API and the CLI (on the registry) against
// one node on real etcd: each front end accepts and refuses the same
// statements with the same code and message, writes the same rule, and
// returns only once the node acknowledged the new rules.
func TestRuleStatementThreeWays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const token, id = "rules-token", "rules3"
	d, repo, conf := startThreeWaysNode(ctx, t, "sk_rules3_", id, token)
	// The database comes after the node persisted the conf's global rules
	// (its users), as an operator's would.
	dir := t.TempDir()
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "rules_db", DataSources: map[string]config.DataSource{
		"ds_0": config.NewDataSource("jdbc:sqlite:"+filepath.Join(dir, "0.db"), "", ""), "ds_1": config.NewDataSource("jdbc:sqlite:"+filepath.Join(dir, "1.db"), "", "")}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the node to see rules_db", func() bool { return d.Metadata.Current().Databases["rules_db"] != nil })
	mc := gomysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr, mc.Timeout = "root", "pw", "tcp", d.MySQLAddr, 10*time.Second
	db, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := conn.ExecContext(ctx, "USE rules_db"); err != nil {
		t.Fatal(err)
	}

	ways := []struct {
		name  string
		apply func(t *testing.T, statement string) setResult
	}{
		{"console", func(t *testing.T, statement string) setResult {
			_, err := conn.ExecContext(ctx, statement)
			var me *gomysql.MySQLError
			if errors.As(err, &me) {
				return setResult{int(me.Number), me.Message}
			}
			if err != nil {
				t.Fatal(err)
			}
			return setResult{}
		}},
		{"http", func(t *testing.T, statement string) setResult {
			path := "/api/v1/databases/rules_db/rules"
			if isGlobal(t, statement) {
				path = "/api/v1/rules"
			}
			_, r := apiChange(ctx, t, http.MethodPost, "http://"+d.HTTPAddr+path, token, map[string]string{"statement": statement})
			return r
		}},
		{"cli", func(t *testing.T, statement string) setResult {
			a := []string{"rules", "apply", "--database", "rules_db", statement, "--conf", conf}
			if isGlobal(t, statement) {
				a = slices.Delete(a, 2, 4)
			}
			return cliRefusal(t, a...)
		}},
	}
	for i, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			table, rw := "t_"+w.name, "rw_"+w.name
			for _, tc := range []struct {
				statement string
				want      setResult
			}{
				{"CREATE SHARDING TABLE RULE " + table + " (DATANODES('ds_${0..1}.t_x'))", setResult{}},
				{"CREATE SHARDING TABLE RULE " + table + " (DATANODES('ds_0.t_x'))", setResult{10204, "Duplicate sharding rule names '[" + table + "]' in database 'rules_db'."}},
				{"CREATE SHARDING TABLE RULE t_bad (DATANODES('ds_9.t_bad'))", setResult{10102, "Storage units '[ds_9]' do not exist in database 'rules_db'."}},
				{"CREATE SHARDING TABLE RULE t_bad (DATANODES('ds_0.t_${0..1}'), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=id, SHARDING_ALGORITHM(TYPE(NAME='nope'))))", setResult{10404, "Invalid sharding algorithm configuration 'nope'."}},
				{"CREATE SHARDING TABLE RULE `t/x` (DATANODES('ds_0.t_x'))", setResult{10200, "Invalid 'sharding table' rule 't/x', error message is: the name may not contain '/'"}},
				{"CREATE BROADCAST TABLE RULE b_" + w.name, setResult{}},
				{"CREATE READWRITE_SPLITTING RULE " + rw + " (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1))", setResult{}},
				{"CREATE READWRITE_SPLITTING RULE rw_bad (WRITE_STORAGE_UNIT=ds_9, READ_STORAGE_UNITS(ds_1))", setResult{10102, "Storage units '[ds_9]' do not exist in database 'rules_db'."}},
				{"DROP READWRITE_SPLITTING RULE rw_none", setResult{10202, "Readwrite-splitting rules '[rw_none]' do not exist in database 'rules_db'."}},
				{"SET DEFAULT SINGLE TABLE STORAGE UNIT = " + rw, setResult{}},
				{"LOAD SINGLE TABLE ds_9.t_x", setResult{10102, "Storage units '[ds_9]' do not exist in database 'rules_db'."}},
				{"SET DEFAULT SINGLE TABLE STORAGE UNIT = RANDOM", setResult{}},
				{"DROP READWRITE_SPLITTING RULE " + rw, setResult{}},
				{"ALTER SQL_PARSER RULE (PARSE_TREE_CACHE(INITIAL_CAPACITY=" + strconv.Itoa(64+i) + ", MAXIMUM_SIZE=512))", setResult{}},
				{"ALTER TRANSACTION RULE (DEFAULT='XA', TYPE(NAME='nope'))", setResult{30000, "SPI-00001: No implementation class load from SPI 'org.apache.shardingsphere.transaction.spi.ShardingSphereDistributedTransactionManager' with type 'nope'."}},
				{"CREATE MASK RULE m_" + w.name + " (COLUMNS((NAME=c, TYPE(NAME='MD5'))))", setResult{}},
				{"CREATE MASK RULE m_" + w.name + " (COLUMNS((NAME=c, TYPE(NAME='MD5'))))", setResult{10204, "Duplicate mask rule names '[m_" + w.name + "]' in database 'rules_db'."}},
				{"CREATE ENCRYPT RULE e_" + w.name + " (COLUMNS((NAME=c, CIPHER=c_c, ENCRYPT_ALGORITHM(TYPE(NAME='AES', PROPERTIES('aes-key-value'='k', 'digest-algorithm-name'='SHA-1'))))))", setResult{}},
				{"CREATE ENCRYPT RULE e_bad (COLUMNS((NAME=c, CIPHER=c_c, ENCRYPT_ALGORITHM(TYPE(NAME='MD5')))))", setResult{10400, "Algorithm 'MD5AssistedEncryptAlgorithm' initialization failed, reason is: Can not support decrypt."}},
			} {
				global := isGlobal(t, tc.statement)
				beforeGlobal, _, err := metadata.ReadGlobalRules(ctx, repo)
				if err != nil {
					t.Fatal(err)
				}
				before, _, err := metadata.ReadDatabase(ctx, repo, "rules_db")
				if err != nil {
					t.Fatal(err)
				}
				got := w.apply(t, tc.statement)
				if got != tc.want {
					t.Fatalf("%s: %s answered %+v, want %+v", w.name, tc.statement, got, tc.want)
				}
				after, _, err := metadata.ReadDatabase(ctx, repo, "rules_db")
				if err != nil {
					t.Fatal(err)
				}
				afterGlobal, _, err := metadata.ReadGlobalRules(ctx, repo)
				if err != nil {
					t.Fatal(err)
				}
				if tc.want.code != 0 {
					if metadata.RulesDigest(after.Rules) != metadata.RulesDigest(before.Rules) ||
						metadata.GlobalRulesDigest(afterGlobal) != metadata.GlobalRulesDigest(beforeGlobal) {
						t.Fatalf("%s: a refused statement changed the rules", w.name)
					}
					continue
				}
				// Written, and acknowledged before the front end answered.
				key, _ := paths.PropsApplied(id)
				kv, err := repo.Get(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				ackKey, digest := "rules_db", metadata.RulesDigest(after.Rules)
				if global {
					ackKey, digest = distvar.GlobalRules, metadata.GlobalRulesDigest(afterGlobal)
				}
				if ack := distvar.ParseAck(kv.Value); ack.Rules[ackKey] != digest {
					t.Errorf("%s: the node's acknowledgement %q when %s returned, want digest %s", w.name, kv.Value, tc.statement, digest)
				}
			}
			final, _, err := metadata.ReadDatabase(ctx, repo, "rules_db")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := final.Rules["sharding"].Content["tables"].(map[string]any)[table]; !ok {
				t.Errorf("%s: table %s is not in the registry's rule", w.name, table)
			}
			if tables, _ := final.Rules["broadcast"].Content["tables"].([]any); !slices.Contains(tables, any("b_"+w.name)) {
				t.Errorf("%s: broadcast tables %v", w.name, tables)
			}
			global, _, err := metadata.ReadGlobalRules(ctx, repo)
			if err != nil {
				t.Fatal(err)
			}
			if got := rule.Map(global["sql_parser"].Content["parseTreeCache"])["initialCapacity"]; got != 64+i {
				t.Errorf("%s: the sql_parser rule's parse tree cache capacity is %v, want %d", w.name, got, 64+i)
			}
			if _, ok := final.Rules["mask"].Content["tables"].(map[string]any)["m_"+w.name]; !ok {
				t.Errorf("%s: mask table m_%s is not in the registry's rule", w.name, w.name)
			}
			if _, ok := final.Rules["encrypt"].Content["tables"].(map[string]any)["e_"+w.name]; !ok {
				t.Errorf("%s: encrypt table e_%s is not in the registry's rule", w.name, w.name)
			}
		})
	}
}

// isGlobal reports whether statement is a global rule statement.
func isGlobal(t *testing.T, statement string) bool {
	st, err := families.Parse(statement)
	if err != nil {
		t.Fatal(err)
	}
	return rules.IsGlobal(st)
}

// TestRuleApplyRefusesAMismatchedDatabase: rules apply says what is wrong
// with --database before it reaches a registry or a node.
func TestRuleApplyRefusesAMismatchedDatabase(t *testing.T) {
	for _, tc := range []struct{ db, statement, want string }{
		{"db_a", "DROP READWRITE_SPLITTING RULE rw FROM db_b", "the statement names database db_b, --database db_a: give --database db_b"},
		{"", "CREATE BROADCAST TABLE RULE t_dict", "--database is required for a database rule statement"},
		{"db_a", "ALTER SQL_PARSER RULE (PARSE_TREE_CACHE(INITIAL_CAPACITY=64, MAXIMUM_SIZE=512))", "a global rule statement changes no database: leave out --database"},
		{"db_a", "SHOW COMPUTE NODES", "not a rule statement"},
	} {
		err := applyRule(context.Background(), &target{}, tc.db, tc.statement, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--database %q %s: %v, want %q", tc.db, tc.statement, err, tc.want)
		}
	}
}
