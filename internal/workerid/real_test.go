package workerid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
)

func uniqueNamespace(t *testing.T) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "sk_wid_" + hex.EncodeToString(b)
}

// etcdBackend runs the suite on the real etcd server; sessions expire by
// revoking their lease from another client, as the registry would.
func etcdBackend(t *testing.T) func() backend {
	endpoints := testenv.EtcdEndpoints(t)
	return func() backend {
		ns := uniqueNamespace(t)
		return backend{
			open: func(t *testing.T) registry.Repository {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				r, err := etcd.Open(ctx, etcd.Config{Endpoints: endpoints, Namespace: ns})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { r.Close() })
				return r
			},
			expire: func(t *testing.T, s registry.Session) {
				lease, err := strconv.ParseInt(s.ID(), 16, 64)
				if err != nil {
					t.Fatalf("session id %q: %v", s.ID(), err)
				}
				c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, err := c.Revoke(testCtx(t), clientv3.LeaseID(lease)); err != nil {
					t.Fatalf("revoke: %v", err)
				}
			},
		}
	}
}

// zookeeperBackend runs the suite on the real ZooKeeper server. Expiry is a
// session Close here (its ephemerals go at once, as at expiry); the
// registry package's conformance suite covers real server-side expiry.
func zookeeperBackend(t *testing.T) func() backend {
	servers := testenv.ZooKeeperServers(t)
	return func() backend {
		ns := uniqueNamespace(t)
		return backend{
			open: func(t *testing.T) registry.Repository {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				r, err := zookeeper.Open(ctx, zookeeper.Config{Servers: servers, Namespace: ns, SessionTimeout: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { r.Close() })
				return r
			},
			expire: func(t *testing.T, s registry.Session) { s.Close(testCtx(t)) },
		}
	}
}

func TestAcquireEtcd(t *testing.T)      { runAcquireSuite(t, etcdBackend(t)) }
func TestAcquireZooKeeper(t *testing.T) { runAcquireSuite(t, zookeeperBackend(t)) }
