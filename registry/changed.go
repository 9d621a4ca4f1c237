package registry

import "context"

// ChangeLister is implemented by a Repository whose versions are its
// store's revisions, one counter for every key (etcd's mod revision, the
// memory backend's), so that it can list what changed below a prefix
// since a revision without sending the rest (etcd, memory; not
// ZooKeeper). Decorators forward it.
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
// r is no ChangeLister (ZooKeeper): the caller then lists the prefix.
// ctx bounds the read.
func ListChanged(ctx context.Context, r Repository, prefix string, since Version, max int) (c Changed, ok bool, err error) {
	cl, is := r.(ChangeLister)
	if !is {
		return Changed{}, false, nil
	}
	return cl.ListChanged(ctx, prefix, since, max)
}
