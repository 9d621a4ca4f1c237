package dbconfig

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

// TestImportRefusedByARegisteredReader, on real etcd and ZooKeeper: with
// a ShardingSphere 5.5.4 node registered, an IMPORT in the 5.5.3 layout
// of a table with a key generate strategy (which 5.5.4 cannot load) is
// refused with 17020 naming the node, and writes nothing; in the 5.5.4
// layout it is written; a 5.5.2 node then refuses the 5.5.4 default
// strategy of another import.
func TestImportRefusedByARegisteredReader(t *testing.T) {
	realtest.Each(t, "sk_dbconfig_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo, dir := open(t), t.TempDir()
		seed(t, repo, dir)
		register := func(id, version string) {
			sess, err := repo.NewSession(ctx, registry.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sess.Close(context.WithoutCancel(ctx)) })
			key, _ := paths.Online(paths.Proxy, id)
			if err := sess.PutEphemeral(ctx, key, fmt.Appendf(nil, "attribute: 127.0.0.1@3307\ndatabaseName: ''\nversion: %s\n", version)); err != nil {
				t.Fatal(err)
			}
		}
		refused := func(layout paths.Layout, name, node string) {
			t.Helper()
			before := dump(t, repo)
			_, err := Import(ctx, repo, name+".yaml", configYAML(dir, name, ""), Options{Layout: layout, ListenerHold: time.Millisecond})
			var se *sqlerr.Error
			if !errors.As(err, &se) || se.Code != metadata.LayoutRefusalCode || !strings.Contains(se.Message, node) {
				t.Fatalf("import in the %s layout next to %s: %v, want the layout refusal naming it", layout, node, err)
			}
			if after := dump(t, repo); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatal("the refused import wrote to the registry")
			}
		}
		register("ss-554", "5.5.4")
		refused(paths.Layout553, "sharding_db", "ss-554")
		if _, err := Import(ctx, repo, "sharding_db.yaml", configYAML(dir, "sharding_db", ""), Options{Layout: paths.Layout554, ListenerHold: time.Millisecond}); err != nil {
			t.Fatalf("import in the 5.5.4 layout next to a 5.5.4 node: %v", err)
		}
		register("ss-552", "5.5.2")
		refused(paths.Layout554, "copy_db", "ss-552")
	})
}
