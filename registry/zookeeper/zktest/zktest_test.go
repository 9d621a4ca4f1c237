package zktest_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// ExpireSession is exercised by the ZooKeeper backend's conformance suite
// (SessionExpiry, LockReleasedByExpiry); this test covers Namespace.
func TestNamespaceDroppedAtCleanup(t *testing.T) {
	zs := zktest.New(t)
	ctx := testenv.Context(t)
	var ns string
	t.Run("use", func(t *testing.T) {
		ns = zs.Namespace(t, "sk_zktest_")
		r := zs.Open(t, ns)
		if _, err := r.Put(ctx, "/a/b", []byte("v")); err != nil {
			t.Fatal(err)
		}
		sess, err := r.NewSession(ctx, registry.SessionOptions{TTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sess.Close(ctx) })
		if err := sess.PutEphemeral(ctx, "/e", []byte("v")); err != nil {
			t.Fatal(err)
		}
	})
	conn, _, err := zk.Connect(zs.Servers, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if ok, _, err := conn.Exists("/" + ns); ok || err != nil {
		t.Fatalf("namespace root /%s after cleanup: exists %v, %v", ns, ok, err)
	}
}
