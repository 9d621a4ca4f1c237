package etcdtest_test

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
)

// ExpireSession is exercised by the etcd backend's conformance suite
// (SessionExpiry, LockReleasedByExpiry); this test covers Namespace.
func TestNamespaceDroppedAtCleanup(t *testing.T) {
	srv := etcdtest.New(t)
	raw := srv.Client(t)
	ctx := testenv.Context(t)
	var ns string
	t.Run("use", func(t *testing.T) {
		ns = srv.Namespace(t, "sk_etcdtest_")
		for _, k := range []string{ns, ns + "/a", ns + "/a/b", ns + "x/kept"} {
			if _, err := raw.Put(ctx, k, "v"); err != nil {
				t.Fatal(err)
			}
		}
	})
	resp, err := raw.Get(ctx, ns, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Key) != ns+"x/kept" {
		t.Fatalf("after cleanup the prefix %s holds %v, want only %sx/kept", ns, resp.Kvs, ns)
	}
	_, _ = raw.Delete(ctx, ns+"x/kept")
}
