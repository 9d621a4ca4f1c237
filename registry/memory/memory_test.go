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

// plain hides the memory Repo's optional methods (LimitedLister,
// RangeReader), as a Repository of another package would lack them.
type plain struct{ registry.Repository }

// TestConformanceWithoutOptionalMethods runs the suite on a memory
// backend seen only through registry.Repository: registry.ListLimited
// then walks it with Children and Get.
func TestConformanceWithoutOptionalMethods(t *testing.T) {
	stores := map[string]*memory.Repo{}
	registrytest.Run(t, registrytest.Harness{
		New: func(t *testing.T, ns string) registry.Repository {
			if _, ok := stores[ns]; !ok {
				stores[ns] = memory.New()
			}
			return plain{stores[ns].Clone()}
		},
		ExpireSession: func(t *testing.T, s registry.Session) {
			if !memory.Expire(s) {
				t.Fatal("Expire: not a live memory session")
			}
		},
		LoseWatches: func(t *testing.T, r registry.Repository) { r.(plain).Repository.(*memory.Repo).DropWatches() },
	})
}
