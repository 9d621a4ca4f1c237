package rules

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// realRegistries open a fresh namespace of real etcd and of real
// ZooKeeper.
var realRegistries = map[string]func(t *testing.T) registry.Repository{
	"etcd": func(t *testing.T) registry.Repository {
		s := etcdtest.New(t)
		return s.Open(t, s.Namespace(t, "rules"))
	},
	"zookeeper": func(t *testing.T) registry.Repository {
		s := zktest.New(t)
		return s.Open(t, s.Namespace(t, "rules"))
	},
}

// meddlingSession runs meddle once, right before the first Commit: a
// change another node makes between a rule change's read and its write.
type meddlingSession struct {
	registry.Session
	meddle func()
}

func (s *meddlingSession) Commit(ctx context.Context, txn registry.Txn) (registry.Version, error) {
	if s.meddle != nil {
		s.meddle()
		s.meddle = nil
	}
	return s.Session.Commit(ctx, txn)
}

// TestChangeGlobalRuleUnderAConcurrentChange, on real etcd and ZooKeeper:
// when another global rule changes between ChangeGlobalRule's read and its
// commit, the change is still written and its digest is the one of the
// global rules the registry holds afterwards (nodes acknowledge that one);
// when the same rule changes, the change is computed again from the rule
// the other node wrote, so that nothing of that one is undone.
func TestChangeGlobalRuleUnderAConcurrentChange(t *testing.T) {
	for name, open := range realRegistries {
		t.Run(name, func(t *testing.T) {
			ctx := testenv.Context(t)
			repo := open(t)
			if err := metadata.PersistGlobal(ctx, repo, []config.Rule{{Type: "sql_federation", Content: map[string]any{"sqlFederationEnabled": false}}}, nil); err != nil {
				t.Fatal(err)
			}
			sess, err := repo.NewSession(ctx, registry.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close(context.Background())
			meddle := func(r config.Rule) func() {
				return func() {
					conds, ops, err := metadata.GlobalWrites(ctx, repo, []config.Rule{r}, nil)
					if err == nil {
						_, err = sess.Commit(ctx, registry.Txn{Conds: conds, Ops: ops})
					}
					if err != nil {
						t.Errorf("the concurrent change of %s: %v", r.Type, err)
					}
				}
			}
			transaction := config.Rule{Type: "transaction", Content: map[string]any{"defaultType": "XA", "providerType": "Narayana"}}

			// Another rule, and a rule that did not exist, change meanwhile.
			for _, other := range []config.Rule{
				{Type: "sql_federation", Content: map[string]any{"sqlFederationEnabled": true}},
				{Type: "sql_translator", Content: map[string]any{"type": "NATIVE"}},
			} {
				rc, err := ChangeGlobalRule(ctx, repo, "transaction", replace(transaction.Content), ChangeOptions{Session: &meddlingSession{Session: sess, meddle: meddle(other)}})
				if err != nil || !rc.Changed {
					t.Fatalf("ChangeGlobalRule while %s changed: %+v %v", other.Type, rc, err)
				}
				rules, _, err := metadata.ReadGlobalRules(ctx, repo)
				if err != nil {
					t.Fatal(err)
				}
				if want := metadata.GlobalRulesDigest(rules); rc.Digest != want {
					t.Fatalf("while %s changed: digest %q, the registry's global rules %v give %q", other.Type, rc.Digest, rules, want)
				}
				for k, v := range other.Content { // the registry's rule has defaults added
					if !reflect.DeepEqual(rules[other.Type].Content[k], v) {
						t.Fatalf("while %s changed: the registry holds %v", other.Type, rules)
					}
				}
				if !reflect.DeepEqual(rules["transaction"].Content, transaction.Content) {
					t.Fatalf("while %s changed: the registry holds %v", other.Type, rules)
				}
				transaction.Content["providerType"] = transaction.Content["providerType"].(string) + "x"
			}

			// The rule itself changes meanwhile: the change is made again
			// from theirs.
			theirs := config.Rule{Type: "transaction", Content: map[string]any{"defaultType": "BASE", "providerType": "Seata"}}
			addProps := func(c map[string]any) (map[string]any, error) {
				c["props"] = map[string]any{"mine": "1"}
				return c, nil
			}
			if _, err := ChangeGlobalRule(ctx, repo, "transaction", addProps, ChangeOptions{Session: &meddlingSession{Session: sess, meddle: meddle(theirs)}}); err != nil {
				t.Fatalf("ChangeGlobalRule while the rule itself changed: %v", err)
			}
			rules, _, err := metadata.ReadGlobalRules(ctx, repo)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"defaultType": "BASE", "providerType": "Seata", "props": map[string]any{"mine": "1"}}
			if !reflect.DeepEqual(rules["transaction"].Content, want) {
				t.Fatalf("after a concurrent change of the rule itself the registry holds %v, want %v", rules["transaction"].Content, want)
			}
		})
	}
}

// replace is a global rule change that makes the rule c.
func replace(c map[string]any) func(map[string]any) (map[string]any, error) {
	return func(map[string]any) (map[string]any, error) { return config.CloneContent(c), nil }
}

// TestDatabaseRuleDigestUnderAConcurrentChange, on real etcd and
// ZooKeeper: when another node adds a rule of the database between a rule
// statement's read and its commit, the digest the statement waits for is
// the one of the rules the registry holds afterwards, both rules included,
// which is what the nodes acknowledge.
func TestDatabaseRuleDigestUnderAConcurrentChange(t *testing.T) {
	for name, open := range realRegistries {
		t.Run(name, func(t *testing.T) {
			ctx := testenv.Context(t)
			repo := open(t)
			db := config.Database{Name: "db", DataSources: map[string]config.DataSource{
				"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", ""),
				"ds_1": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_1", "root", ""),
			}}
			if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, db); err != nil {
				t.Fatal(err)
			}
			sess, err := repo.NewSession(ctx, registry.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close(context.Background())
			meddle := func() {
				rw := config.Rule{Type: "readwrite_splitting", Content: map[string]any{"dataSourceGroups": map[string]any{
					"rw": map[string]any{"writeDataSourceName": "ds_0", "readDataSourceNames": []any{"ds_1"}}}}}
				conds, ops, err := metadata.RuleWrites(ctx, repo, paths.DefaultLayout, "db", config.Rule{}, rw)
				if err == nil {
					_, err = sess.Commit(ctx, registry.Txn{Conds: conds, Ops: ops})
				}
				if err != nil {
					t.Errorf("the concurrent change: %v", err)
				}
			}
			st, err := families.Parse("CREATE SHARDING TABLE RULE t_order (DATANODES('ds_${0..1}.t_order'))")
			if err != nil {
				t.Fatal(err)
			}
			out, err := Apply(ctx, repo, "db", st, Options{Layout: paths.DefaultLayout, Timeout: time.Millisecond,
				Session: &meddlingSession{Session: sess, meddle: meddle}})
			if err != nil || !out.Changed {
				t.Fatalf("Apply: %+v %v", out, err)
			}
			d, _, err := metadata.ReadDatabase(ctx, repo, "db")
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Rules) != 2 || out.Digest != metadata.RulesDigest(d.Rules) {
				t.Fatalf("digest %q; the registry's rules %v give %q", out.Digest, d.Rules, metadata.RulesDigest(d.Rules))
			}

			// Another node creates the same table rule meanwhile: the
			// statement is computed again and answers as if it came second.
			theirs := config.CloneContent(d.Rules["sharding"].Content)
			rule.Map(theirs["tables"])["t_user"] = map[string]any{"actualDataNodes": "ds_0.t_user", "logicTable": "t_user"}
			meddleSame := func() {
				conds, ops, err := metadata.RuleWrites(ctx, repo, paths.DefaultLayout, "db", d.Rules["sharding"], config.Rule{Type: "sharding", Content: theirs})
				if err == nil {
					_, err = sess.Commit(ctx, registry.Txn{Conds: conds, Ops: ops})
				}
				if err != nil {
					t.Errorf("the concurrent change: %v", err)
				}
			}
			st, err = families.Parse("CREATE SHARDING TABLE RULE t_user (DATANODES('ds_1.t_user'))")
			if err != nil {
				t.Fatal(err)
			}
			_, err = Apply(ctx, repo, "db", st, Options{Layout: paths.DefaultLayout, Timeout: time.Millisecond,
				Session: &meddlingSession{Session: sess, meddle: meddleSame}})
			var se *sqlerr.Error
			if !errors.As(err, &se) || !strings.Contains(se.Message, "t_user") {
				t.Fatalf("CREATE of a table rule another node created meanwhile: %v, want the duplicate rule error", err)
			}
			d, _, err = metadata.ReadDatabase(ctx, repo, "db")
			if err != nil {
				t.Fatal(err)
			}
			if got := rule.Map(rule.Map(d.Rules["sharding"].Content["tables"])["t_user"])["actualDataNodes"]; got != "ds_0.t_user" {
				t.Fatalf("the other node's t_user was overwritten: %v", got)
			}
		})
	}
}
