package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// MultiGetter is implemented by a Repository that reads several keys in
// one request to the server (etcd: one Txn of reads; memory), or that at
// least sends the reads at once (ZooKeeper: pipelined on the connection).
// Decorators forward it. Use GetMany, which falls back to one Get per key.
type MultiGetter interface {
	GetMany(ctx context.Context, keys []string) ([]KV, error)
}

// GetMany returns the value and version of each of keys, in order: a key
// that does not exist gives a KV with its Key, no Value and Version 0 (not
// an error). On etcd and memory the values are one consistent snapshot; on
// ZooKeeper each read is its own. Any error fails the whole call.
func GetMany(ctx context.Context, r Repository, keys []string) ([]KV, error) {
	if mg, ok := r.(MultiGetter); ok {
		return mg.GetMany(ctx, keys)
	}
	out := make([]KV, len(keys))
	for i, k := range keys {
		kv, err := r.Get(ctx, k)
		switch {
		case err == nil:
			out[i] = kv
		case errors.Is(err, ErrNotFound):
			out[i] = KV{Key: k}
		default:
			return nil, err
		}
	}
	return out, nil
}

// FirstCommitter is implemented by a Session that tries several
// transactions in one request (etcd: one nested Txn; memory). Decorators
// forward it. Use CommitFirst, which falls back to one Commit per
// alternative.
type FirstCommitter interface {
	CommitFirst(ctx context.Context, alts []Txn) (int, Version, error)
}

// CommitFirst applies the first of alts whose conditions all hold, and
// only that one, and returns its index and version (as Commit does). The
// alternatives are tried in order: on etcd and memory in one atomic step
// (alternative i applies only if every earlier one's conditions failed at
// that same instant); elsewhere (ZooKeeper) as one Commit each, every
// condition checked when its alternative is tried. When none applies it
// returns -1 and a *NoneApplied with each alternative's condition failure.
// Any other error (a bad Txn, the connection, ctx) returns -1 and that
// error, and, as for Commit, the outcome of a write in flight is unknown.
func CommitFirst(ctx context.Context, s Session, alts []Txn) (int, Version, error) {
	if fc, ok := s.(FirstCommitter); ok && len(alts) > 0 {
		return fc.CommitFirst(ctx, alts)
	}
	if err := CheckAlternatives(alts); err != nil {
		return -1, 0, err
	}
	none := &NoneApplied{Errs: make([]error, 0, len(alts))}
	for i, t := range alts {
		v, err := s.Commit(ctx, t)
		if err == nil {
			return i, v, nil
		}
		if !IsCondFailure(err) {
			return -1, 0, err
		}
		none.Errs = append(none.Errs, err)
	}
	return -1, 0, none
}

// CheckAlternatives validates alts as CommitFirst does before it writes
// anything, for the implementations of FirstCommitter: at least one
// alternative (else ErrBadTxn, in an *OpError), and each one's Txn.Check.
func CheckAlternatives(alts []Txn) error {
	if len(alts) == 0 {
		return &OpError{Op: "commit", Err: fmt.Errorf("%w: no alternatives", ErrBadTxn)}
	}
	for _, t := range alts {
		if err := t.Check(); err != nil {
			return err
		}
	}
	return nil
}

// NoneApplied is CommitFirst's error when no alternative's conditions
// held: Errs[i] is alternative i's, an *OpError naming its first failing
// condition as Commit's does (wrapping ErrExists, ErrNotFound or
// ErrBadVersion).
type NoneApplied struct {
	Errs []error
}

func (e *NoneApplied) Error() string {
	parts := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		parts[i] = err.Error()
	}
	return "registry commit: no alternative applied: " + strings.Join(parts, "; ")
}

// Unwrap returns the alternatives' errors.
func (e *NoneApplied) Unwrap() []error { return e.Errs }

// IsCondFailure reports whether err is a Commit's failed condition: an
// *OpError wrapping ErrExists, ErrNotFound or ErrBadVersion.
func IsCondFailure(err error) bool {
	var op *OpError
	return errors.As(err, &op) && (errors.Is(err, ErrExists) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrBadVersion))
}
