package metadata_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestRuleStatementsLoadUpstream runs the sharding, broadcast, mask and encrypt rule
// statements of the console in each layout and loads every rule item they
// wrote into that release's classes (strict Go and SnakeYAML).
func TestRuleStatementsLoadUpstream(t *testing.T) {
	for _, layout := range []paths.Layout{paths.Layout552, paths.Layout553, paths.Layout554} {
		t.Run(layout.String(), func(t *testing.T) {
			ctx := testenv.Context(t)
			repo := memory.New()
			db := config.Database{Name: "sharding_db", DataSources: map[string]config.DataSource{}}
			for i := range 2 {
				db.DataSources[fmt.Sprintf("ds_%d", i)] = config.DataSource{URL: fmt.Sprintf("jdbc:mysql://127.0.0.1:3306/ds_%d", i), MaxPoolSize: 5}
			}
			if err := metadatatest.CreateDatabase(ctx, repo, layout, db); err != nil {
				t.Fatal(err)
			}
			node, err := cluster.Open(ctx, repo, cluster.Config{InstanceID: "stmt-1", Port: 3307, Reservation: 600 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer node.Close(context.Background())
			store, err := metadata.Bootstrap(ctx, repo, nil, nil, metadata.Options{})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = store.Run(runCtx) }()
			defer func() { stop(); <-done }()
			e := console.New(console.Deps{Repo: repo, Node: node, Metadata: store, Layout: layout})
			s := &console.Session{ID: console.NewSessionID(), User: "root", Host: "127.0.0.1", Protocol: "MySQL", Database: "sharding_db"}
			statements := []string{
				"CREATE SHARDING TABLE RULE t_order (DATANODES('ds_${0..1}.t_order_${0..1}'), DATABASE_STRATEGY(TYPE='standard', SHARDING_COLUMN=user_id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='ds_${user_id % 2}')))), TABLE_STRATEGY(TYPE='standard', SHARDING_COLUMN=order_id, SHARDING_ALGORITHM(TYPE(NAME='inline', PROPERTIES('algorithm-expression'='t_order_${order_id % 2}')))), KEY_GENERATE_STRATEGY(COLUMN=order_id, TYPE(NAME='snowflake', PROPERTIES('max-vibration-offset'=3))), AUDIT_STRATEGY(TYPE(NAME='DML_SHARDING_CONDITIONS'), ALLOW_HINT_DISABLE=true))",
				"CREATE SHARDING TABLE RULE t_order_item (DATANODES('ds_${0..1}.t_order_item_${0..1}'), TABLE_STRATEGY(TYPE='complex', SHARDING_COLUMNS=order_id,user_id, SHARDING_ALGORITHM(TYPE(NAME='complex_inline', PROPERTIES('algorithm-expression'='t_order_item_${order_id % 2}', 'sharding-columns'='order_id,user_id')))))",
				"CREATE SHARDING TABLE RULE t_auto (STORAGE_UNITS(ds_0, ds_1), SHARDING_COLUMN=id, TYPE(NAME='hash_mod', PROPERTIES('sharding-count'='4')), KEY_GENERATE_STRATEGY(COLUMN=id, TYPE(NAME='uuid')))",
				"CREATE SHARDING TABLE REFERENCE RULE ref_0 (t_order, t_order_item)",
				"CREATE DEFAULT SHARDING DATABASE STRATEGY (TYPE='standard', SHARDING_COLUMN=user_id, SHARDING_ALGORITHM(TYPE(NAME='mod', PROPERTIES('sharding-count'='2'))))",
				"CREATE DEFAULT SHARDING TABLE STRATEGY (TYPE='none')",
				"CREATE SHARDING KEY GENERATE STRATEGY t_order_item_id (TABLE=t_order_item, COLUMN=item_id, TYPE(NAME='snowflake'))",
				"CREATE BROADCAST TABLE RULE t_dict, t_country",
				"CREATE MASK RULE t_user (COLUMNS((NAME=password, TYPE(NAME='MD5')), (NAME=telephone, TYPE(NAME='KEEP_FIRST_N_LAST_M', PROPERTIES('first-n'=3, 'last-m'=4, 'replace-char'='*')))))",
				"CREATE ENCRYPT RULE t_user (COLUMNS((NAME=phone, CIPHER=phone_c, ASSISTED_QUERY=phone_q, LIKE_QUERY=phone_l, ENCRYPT_ALGORITHM(TYPE(NAME='AES', PROPERTIES('aes-key-value'='123456abc', 'digest-algorithm-name'='SHA-1'))), ASSISTED_QUERY_ALGORITHM(TYPE(NAME='MD5')), LIKE_QUERY_ALGORITHM(TYPE(NAME='CHAR_DIGEST_LIKE')))))",
			}
			if layout == paths.Layout554 {
				statements = append(statements, `CREATE SHARDING KEY GENERATE STRATEGY order_seq (SEQUENCE="order_seq", GENERATOR=t_order_snowflake)`)
			}
			for _, q := range statements {
				if _, err := e.Execute(ctx, s, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			n := metadata.CheckRuleItemsUpstream(t, layout, repo)
			if n < 10 {
				t.Fatalf("only %d rule items were checked", n)
			}
			t.Logf("%d rule items load upstream", n)
		})
	}
}
