// Package realtest runs a test on each real registry of the test
// environment: etcd (through etcdtest) and ZooKeeper (through zktest), as
// the subtests "etcd" and "zookeeper", on namespaces dropped at the test's
// cleanup. Without a server the subtest fails under scripts/test.sh and is
// skipped otherwise.
package realtest

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// Each runs f on each real registry with one fresh namespace, named from
// prefix: every call of open is one more client of that namespace, closed
// at the cleanup of the test it is given. t is a *testing.T or a
// *testing.B; f runs as its subtests or sub-benchmarks.
func Each[T runner[T]](t T, prefix string, f func(t T, open func(t testing.TB) registry.Repository)) {
	each(t, func(t T, s server) {
		ns := s.namespace(t, prefix)
		f(t, func(t testing.TB) registry.Repository { return s.open(t, ns) })
	})
}

// EachFresh runs f on each real registry: every call of fresh opens a
// client of a namespace of its own, named from prefix, closed at the
// subtest's cleanup.
func EachFresh(t *testing.T, prefix string, f func(t *testing.T, fresh func() registry.Repository)) {
	each(t, func(t *testing.T, s server) {
		f(t, func() registry.Repository { return s.open(t, s.namespace(t, prefix)) })
	})
}

// server is one real registry as the harnesses reach it.
type server struct {
	namespace func(t testing.TB, prefix string) string
	open      func(t testing.TB, ns string) registry.Repository
}

// runner is *testing.T or *testing.B: a test that runs subtests of its
// own type.
type runner[T any] interface {
	testing.TB
	Run(name string, f func(T)) bool
}

func each[T runner[T]](t T, f func(t T, s server)) {
	t.Run("etcd", func(t T) {
		s := etcdtest.New(t)
		f(t, server{namespace: s.Namespace, open: func(t testing.TB, ns string) registry.Repository { return s.Open(t, ns) }})
	})
	t.Run("zookeeper", func(t T) {
		s := zktest.New(t)
		f(t, server{namespace: s.Namespace, open: func(t testing.TB, ns string) registry.Repository { return s.Open(t, ns) }})
	})
}
