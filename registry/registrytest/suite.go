// Package registrytest is the conformance suite every registry backend
// passes: one Run(t, harness) that runs the same subtests against a backend,
// in the style of Vitess's topo/test. A new registry behaviour is first a
// case here, then implemented in every backend.
package registrytest

import (
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Timeout bounds the suite's waits for a session expiry to be seen, an event
// to be delivered and a lock to be acquired; registry calls and polls are
// bounded by testenv.Timeout. It is generous because CI machines are small.
const Timeout = 20 * time.Second

// Harness adapts a backend to the suite.
type Harness struct {
	// New opens a new client (its own connection and sessions) on the
	// registry namespace ns. The suite gives every test a fresh namespace
	// (a single name such as "sk_test_7f3a9c01") and calls New once per
	// client it needs, so two clients of one test share data and clients of
	// different tests do not. The suite closes every client it opens.
	New func(t *testing.T, ns string) registry.Repository
	// ExpireSession makes the registry expire sess the way a lost lease or
	// ZooKeeper session expiry would (not a Close): etcd revokes the lease
	// through another client, ZooKeeper expires the session from a second
	// connection, memory expires it directly.
	ExpireSession func(t *testing.T, sess registry.Session)
	// LoseWatches makes every watch open on repo end as a real loss would
	// (compaction, connection or session loss), so that its channel delivers
	// a final Event with Err wrapping registry.ErrWatchLost.
	LoseWatches func(t *testing.T, repo registry.Repository)
	// NullKeys, where the backend can tell an empty value from none (a
	// ZooKeeper znode's data is null or an array), returns the keys of
	// namespace ns stored with none, read around the client so that nothing
	// is repaired on the way. Nil where the backend cannot tell (etcd, whose
	// values are always byte strings).
	NullKeys func(t *testing.T, ns string) []string
	// BetweenReadAndWrite, where the backend's conditional writes (Commit,
	// Update) read their conditions' keys before they write (ZooKeeper:
	// the Mzxid is read, the multi checks the data version), installs fn
	// on repo to be called by each such write after that read and before
	// each attempt to write; nil uninstalls it. Nil where the write itself
	// compares the versions (etcd, memory): the suite then makes its
	// changes before the write.
	BetweenReadAndWrite func(t *testing.T, repo registry.Repository, fn func())
}

// Run runs every conformance test as a t.Run subtest against h (select
// single ones with -run, e.g. -run 'Conformance/Watch').
func Run(t *testing.T, h Harness) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"KV", testKV},
		{"CAS", testCAS},
		{"Children", testChildren},
		{"DeleteSubtree", testDeleteSubtree},
		{"BadKeys", testBadKeys},
		{"Ephemeral", testEphemeral},
		{"SessionClose", testSessionClose},
		{"SessionExpiry", testSessionExpiry},
		{"RepoCloseEndsSessions", testRepoCloseEndsSessions},
		{"ExclusiveEphemeralRace", testExclusiveEphemeralRace},
		{"Lock", testLock},
		{"TryLock", testTryLock},
		{"LockReleasedByExpiry", testLockReleasedByExpiry},
		{"Watch", testWatch},
		{"WatchOrderPerKey", testWatchOrderPerKey},
		{"WatchCancel", testWatchCancel},
		{"WatchResync", testWatchResync},
		{"WatchDeleteIsDelete", testWatchDeleteIsDelete},
		{"WatchReplacedSubtree", testWatchReplacedSubtree},
		{"WatchDeleteSubtree", testWatchDeleteSubtree},
		{"Closed", testClosed},
		{"List", testList},
		{"ListLimited", testListLimited},
		{"ListChanged", testListChanged},
		{"ReplayChanges", testReplayChanges},
		{"Commit", testCommit},
		{"CommitRace", testCommitRace},
		{"CommitAfterRecreate", testCommitAfterRecreate},
		{"CommitAfterOthersDeleted", testCommitAfterOthersDeleted},
		{"ListAfterRecreate", testListAfterRecreate},
		{"NoNullValues", testNoNullValues},
		{"GetMany", testGetMany},
		{"CommitFirst", testCommitFirst},
		{"CommitFirstRace", testCommitFirstRace},
		{"TooLarge", testTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}
