package memory_test

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/registry/registrytest"
)

func TestConformance(t *testing.T) {
	stores := map[string]*memory.Repo{}
	registrytest.Run(t, registrytest.Harness{
		New: func(t *testing.T, ns string) registry.Repository {
			if r, ok := stores[ns]; ok {
				return r.Clone()
			}
			r := memory.New()
			stores[ns] = r
			return r.Clone()
		},
		ExpireSession: func(t *testing.T, s registry.Session) {
			if !memory.Expire(s) {
				t.Fatal("Expire: not a live memory session")
			}
		},
		LoseWatches: func(t *testing.T, r registry.Repository) { r.(*memory.Repo).DropWatches() },
	})
}
