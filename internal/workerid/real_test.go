package workerid

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// etcdBackend runs the suite on the real etcd server; sessions expire by
// revoking their lease from another client, as the registry would.
func etcdBackend(t *testing.T) func() backend {
	srv := etcdtest.New(t)
	return func() backend {
		ns := srv.Namespace(t, "sk_wid_")
		return backend{
			open:   func(t *testing.T) registry.Repository { return srv.Open(t, ns) },
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
			open:   func(t *testing.T) registry.Repository { return zs.Open(t, ns) },
			expire: func(t *testing.T, s registry.Session) { zs.ExpireSession(t, s) },
		}
	}
}

func TestAcquireEtcd(t *testing.T)      { runAcquireSuite(t, etcdBackend(t)) }
func TestAcquireZooKeeper(t *testing.T) { runAcquireSuite(t, zookeeperBackend(t)) }
