package registry

import (
	"context"
	"fmt"
	"time"
)

// Repository is the storage contract every registry backend implements.
//
// Keys are absolute, slash-separated paths such as
// "/nodes/compute_nodes/online/proxy/i1" (see ValidateKey); a backend applies
// its namespace itself. Every method validates its key first and returns an
// *OpError wrapping ErrBadKey, without touching the registry, when it is not
// valid. All methods are safe for concurrent use. Errors can be tested with
// errors.Is against the sentinels in errors.go, or against context.Canceled /
// context.DeadlineExceeded when ctx ends.
type Repository interface {
	// Get returns the value and version of key. It returns ErrNotFound if key
	// does not exist.
	Get(ctx context.Context, key string) (KV, error)
	// Children returns the sorted names (not full paths) of key's direct
	// children. A key with no children, or a missing key, yields an empty
	// slice and a nil error.
	Children(ctx context.Context, key string) ([]string, error)
	// List returns every key strictly below prefix with its value and
	// version, sorted by key: a bulk read of a subtree (one range read on
	// etcd; a listing plus parallel reads on ZooKeeper, so not a consistent
	// snapshot there). A missing prefix yields an empty slice.
	List(ctx context.Context, prefix string) ([]KV, error)
	// Put creates or overwrites key unconditionally and returns the new
	// version. Missing parents are created as needed.
	Put(ctx context.Context, key string, value []byte) (Version, error)
	// Create writes key only if it is absent; otherwise it returns ErrExists.
	Create(ctx context.Context, key string, value []byte) (Version, error)
	// Update writes key only if its current version equals expect
	// (compare-and-set). It returns ErrBadVersion on a mismatch and
	// ErrNotFound if key is gone.
	Update(ctx context.Context, key string, value []byte, expect Version) (Version, error)
	// Delete removes key and its whole subtree. It never touches a sibling
	// that merely shares a name prefix ("/a/db1" leaves "/a/db10" alone).
	// Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Watch returns every key currently at or under prefix, then streams
	// later changes on the returned channel until ctx ends. See Event for the
	// ordering guarantees. The channel must be drained; it is closed after
	// ctx ends or after a final event whose Err is set (ErrWatchLost when
	// the backend lost the watch: re-run Watch to resync, or use Follow).
	Watch(ctx context.Context, prefix string) (initial []KV, changes <-chan Event, err error)
	// NewSession starts a liveness session (etcd lease, ZooKeeper session,
	// in-memory lease). Ephemeral keys and locks exist only through a
	// Session. ctx bounds only the creation, not the session's life.
	NewSession(ctx context.Context, opts SessionOptions) (Session, error)
	// Close releases client resources. It does not delete persistent keys.
	// Every Session of the Repository that has not ended yet ends before
	// Close returns: its Done is closed and its Err wraps ErrClosed, not
	// ErrSessionExpired. Whether its ephemerals and locks go at once or when
	// its TTL runs out depends on the backend. Calls after Close return
	// ErrClosed.
	Close() error
}

// Version is the backend's opaque modification stamp for a key. It is never
// zero for a key that exists, changes on every write, and never repeats for
// a key after it is deleted and created again. Compare it only with == against
// a version returned by the same Repository; never do arithmetic on it.
type Version int64

// KV is one key, its value and its version.
type KV struct {
	Key     string
	Value   []byte
	Version Version
}

// EventType says whether an Event is a write or a removal.
type EventType uint8

const (
	// EventPut is a create or an update. After a resync nobody knows what the
	// consumer saw, so treat every put as an upsert.
	EventPut EventType = iota + 1
	// EventDelete is a removal; Event.KV.Value is nil.
	EventDelete
)

func (t EventType) String() string {
	switch t {
	case EventPut:
		return "PUT"
	case EventDelete:
		return "DELETE"
	default:
		return "UNKNOWN"
	}
}

// Event is one change under a watched prefix. Guarantees:
//   - Events for one key arrive in order. Events for different keys may
//     interleave, except that a subtree deleted with Delete of its path and
//     written again has every key of the old one that was reported
//     reported deleted before any key of the new one: a consumer never
//     holds keys of both.
//   - Duplicates may happen, and rapid changes may be coalesced (you see the
//     latest value). Handlers must be idempotent.
//   - When the watch ends for any reason other than ctx cancellation, the
//     last event has Err != nil, and then the channel is closed.
type Event struct {
	Type EventType
	KV   KV
	Err  error // non-nil only on the final event
}

// Session is a liveness lease. Ephemeral keys created through it, and locks
// acquired through it, disappear when the session ends. A backend never
// replaces an expired session silently: the owner watches Done and starts a
// new one. All methods are safe for concurrent use.
//
// A session is a liveness signal, never a fencing token: the registry may
// expire it before Done is closed on this side (see the package doc).
type Session interface {
	// ID identifies the session in logs (lease ID, ZooKeeper session ID).
	ID() string
	// Done is closed once the session can no longer be refreshed: the lease
	// or ZooKeeper session expired, or Close was called on the session or
	// on its Repository. After Done is closed, every ephemeral key and lock
	// created through this session must be assumed gone.
	Done() <-chan struct{}
	// Err reports why Done was closed: an error wrapping ErrSessionExpired or
	// ErrClosed. It returns nil while the session is alive.
	Err() error
	// PutEphemeral creates or overwrites key, bound to this session.
	PutEphemeral(ctx context.Context, key string, value []byte) error
	// CreateExclusiveEphemeral creates key bound to this session only if it
	// is absent. It returns ErrExists if any session (this one included)
	// holds it. Exactly one of any number of concurrent callers succeeds.
	CreateExclusiveEphemeral(ctx context.Context, key string, value []byte) error
	// Commit applies txn atomically: if every condition holds, all its
	// writes happen at once, and every key it puts gets the returned
	// version (which may be zero when it only deletes); otherwise nothing
	// is written (see Txn for the errors).
	Commit(ctx context.Context, txn Txn) (Version, error)
	// Lock blocks until it acquires the mutex at key, or ctx ends (then it
	// returns the context's error).
	Lock(ctx context.Context, key string) (Lock, error)
	// TryLock acquires the mutex at key or returns ErrLocked at once if
	// another holder exists.
	TryLock(ctx context.Context, key string) (Lock, error)
	// Close ends the session, which deletes its ephemerals and releases its
	// locks. Closing twice is not an error.
	Close(ctx context.Context) error
}

// Lock is a held mutex. It is lost when its Session ends (watch
// Session.Done). A lock is not a fencing token: use Version and Update for
// writes that must not race a lost lock.
type Lock interface {
	// Key is the lock's path as given to Lock or TryLock.
	Key() string
	// Unlock releases the lock. A second call returns ErrLockNotHeld.
	Unlock(ctx context.Context) error
}

// Txn is an atomic, conditional multi-key write (an etcd Txn, a ZooKeeper
// multi). Every key an Op writes must also have a Cond, so that each backend
// knows whether it creates or updates it; Commit refuses a Txn that breaks
// this rule with ErrBadTxn before any I/O.
//
// When a condition fails, Commit returns an *OpError whose Key is the first
// failing condition's key and whose Err wraps ErrExists (the key should be
// absent), ErrNotFound (the key should exist) or ErrBadVersion (its version
// differs).
type Txn struct {
	Conds []Cond
	Ops   []Op
}

// Cond is one condition of a Txn: key is absent (Version 0) or has exactly
// Version.
type Cond struct {
	Key     string
	Version Version
}

// Op is one write of a Txn: a put of Value (Ephemeral binds the key to the
// committing session; a persistent put of an existing ephemeral key keeps
// the backend's ownership) or, with Delete, the removal of that single key
// (not its subtree; on ZooKeeper a key with children cannot be deleted this
// way).
type Op struct {
	Key       string
	Value     []byte
	Ephemeral bool
	Delete    bool
}

// Check validates every key of the Txn and the rule that each Op's key has
// a Cond. The error wraps ErrBadKey or ErrBadTxn.
func (t Txn) Check() error {
	conds := make(map[string]bool, len(t.Conds))
	for _, c := range t.Conds {
		if err := ValidateKey(c.Key); err != nil {
			return &OpError{Op: "commit", Key: c.Key, Err: err}
		}
		if conds[c.Key] {
			return &OpError{Op: "commit", Key: c.Key, Err: fmt.Errorf("%w: two conditions on one key", ErrBadTxn)}
		}
		conds[c.Key] = true
	}
	ops := make(map[string]bool, len(t.Ops))
	for _, o := range t.Ops {
		if err := ValidateKey(o.Key); err != nil {
			return &OpError{Op: "commit", Key: o.Key, Err: err}
		}
		if !conds[o.Key] {
			return &OpError{Op: "commit", Key: o.Key, Err: fmt.Errorf("%w: the key is written without a condition", ErrBadTxn)}
		}
		if ops[o.Key] {
			return &OpError{Op: "commit", Key: o.Key, Err: fmt.Errorf("%w: two writes of one key", ErrBadTxn)}
		}
		ops[o.Key] = true
	}
	if len(t.Ops) == 0 {
		return &OpError{Op: "commit", Err: fmt.Errorf("%w: no writes", ErrBadTxn)}
	}
	return nil
}

// SessionOptions configures NewSession.
type SessionOptions struct {
	// TTL is how long the registry keeps the session without a refresh.
	// Zero means DefaultSessionTTL. ZooKeeper negotiates it with the server.
	TTL time.Duration
}

// DefaultSessionTTL is ShardingSphere's default timeToLiveSeconds for etcd (30 s).
const DefaultSessionTTL = 30 * time.Second
