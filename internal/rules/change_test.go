package rules

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestChangeGlobalRuleDigest: the digest ChangeGlobalRule returns is the
// one a node computes from the global rules it reads afterwards, so that
// WaitRules waits for what the nodes acknowledge.
func TestChangeGlobalRuleDigest(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	if err := metadata.PersistGlobal(ctx, repo, []config.Rule{{Type: "sql_federation", Content: map[string]any{"sqlFederationEnabled": false}}}, nil); err != nil {
		t.Fatal(err)
	}
	rc, err := ChangeGlobalRule(ctx, repo, "transaction", func(map[string]any) (map[string]any, error) {
		return map[string]any{"defaultType": "XA", "providerType": "Narayana"}, nil
	}, ChangeOptions{})
	if err != nil || !rc.Changed {
		t.Fatalf("ChangeGlobalRule: %+v %v", rc, err)
	}
	rules, _, err := metadata.ReadGlobalRules(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rc.Digest == "" || rc.Digest != metadata.GlobalRulesDigest(rules) {
		t.Errorf("digest %q, the registry's global rules %v give %q", rc.Digest, rules, metadata.GlobalRulesDigest(rules))
	}
}

// TestDigestOfEachChange554: each statement that changes the rule on the
// 5.5.4 layout changes the digest the nodes acknowledge, a second
// rule-level key generate strategy of a table included (the older
// layouts keep one per table), so that its wait covers it.
func TestDigestOfEachChange554(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	db := config.Database{Name: "db", DataSources: map[string]config.DataSource{
		"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", ""),
		"ds_1": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_1", "root", ""),
	}}
	if err := metadatatest.CreateDatabase(ctx, repo, paths.Layout554, db); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, q := range []string{
		"CREATE SHARDING TABLE RULE t_order (DATANODES('ds_${0..1}.t_order'), KEY_GENERATE_STRATEGY(COLUMN=order_id, TYPE(NAME='snowflake')))",
		`CREATE SHARDING KEY GENERATE STRATEGY order_seq (SEQUENCE="order_seq", TYPE(NAME="uuid"))`,
		"CREATE SHARDING KEY GENERATE STRATEGY item_id (TABLE=t_order, COLUMN=item_id, GENERATOR=t_order_snowflake)",
	} {
		st, err := families.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Apply(ctx, repo, "db", st, Options{Layout: paths.Layout554})
		if err != nil || !out.Changed {
			t.Fatalf("%s: %+v %v", q, out, err)
		}
		if prev, ok := seen[out.Digest]; ok {
			t.Errorf("%s: the digest %s is the one after %s", q, out.Digest, prev)
		}
		seen[out.Digest] = q
	}
}
