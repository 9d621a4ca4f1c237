package registrytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// until reads events until one satisfies match, ignoring others (the
// contract allows duplicates and events for keys the test does not care
// about, such as ZooKeeper's parent nodes).
func until(t *testing.T, ch <-chan registry.Event, what string, match func(registry.Event) bool) registry.Event {
	t.Helper()
	deadline := time.After(Timeout)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch channel closed while waiting for %s", what)
			}
			if ev.Err != nil {
				t.Fatalf("watch ended with %v while waiting for %s", ev.Err, what)
			}
			if match(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func isPut(key, value string) func(registry.Event) bool {
	return func(ev registry.Event) bool {
		return ev.Type == registry.EventPut && ev.KV.Key == key && string(ev.KV.Value) == value
	}
}

func isDelete(key string) func(registry.Event) bool {
	return func(ev registry.Event) bool { return ev.Type == registry.EventDelete && ev.KV.Key == key }
}

func testWatch(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r, writer := e.open(), e.open()
	c := testenv.Context(t)
	mustPut(t, writer, "/w/a", "1")
	vb := mustPut(t, writer, "/w/sub/b", "2")
	mustPut(t, writer, "/w0/outside", "x")
	mustPut(t, writer, "/wx", "x")

	initial, ch, err := r.Watch(c, "/w")
	if err != nil {
		t.Fatal(err)
	}
	snap := map[string]registry.KV{}
	for _, kv := range initial {
		if !registry.IsUnder(kv.Key, "/w") {
			t.Fatalf("initial snapshot has %s, outside /w", kv.Key)
		}
		snap[kv.Key] = kv
	}
	if string(snap["/w/a"].Value) != "1" || string(snap["/w/sub/b"].Value) != "2" || snap["/w/sub/b"].Version != vb {
		t.Fatalf("initial snapshot = %v", initial)
	}

	// Create, update, delete at several depths are seen.
	mustPut(t, writer, "/w/c", "3")
	until(t, ch, "put /w/c", isPut("/w/c", "3"))
	mustPut(t, writer, "/w/sub/deeper/d", "4")
	ev := until(t, ch, "put /w/sub/deeper/d", isPut("/w/sub/deeper/d", "4"))
	if ev.KV.Version == 0 {
		t.Fatal("event without version")
	}
	mustPut(t, writer, "/w/a", "1b")
	until(t, ch, "update /w/a", isPut("/w/a", "1b"))
	if err := writer.Delete(c, "/w/sub"); err != nil {
		t.Fatal(err)
	}
	until(t, ch, "delete /w/sub/b", isDelete("/w/sub/b"))
	// Writes outside the prefix, including name-prefix siblings, are not seen.
	mustPut(t, writer, "/w0/outside", "y")
	mustPut(t, writer, "/w/marker", "m")
	until(t, ch, "marker", func(ev registry.Event) bool {
		if !registry.IsUnder(ev.KV.Key, "/w") {
			t.Fatalf("event for %s outside /w", ev.KV.Key)
		}
		return isPut("/w/marker", "m")(ev)
	})

	// Ephemeral keys from a session are seen, and their removal on Close.
	s := e.session(writer, 0)
	if err := s.PutEphemeral(c, "/w/eph", []byte("e")); err != nil {
		t.Fatal(err)
	}
	until(t, ch, "ephemeral put", isPut("/w/eph", "e"))
	if err := s.Close(c); err != nil {
		t.Fatal(err)
	}
	until(t, ch, "ephemeral delete", isDelete("/w/eph"))

	// Watching a prefix that does not exist yet works.
	initial, ch2, err := r.Watch(c, "/empty/prefix")
	if err != nil {
		t.Fatal(err)
	}
	if len(initial) != 0 {
		t.Fatalf("initial of an empty prefix = %v", initial)
	}
	mustPut(t, writer, "/empty/prefix/x/y", "z")
	until(t, ch2, "put under an empty prefix", isPut("/empty/prefix/x/y", "z"))
}

func testWatchOrderPerKey(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r, writer := e.open(), e.open()
	c := testenv.Context(t)
	_, ch, err := r.Watch(c, "/order")
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := 0; i < n; i++ {
		mustPut(t, writer, "/order/k", fmt.Sprint(i))
	}
	// Values arrive in write order; coalescing may skip some, never reorder.
	last := -1
	for last != n-1 {
		ev := until(t, ch, "ordered updates", func(ev registry.Event) bool { return ev.KV.Key == "/order/k" })
		var v int
		fmt.Sscan(string(ev.KV.Value), &v)
		if v < last {
			t.Fatalf("event %d after %d: out of order", v, last)
		}
		last = v
	}
	if err := writer.Delete(c, "/order/k"); err != nil {
		t.Fatal(err)
	}
	until(t, ch, "delete after the updates", isDelete("/order/k"))
}

func testWatchCancel(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r := e.open()
	wc, cancel := context.WithCancel(testenv.Context(t))
	_, ch, err := r.Watch(wc, "/cancel")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.After(Timeout)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("watch channel not closed after ctx cancel")
		}
	}
}

func testWatchResync(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r, writer := e.open(), e.open()
	c := testenv.Context(t)
	mustPut(t, writer, "/rs/keep", "1")
	mustPut(t, writer, "/rs/gone", "1")

	// The raw watch ends with ErrWatchLost when the backend loses it.
	_, raw, err := r.Watch(c, "/rs")
	if err != nil {
		t.Fatal(err)
	}

	// Follow reconciles across the loss.
	state := map[string]string{}
	events := make(chan registry.Event, 1024)
	fc, stop := context.WithCancel(c)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- registry.Follow(fc, r, "/rs", func(ev registry.Event) { events <- ev }) }()
	apply := func(ev registry.Event) bool {
		switch {
		case ev.Err != nil:
		case ev.Type == registry.EventPut:
			state[ev.KV.Key] = string(ev.KV.Value)
		case ev.Type == registry.EventDelete:
			delete(state, ev.KV.Key)
		}
		return true
	}
	waitState := func(what string, want map[string]string) {
		t.Helper()
		deadline := time.After(Timeout)
		for !sameState(state, want) {
			select {
			case ev := <-events:
				apply(ev)
			case <-deadline:
				t.Fatalf("%s: follower state %v, want %v", what, state, want)
			}
		}
	}
	waitState("initial", map[string]string{"/rs/keep": "1", "/rs/gone": "1"})

	h.LoseWatches(t, r)
	select {
	case ev, ok := <-raw:
		for ok && ev.Err == nil {
			ev, ok = <-raw
		}
		if !ok {
			t.Fatal("lost watch closed without a final error event")
		}
		wantErr(t, "final event of a lost watch", ev.Err, registry.ErrWatchLost)
		if _, ok := <-raw; ok {
			t.Fatal("lost watch channel not closed after its final event")
		}
	case <-time.After(Timeout):
		t.Fatal("raw watch did not end after LoseWatches")
	}

	// Changes made around the loss reach the follower, deletes included.
	if err := writer.Delete(c, "/rs/gone"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, writer, "/rs/keep", "2")
	mustPut(t, writer, "/rs/new", "3")
	waitState("after loss", map[string]string{"/rs/keep": "2", "/rs/new": "3"})
	stop()
	select {
	case <-done:
	case <-time.After(Timeout):
		t.Fatal("Follow did not return after cancel")
	}
}

// sameState compares the follower's state with want, ignoring keys with
// empty values that are not in want (ZooKeeper's parent nodes).
func sameState(state, want map[string]string) bool {
	for k, v := range want {
		if got, ok := state[k]; !ok || got != v {
			return false
		}
	}
	for k, v := range state {
		if _, ok := want[k]; !ok && v != "" {
			return false
		}
	}
	return true
}

// testWatchDeleteIsDelete: every way a key goes (Delete of the key, of its
// parent's subtree, a Commit's delete, the end of an ephemeral's session)
// is reported as a delete with no value, and never as a put: the key is
// created once (etcd version 1, the case ShardingSphere's etcd repository
// took for an ADDED, apache/shardingsphere#38561). Puts of a key may be
// repeated, but after its delete nothing more of it is reported. Each
// write waits for its event, as changes may be coalesced.
func testWatchDeleteIsDelete(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r, writer := e.open(), e.open()
	c := testenv.Context(t)
	_, ch, err := r.Watch(c, "/del")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/del/plain": "p", "/del/sub/leaf": "l", "/del/txn": "t", "/del/eph": "e"}
	seen := map[string][]string{}
	wait := func(what string, match func(registry.Event) bool) {
		t.Helper()
		until(t, ch, what, func(ev registry.Event) bool {
			value, tracked := want[ev.KV.Key]
			if !tracked {
				return match(ev)
			}
			got := seen[ev.KV.Key]
			switch {
			case len(got) > 0 && got[len(got)-1] == "DELETE":
				t.Fatalf("%s: %v after its delete", ev.KV.Key, ev.Type)
			case ev.Type == registry.EventPut && string(ev.KV.Value) != value:
				t.Fatalf("%s: put of %q, want %q", ev.KV.Key, ev.KV.Value, value)
			case ev.Type == registry.EventDelete && ev.KV.Value != nil:
				t.Fatalf("%s: delete with value %q, want none", ev.KV.Key, ev.KV.Value)
			case ev.Type == registry.EventDelete && len(got) == 0:
				t.Fatalf("%s: delete before any put", ev.KV.Key)
			}
			seen[ev.KV.Key] = append(got, ev.Type.String())
			return match(ev)
		})
	}
	s := e.session(writer, 0)
	mustPut(t, writer, "/del/plain", "p")
	wait("put /del/plain", isPut("/del/plain", "p"))
	if err := writer.Delete(c, "/del/plain"); err != nil {
		t.Fatal(err)
	}
	wait("delete /del/plain", isDelete("/del/plain"))
	mustPut(t, writer, "/del/sub/leaf", "l")
	wait("put /del/sub/leaf", isPut("/del/sub/leaf", "l"))
	if err := writer.Delete(c, "/del/sub"); err != nil {
		t.Fatal(err)
	}
	wait("delete /del/sub/leaf", isDelete("/del/sub/leaf"))
	v, err := s.Commit(c, registry.Txn{Conds: []registry.Cond{{Key: "/del/txn"}}, Ops: []registry.Op{{Key: "/del/txn", Value: []byte("t")}}})
	if err != nil {
		t.Fatal(err)
	}
	wait("put /del/txn", isPut("/del/txn", "t"))
	if _, err := s.Commit(c, registry.Txn{Conds: []registry.Cond{{Key: "/del/txn", Version: v}}, Ops: []registry.Op{{Key: "/del/txn", Delete: true}}}); err != nil {
		t.Fatal(err)
	}
	wait("delete /del/txn", isDelete("/del/txn"))
	if err := s.PutEphemeral(c, "/del/eph", []byte("e")); err != nil {
		t.Fatal(err)
	}
	wait("put /del/eph", isPut("/del/eph", "e"))
	if err := s.Close(c); err != nil {
		t.Fatal(err)
	}
	wait("delete /del/eph", isDelete("/del/eph"))
	mustPut(t, writer, "/del/marker", "m")
	wait("the marker", isPut("/del/marker", "m"))
}

// testWatchReplacedSubtree: a subtree deleted by Delete of its path and
// written again is reported with every key of the old one deleted before
// any key of the new one, also to a consumer that falls behind: it never
// holds keys of both, such as a ShardingSphere active_version written
// again beside the version node of the same name that the deleted subtree
// held (a node's view would then go back to the old content). The consumer
// reads nothing while a key of the old subtree is rewritten, the subtree
// deleted and written again, so that a backend that re-reads the keys of
// its fired watches (ZooKeeper) handles the rewritten key first and finds
// it replaced.
func testWatchReplacedSubtree(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r, writer := e.open(), e.open()
	c := testenv.Context(t)
	mustPut(t, writer, "/rs/x/active_version", "old 1")
	mustPut(t, writer, "/rs/x/versions/1", "old content")
	mustPut(t, writer, "/rs/x/gone", "old only")
	initial, ch, err := r.Watch(c, "/rs")
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]string{}
	for _, kv := range initial {
		state[kv.Key] = string(kv.Value)
	}
	mustPut(t, writer, "/rs/behind", "b") // the watch waits to send it
	mustPut(t, writer, "/rs/x/active_version", "old 1")
	if err := writer.Delete(c, "/rs/x"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, writer, "/rs/x/active_version", "new 1")
	mustPut(t, writer, "/rs/x/versions/1", "new content")
	until(t, ch, "the new subtree", func(ev registry.Event) bool {
		if ev.Type == registry.EventDelete {
			delete(state, ev.KV.Key)
		} else {
			state[ev.KV.Key] = string(ev.KV.Value)
		}
		var old, fresh []string
		for k, v := range state {
			switch {
			case strings.HasPrefix(v, "old"):
				old = append(old, k)
			case strings.HasPrefix(v, "new"):
				fresh = append(fresh, k)
			}
		}
		if len(old) > 0 && len(fresh) > 0 {
			slices.Sort(old)
			slices.Sort(fresh)
			t.Fatalf("after %v %s the watcher holds keys of the deleted subtree %v beside keys of the new one %v", ev.Type, ev.KV.Key, old, fresh)
		}
		return len(old) == 0 && state["/rs/x/active_version"] == "new 1" && state["/rs/x/versions/1"] == "new content"
	})
}

// testWatchDeleteSubtree: deleting a subtree reports each of its keys
// deleted and no key of a sibling whose name starts with the subtree's
// (/wd/ab beside /wd/a); keys written again under the deleted subtree's
// path are reported again, and deleting them again reports them deleted.
func testWatchDeleteSubtree(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r, writer := e.open(), e.open()
	c := testenv.Context(t)
	for _, k := range []string{"/wd/a/x/1", "/wd/a/y", "/wd/ab", "/wd/ab/z"} {
		mustPut(t, writer, k, "v")
	}
	initial, ch, err := r.Watch(c, "/wd")
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]bool{}
	for _, kv := range initial {
		state[kv.Key] = true
	}
	apply := func(ev registry.Event) {
		if ev.Type == registry.EventDelete {
			delete(state, ev.KV.Key)
		} else {
			state[ev.KV.Key] = true
		}
	}
	under := func(p string) (keys []string) {
		for k := range state {
			if k == p || strings.HasPrefix(k, p+"/") {
				keys = append(keys, k)
			}
		}
		return keys
	}
	for round := range 2 {
		if err := writer.Delete(c, "/wd/a"); err != nil {
			t.Fatal(err)
		}
		until(t, ch, fmt.Sprintf("round %d: /wd/a deleted", round), func(ev registry.Event) bool {
			apply(ev)
			if ev.Type == registry.EventDelete && (ev.KV.Key == "/wd/ab" || strings.HasPrefix(ev.KV.Key, "/wd/ab/")) {
				t.Fatalf("round %d: deleting /wd/a reported %s deleted", round, ev.KV.Key)
			}
			return len(under("/wd/a")) == 0
		})
		if !state["/wd/ab"] || !state["/wd/ab/z"] {
			t.Fatalf("round %d: after deleting /wd/a the watcher holds %v, want /wd/ab and /wd/ab/z", round, under("/wd/ab"))
		}
		mustPut(t, writer, "/wd/a/x/1", "again")
		until(t, ch, fmt.Sprintf("round %d: /wd/a/x/1 again", round), func(ev registry.Event) bool {
			apply(ev)
			return isPut("/wd/a/x/1", "again")(ev)
		})
	}
}
