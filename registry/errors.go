package registry

import "errors"

// Sentinel errors returned (wrapped in *OpError) by every backend.
var (
	ErrNotFound       = errors.New("key not found")
	ErrExists         = errors.New("key already exists")
	ErrBadVersion     = errors.New("version mismatch (the key was changed by someone else)")
	ErrBadKey         = errors.New("invalid key")
	ErrBadTxn         = errors.New("invalid transaction")
	ErrLocked         = errors.New("locked by another session")
	ErrLockNotHeld    = errors.New("lock not held")
	ErrSessionExpired = errors.New("session expired")
	ErrWatchLost      = errors.New("watch lost; re-watch to resync")
	ErrClosed         = errors.New("closed")
	ErrUnavailable    = errors.New("registry unavailable")
	// ErrTooLarge is a write larger than the registry takes in one
	// request (etcd's --max-request-bytes, ZooKeeper's jute.maxbuffer):
	// refused before it is sent, so nothing was written.
	ErrTooLarge = errors.New("too large for one registry request")
)

// OpError records the operation and key that failed, in the style of
// os.PathError. Err is a sentinel above, a context error, or a backend error,
// and errors.Is / errors.As see through it.
type OpError struct {
	Op  string // "get", "update", "lock", ...
	Key string // the key as the caller gave it (without namespace)
	Err error
}

func (e *OpError) Error() string {
	if e.Key == "" {
		return "registry " + e.Op + ": " + e.Err.Error()
	}
	return "registry " + e.Op + " " + e.Key + ": " + e.Err.Error()
}

func (e *OpError) Unwrap() error { return e.Err }
