package metadata

import (
	"reflect"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// confConfig is the project's example conf dir (conf/), loaded as a node
// loads it.
func confConfig(t testing.TB) *config.Config {
	t.Helper()
	cfg, err := config.Load(testenv.Context(t), "../../conf")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestExampleConfRoundTrips: the project's example conf, persisted by a
// first node on each real registry in each target layout, reads back as it
// was written (every unit, every rule as upstream writes it, props and
// global rules), and a second node starting with the same conf finds
// nothing of it left out.
func TestExampleConfRoundTrips(t *testing.T) {
	for _, b := range realBackends(t) {
		for _, layout := range paths.Layouts {
			t.Run(b.name+"/"+layout.String(), func(t *testing.T) {
				cfg := confConfig(t)
				cfg.Mode.Repository.Layout = layout
				repo := b.open(t)
				store, _ := bootOn(t, repo, cfg, fakeIntrospect)
				want, _ := cfg.Database("shop_db")
				db := store.Current().Databases["shop_db"]
				if db == nil || len(db.Units) != len(want.DataSources) || len(db.Rules) != len(want.Rules) {
					t.Fatalf("shop_db = %+v, want %d units and %d rules", db, len(want.DataSources), len(want.Rules))
				}
				for name, ds := range want.DataSources {
					if !db.Units[name].Equal(ds) {
						t.Errorf("unit %s = %+v, want %+v", name, db.Units[name], ds)
					}
				}
				for _, r := range want.Rules {
					r, err := upstreamRule(layout, r)
					if err != nil {
						t.Fatal(err)
					}
					if got := db.Rules[r.Type].Content; !reflect.DeepEqual(got, normalise(t, r.Content)) {
						t.Errorf("rule %s = %#v\nwant %#v", r.Type, got, normalise(t, r.Content))
					}
				}
				s := store.Current()
				for k, v := range cfg.Props {
					if s.Props[k] != v {
						t.Errorf("prop %s = %q, want %q", k, s.Props[k], v)
					}
				}
				for _, r := range cfg.GlobalRules {
					if _, ok := s.GlobalRules[r.Type]; !ok {
						t.Errorf("no global rule %s in %v", r.Type, s.GlobalRules)
					}
				}
				second, _ := bootOn(t, another(t, repo), confConfig(t), fakeIntrospect)
				if left := NotApplied(confConfig(t), second.Current()); len(left) != 0 {
					t.Errorf("a second node with the same conf left out %v", left)
				}
			})
		}
	}
}
