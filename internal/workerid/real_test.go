package workerid

import (
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// etcdBackend runs the suite on the real etcd server; sessions expire by
// revoking their lease from another client, as the registry would.
func etcdBackend(t *testing.T) func() backend {
	srv := etcdtest.New(t)
	return func() backend {
		ns := srv.Namespace(t, "sk_wid_")
		return backend{
			open: func(t *testing.T) registry.Repository {
				r, err := etcd.Open(testenv.Context(t), etcd.Config{Endpoints: srv.Endpoints, Namespace: ns})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { r.Close() })
				return r
			},
			expire: func(t *testing.T, s registry.Session) { srv.ExpireSession(t, s) },
		}
	}
}

// zookeeperBackend runs the suite on the real ZooKeeper server; sessions
// expire on the server (closed from a second connection on the same
// session), and their owners learn of it when they reconnect.
func zookeeperBackend(t *testing.T) func() backend {
	zs := zktest.New(t)
	return func() backend {
		ns := zs.Namespace(t, "sk_wid_")
		return backend{
			open: func(t *testing.T) registry.Repository {
				r, err := zookeeper.Open(testenv.Context(t), zookeeper.Config{Servers: zs.Servers, Namespace: ns, SessionTimeout: 10 * time.Second, Dialer: zs.Dial})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { r.Close() })
				return r
			},
			expire: func(t *testing.T, s registry.Session) { zs.ExpireSession(t, s) },
		}
	}
}

func TestAcquireEtcd(t *testing.T)      { runAcquireSuite(t, etcdBackend(t)) }
func TestAcquireZooKeeper(t *testing.T) { runAcquireSuite(t, zookeeperBackend(t)) }
