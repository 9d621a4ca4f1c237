package etcd_test

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
	"github.com/shardkeeper/shardkeeper/registry/registrytest"
)

func TestConformance(t *testing.T) {
	srv := etcdtest.New(t)
	registrytest.Run(t, registrytest.Harness{
		New:           func(t *testing.T, ns string) registry.Repository { return srv.Open(t, ns) },
		ExpireSession: func(t *testing.T, sess registry.Session) { srv.ExpireSession(t, sess) },
		LoseWatches:   func(t *testing.T, repo registry.Repository) { repo.(*etcd.Repo).CloseWatches() },
	})
}
