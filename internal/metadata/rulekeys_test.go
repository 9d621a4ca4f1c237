package metadata

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// ruleKeysModel is what a RuleKeys must hold: its keys by key.
type ruleKeysModel map[string]registry.KV

func (m ruleKeysModel) sorted() []registry.KV {
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// randomRuleKey is one of a few hundred keys, some a prefix of others
// ("/r/t1" and "/r/t12"), so that Under must tell a node's keys apart.
func randomRuleKey(rnd *rand.Rand) string {
	node := fmt.Sprintf("/r/t%d", rnd.IntN(60))
	switch rnd.IntN(3) {
	case 0:
		return node
	case 1:
		return node + "/active_version"
	}
	return fmt.Sprintf("%s/versions/%d", node, rnd.IntN(3))
}

// checkRuleKeys fails when k is not m.
func checkRuleKeys(t *testing.T, rnd *rand.Rand, k RuleKeys, m ruleKeysModel) {
	t.Helper()
	want := m.sorted()
	if got := slices.Collect(k.All()); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
		t.Fatalf("All:\n got %v\nwant %v", got, want)
	}
	if got := k.Sorted(); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
		t.Fatalf("Sorted:\n got %v\nwant %v", got, want)
	}
	if k.Len() != len(want) {
		t.Fatalf("Len %d, want %d", k.Len(), len(want))
	}
	for range 8 {
		key := randomRuleKey(rnd)
		got, ok := k.Get(key)
		if w, had := m[key]; ok != had || !reflect.DeepEqual(got, w) {
			t.Fatalf("Get(%s) = %v %v, want %v %v", key, got, ok, w, had)
		}
		node := fmt.Sprintf("/r/t%d", rnd.IntN(60))
		wantUnder := map[string]registry.KV{}
		for key, kv := range m {
			if key == node || strings.HasPrefix(key, node+"/") {
				wantUnder[key] = kv
			}
		}
		if got := k.Under(node); !reflect.DeepEqual(got, wantUnder) {
			t.Fatalf("Under(%s) = %v, want %v", node, got, wantUnder)
		}
	}
}

// TestRuleKeysRandom brings a RuleKeys forward by random changes (puts,
// deletions, both of one key, deletions of absent keys) through several
// compactions, and checks every version against the same changes applied
// to a plain map, the versions kept along the way included: a version is
// never changed by those made from it.
func TestRuleKeysRandom(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	m := ruleKeysModel{}
	var base []registry.KV
	for range 100 {
		key := randomRuleKey(rnd)
		m[key] = registry.KV{Key: key, Value: []byte("v0"), Version: 1}
	}
	base = m.sorted()
	k := NewRuleKeys(base)
	type kept struct {
		k RuleKeys
		m ruleKeysModel
	}
	var versions []kept
	compactions := 0
	for step := range 1500 {
		var deleted []string
		changed := map[string]registry.KV{}
		for range 1 + rnd.IntN(4) {
			key := randomRuleKey(rnd)
			if rnd.IntN(3) == 0 {
				deleted = append(deleted, key)
			} else {
				changed[key] = registry.KV{Key: key, Value: fmt.Appendf(nil, "v%d", step), Version: registry.Version(step + 2)}
			}
		}
		puts := ruleKeysModel(changed).sorted()
		k = k.With(deleted, puts)
		for _, key := range deleted {
			delete(m, key)
		}
		maps.Copy(m, changed)
		if len(k.over) == 0 {
			compactions++
		}
		if len(k.over) > maxOverlay(len(k.base)) {
			t.Fatalf("step %d: overlay of %d over %d keys, past %d", step, len(k.over), len(k.base), maxOverlay(len(k.base)))
		}
		checkRuleKeys(t, rnd, k, m)
		if step%100 == 0 {
			versions = append(versions, kept{k, maps.Clone(m)})
		}
	}
	if compactions < 3 {
		t.Fatalf("%d compactions in 1500 changes: the overlay was not merged", compactions)
	}
	for _, v := range versions {
		checkRuleKeys(t, rnd, v.k, v.m)
	}
}

// TestRuleKeysCompaction: the overlay keeps up to maxOverlay(n) changes
// over a base of n keys and is merged into a new base at the next one;
// the old base is not modified.
func TestRuleKeysCompaction(t *testing.T) {
	for _, n := range []int{0, 10, 40000} {
		base := make([]registry.KV, n)
		for i := range base {
			base[i] = registry.KV{Key: fmt.Sprintf("/a/%08d", i), Value: []byte("x")}
		}
		baseCopy := slices.Clone(base)
		k := NewRuleKeys(base)
		limit := maxOverlay(n)
		for i := range limit {
			k = k.With(nil, []registry.KV{{Key: fmt.Sprintf("/b/%08d", i)}})
		}
		if len(k.over) != limit || len(k.base) != n || k.Len() != n+limit {
			t.Fatalf("n=%d: overlay %d base %d len %d after %d changes, want %d %d %d", n, len(k.over), len(k.base), k.Len(), limit, limit, n, n+limit)
		}
		k = k.With([]string{"/a/00000000", "/absent"}, []registry.KV{{Key: "/b/x"}})
		wantLen := n + limit + 1
		if n > 0 {
			wantLen--
		}
		if len(k.over) != 0 || len(k.base) != wantLen || k.Len() != wantLen {
			t.Fatalf("n=%d: overlay %d base %d len %d past the limit, want 0 %d %d", n, len(k.over), len(k.base), k.Len(), wantLen, wantLen)
		}
		if !reflect.DeepEqual(base, baseCopy) {
			t.Fatalf("n=%d: the old base changed", n)
		}
	}
	if maxOverlay(20000) != 256 || maxOverlay(1<<20) != 1448 {
		t.Fatalf("maxOverlay: %d %d", maxOverlay(20000), maxOverlay(1<<20))
	}
}

// TestRuleKeysSortedOnce: Sorted of a version with an overlay is built
// once and shared by the version's copies; without one it is the base.
func TestRuleKeysSortedOnce(t *testing.T) {
	base := []registry.KV{{Key: "/a"}, {Key: "/c"}}
	k := NewRuleKeys(base)
	if &k.Sorted()[0] != &base[0] {
		t.Fatal("Sorted of a version without an overlay copied its base")
	}
	next := k.With(nil, []registry.KV{{Key: "/b"}})
	again := next
	if s := next.Sorted(); &s[0] != &again.Sorted()[0] || len(s) != 3 {
		t.Fatalf("Sorted built twice, or wrong: %v", s)
	}
	if allocs := testing.AllocsPerRun(10, func() { next.Sorted() }); allocs != 0 {
		t.Fatalf("Sorted allocates %v once built", allocs)
	}
	if got := next.With([]string{"/absent"}, nil); got.all != next.all {
		t.Fatal("a deletion of an absent key made a new version")
	}
}

// TestRuleKeysConcurrentReaders: readers of older versions see them
// whole, unchanged, while other goroutines bring the set forward (run
// with -race).
func TestRuleKeysConcurrentReaders(t *testing.T) {
	var base []registry.KV
	for i := range 1000 {
		base = append(base, registry.KV{Key: fmt.Sprintf("/k/%04d", i), Value: []byte("0")})
	}
	k := NewRuleKeys(base)
	var wg sync.WaitGroup
	for g := range 4 {
		v := k
		for i := range g * 100 {
			v = v.With([]string{fmt.Sprintf("/k/%04d", i)}, []registry.KV{{Key: fmt.Sprintf("/n/%d/%04d", g, i)}})
		}
		want := slices.Collect(v.All())
		wg.Add(2)
		go func() { // a reader of v
			defer wg.Done()
			for range 50 {
				if got := v.Sorted(); !reflect.DeepEqual(got, want) || v.Len() != len(want) {
					t.Errorf("version %d changed under its reader", g)
					return
				}
				if _, ok := v.Get(want[len(want)/2].Key); !ok {
					t.Errorf("version %d lost a key", g)
					return
				}
			}
		}()
		go func() { // a writer from v
			defer wg.Done()
			w := v
			for i := range 600 {
				w = w.With([]string{want[i%len(want)].Key}, []registry.KV{{Key: fmt.Sprintf("/w/%d/%04d", g, i), Value: []byte("w")}})
			}
		}()
	}
	wg.Wait()
}

// TestDanglingVersionFollowsChanges brings a set of versioned nodes
// forward by 2,000 random changes (active versions moved, possibly to a
// version that is not there, versions added and deleted, active versions
// deleted), from a whole base and from a torn one, and wants
// DanglingVersion to agree each time with a check of every key.
func TestDanglingVersionFollowsChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 38))
	node := func(i int) string { return fmt.Sprintf("/metadata/db/rules/sharding/tables/t_%02d", i) }
	naive := func(keys RuleKeys) bool {
		held := map[string]registry.KV{}
		for kv := range keys.All() {
			held[kv.Key] = kv
		}
		for key, kv := range held {
			if nd, ok := strings.CutSuffix(key, "/"+paths.ActiveVersionName); ok {
				if n, ok := activeVersionOf(kv.Value); ok {
					if _, has := held[paths.Version(nd, n)]; !has {
						return true
					}
				}
			}
		}
		return false
	}
	for _, tornBase := range []bool{false, true} {
		var base []registry.KV
		for i := range 40 {
			for v := range 2 {
				base = append(base, registry.KV{Key: paths.Version(node(i), v), Value: []byte("x")})
			}
			av := "1"
			if tornBase && i == 3 {
				av = "5"
			}
			base = append(base, registry.KV{Key: paths.ActiveVersion(node(i)), Value: []byte(av)})
		}
		slices.SortFunc(base, func(a, b registry.KV) int { return strings.Compare(a.Key, b.Key) })
		keys := NewRuleKeys(base)
		if tornBase {
			// Over a base that is not whole, a change elsewhere does not hide
			// what the base holds.
			harmless := keys.With(nil, []registry.KV{{Key: paths.Version(node(20), 7), Value: []byte("z")}})
			if key, n, found := harmless.DanglingVersion(); !found || key != paths.ActiveVersion(node(3)) || n != 5 {
				t.Fatalf("over a torn base: DanglingVersion %s -> %d, %v; want %s -> 5", key, n, found, paths.ActiveVersion(node(3)))
			}
		}
		checked := 0
		for step := range 2000 {
			i := rng.IntN(40)
			var deleted []string
			var changed []registry.KV
			switch rng.IntN(4) {
			case 0:
				changed = append(changed, registry.KV{Key: paths.ActiveVersion(node(i)), Value: []byte(strconv.Itoa(rng.IntN(4)))})
			case 1:
				changed = append(changed, registry.KV{Key: paths.Version(node(i), rng.IntN(4)), Value: []byte("y")})
			case 2:
				deleted = append(deleted, paths.Version(node(i), rng.IntN(4)))
			case 3:
				deleted = append(deleted, paths.ActiveVersion(node(i)))
			}
			keys = keys.With(deleted, changed)
			key, n, found := keys.DanglingVersion()
			if want := naive(keys); found != want {
				t.Fatalf("torn base %v, step %d: DanglingVersion found %v (%s -> %d), a check of every key %v", tornBase, step, found, key, n, want)
			}
			if found {
				checked++
				nd, _ := strings.CutSuffix(key, "/"+paths.ActiveVersionName)
				if av, ok := keys.Get(key); !ok || string(av.Value) != strconv.Itoa(n) || keys.Has(paths.Version(nd, n)) {
					t.Fatalf("step %d: %s -> %d is not dangling", step, key, n)
				}
			}
		}
		if checked == 0 {
			t.Fatal("no step left a dangling active version: the test checks nothing")
		}
	}
}
