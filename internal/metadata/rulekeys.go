package metadata

import (
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// RuleKeys is an immutable set of registry keys (the rule keys of a
// database, as List returns them), sorted by key, that a RuleCache brings
// forward from version to version at the cost of what changed: a base
// slice shared by every version derived from it, plus this version's own
// small sorted overlay of the keys written or deleted since the base.
// Get, Has and Under cost O(log n) (plus the keys Under returns); With
// copies the overlay, O(overlay + changed), and merges it into a new
// base, O(n), only once it grows past maxOverlay(n), so that a change's
// amortized cost is O(sqrt(n)) key copies, not O(n). All iterates every
// key in order without copying them; Sorted materializes them as one
// slice, at most once per version. The zero value is empty. Safe for
// concurrent use; a version never changes once made.
type RuleKeys struct {
	base []registry.KV // sorted by key; shared, never modified
	over []keyChange   // sorted by key; this version's own, never modified
	n    int           // the keys in the set
	all  *sortedOnce   // Sorted's materialization; shared by copies of this version
	// whole is whether the base alone is whole (no active_version naming
	// a version the base lacks), checked once per base: shared by every
	// version over it (see DanglingVersion).
	whole *baseWhole
}

type baseWhole struct {
	once sync.Once
	ok   bool
}

// keyChange is a key written since the base (kv) or deleted (gone).
type keyChange struct {
	kv   registry.KV
	gone bool
}

type sortedOnce struct {
	once sync.Once
	kvs  []registry.KV
}

// NewRuleKeys returns the set of kvs, which must be sorted by key (as
// List returns them) and must not be modified afterwards: it is the
// set's base, not copied. O(1).
func NewRuleKeys(kvs []registry.KV) RuleKeys {
	return RuleKeys{base: kvs, n: len(kvs), all: &sortedOnce{}, whole: &baseWhole{}}
}

// Len is the number of keys. O(1).
func (k RuleKeys) Len() int { return k.n }

// Get returns the key's KV; ok is false when the set lacks it.
// O(log n).
func (k RuleKeys) Get(key string) (kv registry.KV, ok bool) {
	if i, found := slices.BinarySearchFunc(k.over, key, compareChange); found {
		if k.over[i].gone {
			return registry.KV{}, false
		}
		return k.over[i].kv, true
	}
	if i, found := slices.BinarySearchFunc(k.base, key, compareKV); found {
		return k.base[i], true
	}
	return registry.KV{}, false
}

// Has reports whether the set holds key. O(log n).
func (k RuleKeys) Has(key string) bool {
	_, ok := k.Get(key)
	return ok
}

// Under returns the keys that are node or under it, by key: what a
// write of an item's node reads. It finds them by binary search, so that
// it costs O(log n) plus the keys it returns (and the overlay's changes
// under node), not a pass over the set.
func (k RuleKeys) Under(node string) map[string]registry.KV {
	out := map[string]registry.KV{}
	i, _ := slices.BinarySearchFunc(k.base, node, compareKV)
	for ; i < len(k.base) && strings.HasPrefix(k.base[i].Key, node); i++ {
		if under(k.base[i].Key, node) {
			out[k.base[i].Key] = k.base[i]
		}
	}
	j, _ := slices.BinarySearchFunc(k.over, node, compareChange)
	for ; j < len(k.over) && strings.HasPrefix(k.over[j].kv.Key, node); j++ {
		c := k.over[j]
		switch {
		case !under(c.kv.Key, node):
		case c.gone:
			delete(out, c.kv.Key)
		default:
			out[c.kv.Key] = c.kv
		}
	}
	return out
}

// under reports whether key is node or under it.
func under(key, node string) bool {
	return len(key) == len(node) || key[len(node)] == '/'
}

// All iterates over the keys in ascending order, merging the base and
// the overlay as it goes: O(n), nothing copied. For the callers that need
// every key (a torn-read check, a full comparison).
func (k RuleKeys) All() iter.Seq[registry.KV] {
	return func(yield func(registry.KV) bool) {
		i := 0
		for _, c := range k.over {
			for ; i < len(k.base) && k.base[i].Key < c.kv.Key; i++ {
				if !yield(k.base[i]) {
					return
				}
			}
			if i < len(k.base) && k.base[i].Key == c.kv.Key {
				i++
			}
			if !c.gone && !yield(c.kv) {
				return
			}
		}
		for ; i < len(k.base); i++ {
			if !yield(k.base[i]) {
				return
			}
		}
	}
}

// Sorted returns every key as one slice sorted by key, shared: it must
// not be modified. It is built (O(n)) at most once per version, on the
// first call, and only when the overlay is not empty; it is for the
// paths that need the whole list as a slice (a rule listed whole,
// ReadDatabase), not a statement's sparse writes.
func (k RuleKeys) Sorted() []registry.KV {
	if len(k.over) == 0 {
		return k.base
	}
	k.all.once.Do(func() { k.all.kvs = slices.AppendSeq(make([]registry.KV, 0, k.n), k.All()) })
	return k.all.kvs
}

// With returns the set without the keys deleted and with changed
// (sorted by key; a key both deleted and changed is changed) put in: a
// new version; k is unchanged, and so is every version it shares its
// base with. It copies k's overlay and the changes, O(overlay +
// changed), and, when the overlay then grows past maxOverlay(n), merges
// it into a new base, O(n).
func (k RuleKeys) With(deleted []string, changed []registry.KV) RuleKeys {
	if len(deleted) == 0 && len(changed) == 0 {
		return k
	}
	ch := make([]keyChange, 0, len(deleted)+len(changed))
	for _, kv := range changed {
		ch = append(ch, keyChange{kv: kv})
	}
	for _, key := range deleted {
		if _, found := slices.BinarySearchFunc(changed, key, compareKV); !found {
			ch = append(ch, keyChange{kv: registry.KV{Key: key}, gone: true})
		}
	}
	slices.SortFunc(ch, func(a, b keyChange) int { return strings.Compare(a.kv.Key, b.kv.Key) })
	ch = slices.CompactFunc(ch, func(a, b keyChange) bool { return a.kv.Key == b.kv.Key })
	n := k.n
	kept := ch[:0] // a deletion of a key the set lacks changes nothing
	for _, c := range ch {
		switch had := k.Has(c.kv.Key); {
		case had && c.gone:
			n--
		case !had && c.gone:
			continue
		case !had:
			n++
		}
		kept = append(kept, c)
	}
	if len(kept) == 0 {
		return k
	}
	next := RuleKeys{base: k.base, over: mergeChanges(k.over, kept), n: n, all: &sortedOnce{}, whole: k.whole}
	if len(next.over) > maxOverlay(len(next.base)) {
		return NewRuleKeys(next.Sorted())
	}
	return next
}

// maxOverlay is how many changes a set over a base of n keys keeps in
// its overlay before it merges them into a new base: max(256, sqrt(2n)),
// which about minimizes the keys a change copies on average (half the
// overlay, plus n spread over the overlay's changes).
func maxOverlay(n int) int {
	return max(256, int(math.Sqrt(2*float64(n))))
}

// mergeChanges returns over with ch (both sorted by key, ch without
// duplicates) merged in, ch's change of a key replacing over's: a new
// slice, neither is modified.
func mergeChanges(over, ch []keyChange) []keyChange {
	out := make([]keyChange, 0, len(over)+len(ch))
	i := 0
	for _, c := range ch {
		for ; i < len(over) && over[i].kv.Key < c.kv.Key; i++ {
			out = append(out, over[i])
		}
		if i < len(over) && over[i].kv.Key == c.kv.Key {
			i++
		}
		out = append(out, c)
	}
	return append(out, over[i:]...)
}

func compareKV(kv registry.KV, key string) int { return strings.Compare(kv.Key, key) }

func compareChange(c keyChange, key string) int { return strings.Compare(c.kv.Key, key) }

// DanglingVersion returns an active_version key of k whose value names a
// version (n) that k lacks: a listing that is not one snapshot caught a
// change between its steps. found is false when every active_version
// names a version k holds (a value that is not a number is left alone).
// Whether the base alone is whole is checked once per base, O(n), and
// shared by every version over it; over a whole base a version checks only
// its overlay's changes (an active_version written, a version deleted),
// O(overlay log n), so that a statement's check costs what changed since
// the base, not a pass over every key. Over a base that is not whole it
// checks every key, O(n log n).
func (k RuleKeys) DanglingVersion() (key string, n int, found bool) {
	w := k.whole
	if w == nil {
		w = &baseWhole{} // the zero value: an empty base
	}
	w.once.Do(func() {
		_, _, dangling := danglingIn(slices.Values(k.base), func(key string) bool {
			_, found := slices.BinarySearchFunc(k.base, key, compareKV)
			return found
		})
		w.ok = !dangling
	})
	if !w.ok {
		return danglingIn(k.All(), k.Has)
	}
	for _, c := range k.over {
		if node, ok := strings.CutSuffix(c.kv.Key, "/"+paths.ActiveVersionName); ok {
			if c.gone {
				continue
			}
			if n, ok := activeVersionOf(c.kv.Value); ok && !k.Has(paths.Version(node, n)) {
				return c.kv.Key, n, true
			}
			continue
		}
		pk, ok := paths.ParseKey(c.kv.Key)
		if !ok || pk.Leaf != paths.VersionsName || !c.gone {
			continue
		}
		// A version deleted: dangling if the active_version names it.
		av, ok := k.Get(paths.ActiveVersion(pk.Node))
		if n, isN := activeVersionOf(av.Value); ok && isN && n == pk.Version {
			return av.Key, n, true
		}
	}
	return "", 0, false
}

// danglingIn is DanglingVersion over every key of kvs, with has telling
// which keys the set holds.
func danglingIn(kvs iter.Seq[registry.KV], has func(string) bool) (key string, n int, found bool) {
	for kv := range kvs {
		node, ok := strings.CutSuffix(kv.Key, "/"+paths.ActiveVersionName)
		if !ok {
			continue
		}
		if n, ok := activeVersionOf(kv.Value); ok && !has(paths.Version(node, n)) {
			return kv.Key, n, true
		}
	}
	return "", 0, false
}

// activeVersionOf is the version number an active_version's value names.
func activeVersionOf(value []byte) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(string(value)))
	return n, err == nil
}
