package registry

import "context"

// ChangeLister is implemented by a Repository whose versions come from
// one counter for every key (etcd's mod revision, the memory backend's,
// ZooKeeper's Mzxid), so that it can list what changed below a prefix
// since a revision without sending the rest: etcd and memory filter on the
// server, ZooKeeper over the memo of its List cache (which re-reads the
// znodes whose watches fired). Decorators forward it.
type ChangeLister interface {
	// ListChanged is the Repository's side of ListChanged; ok is false
	// when the wrapped Repository has none.
	ListChanged(ctx context.Context, prefix string, since Version, max int) (c Changed, ok bool, err error)
}

// Changed is what ListChanged read below a prefix, at one revision.
type Changed struct {
	// KVs are the keys whose version is above the revision asked for,
	// with their values and versions, sorted by key.
	KVs []KV
	// Count is the number of keys below the prefix.
	Count int
	// Rev is the revision read at: every write at or before it is
	// reflected, none after it. A later ListChanged since Rev returns
	// what changed after this read.
	Rev Version
	// Truncated is true when more keys changed than asked for: KVs is
	// then empty, and the caller lists the prefix whole.
	Truncated bool
}

// ListChanged reads, at one revision, the keys strictly below prefix that
// were written after revision since (a Changed.Rev of an earlier call, or
// the highest version of a List's keys), up to max of them, and how many
// keys are below prefix. A key deleted since shows only in Count: a
// caller that holds the keys it read at since knows that nothing else
// changed when Count is what its keys and KVs add up to. ok is false when
// r is no ChangeLister: the caller then lists the prefix.
// ctx bounds the read.
func ListChanged(ctx context.Context, r Repository, prefix string, since Version, max int) (c Changed, ok bool, err error) {
	cl, is := r.(ChangeLister)
	if !is {
		return Changed{}, false, nil
	}
	return cl.ListChanged(ctx, prefix, since, max)
}

// ChangeReplayer is implemented by a Repository that keeps the history of
// its writes, one revision counter for every key, and replays it from a
// revision (etcd's watch from a past revision): the writes below a prefix
// since a revision then cost what was written since, not what the prefix
// holds. Decorators forward it.
type ChangeReplayer interface {
	// ReplayChanges is the Repository's side of ReplayChanges; ok is false
	// when the wrapped Repository has none.
	ReplayChanges(ctx context.Context, prefix string, since Version, upTo ReplayBound, max int) (r Replayed, ok bool, err error)
}

// ReplayBound says up to which revision ReplayChanges replays: Through, a
// revision the caller knows wrote below the prefix (its own commit); or,
// with Through 0, Barrier, a key of the caller's outside the prefix that
// ReplayChanges writes first, replaying up to that write, so that the
// result holds every write committed before the call (what a read would
// see).
type ReplayBound struct {
	Through Version
	Barrier string
}

// Replayed is what ReplayChanges replayed below a prefix.
type Replayed struct {
	// Events are the writes below the prefix after the revision asked
	// for, in the order they were made: a put with the key's value and
	// version, a deletion with the key. A key may appear more than once.
	Events []Event
	// Rev is the revision replayed up to: every write at or before it
	// below the prefix is in Events, none after it. A later call since
	// Rev replays what was written after.
	Rev Version
}

// ReplayChanges replays the writes strictly below prefix after revision
// since (a Changed.Rev, a Replayed.Rev, or the highest version of a
// List's keys) up to upTo (see ReplayBound), at most max of them. ok is
// false, with no error, when r keeps no such history (ZooKeeper, memory),
// when it does not hold the revisions after since (compacted, or older
// than what it keeps), when more than max writes below prefix were made
// since, or when the replay was cut off: the caller then reads the prefix
// with ListChanged or List. ctx bounds the barrier's write and the
// replay.
func ReplayChanges(ctx context.Context, r Repository, prefix string, since Version, upTo ReplayBound, max int) (c Replayed, ok bool, err error) {
	cr, is := r.(ChangeReplayer)
	if !is || since <= 0 || (upTo.Through == 0 && upTo.Barrier == "") {
		return Replayed{}, false, nil
	}
	return cr.ReplayChanges(ctx, prefix, since, upTo, max)
}
