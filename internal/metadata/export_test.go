package metadata

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// CheckRuleItemsUpstream loads every database rule item persisted in repo
// into upstream's classes for layout, with the strict Go decoder and with
// SnakeYAML (testdata/snakeyaml), failing t for each that does not load;
// it returns how many items it checked. For the tests of other packages'
// writers (package metadata_test).
func CheckRuleItemsUpstream(t *testing.T, layout paths.Layout, repo registry.Repository) int {
	t.Helper()
	var items []persistedValue
	for _, v := range persistedValues(t, repo) {
		if v.k.Kind == paths.KindRuleItem {
			items = append(items, v)
		}
	}
	for _, v := range items {
		if err := checkUpstreamLoads(layout, v.k, v.data); err != nil {
			t.Errorf("%s: upstream cannot load it: %v\n%s", v.key, err, v.data)
		}
	}
	failures, err := loadWithSnakeYAML(t, layout, items)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range failures {
		t.Error(f)
	}
	return len(items)
}
