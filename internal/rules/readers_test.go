package rules

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

// registerShardingSphere registers a ShardingSphere proxy of release
// version as its node does (an ephemeral online node whose YAML value
// carries the version) and returns what makes it leave.
func registerShardingSphere(ctx context.Context, t *testing.T, repo registry.Repository, id, version string) (leave func()) {
	t.Helper()
	sess, err := repo.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key, err := paths.Online(paths.Proxy, id)
	if err != nil {
		t.Fatal(err)
	}
	value := "attribute: 127.0.0.1@3307\ndatabaseName: ''\nversion: " + version + "\n"
	if err := sess.PutEphemeral(ctx, key, []byte(value)); err != nil {
		t.Fatal(err)
	}
	closed := false
	leave = func() {
		if !closed {
			closed = true
			_ = sess.Close(context.WithoutCancel(ctx))
		}
	}
	t.Cleanup(leave)
	return leave
}

// TestRegisteredReadersRefuseWhatTheyCannotLoad, on real etcd and
// ZooKeeper: a rule change a registered ShardingSphere node's release
// could not load as written (or would load as null) is refused with 17020
// naming the node, its version and the layout it needs, and nothing is
// written; a change every release loads alike still goes through, and
// once the node left, the refused change does too.
func TestRegisteredReadersRefuseWhatTheyCannotLoad(t *testing.T) {
	const keyed = "CREATE SHARDING TABLE RULE t_order (DATANODES('ds_${0..1}.t_order'), KEY_GENERATE_STRATEGY(COLUMN=order_id, TYPE(NAME='snowflake')))"
	const defaultStrategy = "CREATE DEFAULT SHARDING DATABASE STRATEGY (TYPE='standard', SHARDING_COLUMN=user_id, SHARDING_ALGORITHM(TYPE(NAME='mod', PROPERTIES('sharding-count'='2'))))"
	const plain = "CREATE SHARDING TABLE RULE t_plain (DATANODES('ds_${0..1}.t_plain'))"
	for _, c := range []struct {
		name          string
		layout        paths.Layout // the writing node's
		readerVersion string
		refused       string
	}{
		// A 5.5.4 node fails the whole sharding rule on a table's keyGenerateStrategy.
		{"table key generate strategy read by 5.5.4", paths.Layout553, "5.5.4", keyed},
		// A 5.5.2 node loads a 5.5.3/5.5.4 default strategy as null.
		{"default strategy read by 5.5.2", paths.Layout554, "5.5.2", defaultStrategy},
	} {
		t.Run(c.name, func(t *testing.T) {
			realtest.Each(t, "sk_readers_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
				ctx := testenv.Context(t)
				repo := open(t)
				twoUnitDatabase(ctx, t, repo)
				apply := func(q string) (Outcome, error) {
					st, err := families.Parse(q)
					if err != nil {
						t.Fatal(err)
					}
					return Apply(ctx, repo, "db", st, Options{Layout: c.layout, Timeout: time.Second})
				}
				leave := registerShardingSphere(ctx, t, repo, "ss-proxy-1", c.readerVersion)

				before := dump(ctx, t, repo)
				_, err := apply(c.refused)
				var se *sqlerr.Error
				if !errors.As(err, &se) || se.Code != metadata.LayoutRefusalCode {
					t.Fatalf("%s next to a %s node: %v, want the layout refusal", c.refused, c.readerVersion, err)
				}
				for _, want := range []string{"ss-proxy-1", "ShardingSphere " + c.readerVersion, "needs the " + c.readerVersion + " layout", "registry migrate --to " + c.readerVersion, "layoutVersion"} {
					if !strings.Contains(se.Message, want) {
						t.Errorf("the refusal %q does not say %q", se.Message, want)
					}
				}
				if after := dump(ctx, t, repo); !bytes.Equal(before, after) {
					t.Fatalf("the refused change wrote to the registry:\nbefore\n%s\nafter\n%s", before, after)
				}

				if out, err := apply(plain); err != nil || !out.Changed {
					t.Fatalf("a table every release loads alike, next to a %s node: %+v %v", c.readerVersion, out, err)
				}

				leave()
				if out, err := apply(c.refused); err != nil || !out.Changed {
					t.Fatalf("%s once the %s node left: %+v %v", c.refused, c.readerVersion, out, err)
				}
			})
		})
	}
}
