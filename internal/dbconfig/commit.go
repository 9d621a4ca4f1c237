package dbconfig

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Limits of one registry transaction. etcd refuses a Txn with more than
// --max-txn-ops (default 128) compares, writes or reads; a Commit has one
// compare and one read per key. ZooKeeper refuses a request larger than
// jute.maxbuffer (default 1 MiB); a multi also carries a create of every
// missing parent.
const (
	DefaultMaxTxnKeys  = 120
	DefaultMaxTxnBytes = 512 << 10
)

// TornRead returns an error wrapping registry.ErrBadVersion (so that a
// rule change is computed again) when an active_version among keys names
// a version keys lack: a listing that is not one snapshot (ZooKeeper's:
// children, then reads) caught a change committed between its steps, and
// the item would look absent. nil when keys are whole. It costs what
// changed since the keys' base was checked (RuleKeys.DanglingVersion),
// not a pass over thousands of items at each statement.
func TornRead(keys metadata.RuleKeys) error {
	key, n, found := keys.DanglingVersion()
	if !found {
		return nil
	}
	return &registry.OpError{Op: "list", Key: key, Err: fmt.Errorf("%w: version %d was replaced while the rules were read", registry.ErrBadVersion, n)}
}

// txnSize is what one transaction costs against the limits: the keys it
// conditions (every key it writes is one of them) and, as batches counts
// them, its keys and values plus 64 bytes a key.
func txnSize(txn registry.Txn) (keys, bytes int) {
	for _, c := range txn.Conds {
		bytes += len(c.Key) + 64
	}
	for _, o := range txn.Ops {
		bytes += len(o.Value)
	}
	return len(txn.Conds), bytes
}

// checkOneTransaction refuses a change that must be written atomically
// (a rule or storage-unit statement) but does not fit one registry
// transaction: more than DefaultMaxTxnKeys keys or DefaultMaxTxnBytes
// bytes (txnSize). The refusal is TooBigForOneTransaction; nothing is
// sent.
func checkOneTransaction(txn registry.Txn) error {
	keys, bytes := txnSize(txn)
	if keys > DefaultMaxTxnKeys || bytes > DefaultMaxTxnBytes {
		return TooBigForOneTransaction(keys, bytes)
	}
	return nil
}

// TooBigForOneTransaction is the refusal of a statement whose change needs
// keys registry keys and bytes bytes in its one transaction, beyond
// DefaultMaxTxnKeys or DefaultMaxTxnBytes (upstream's
// UnsupportedSQLOperationException, 30001, 0A000).
func TooBigForOneTransaction(keys, bytes int) *sqlerr.Error {
	return unsupported("the change needs %d registry keys and %d KiB in one transaction, more than one transaction holds (%d keys, %d KiB); nothing was written: split it into smaller statements (a sharding table rule is two keys or more a table).",
		keys, (bytes+1023)/1024, DefaultMaxTxnKeys, DefaultMaxTxnBytes>>10)
}

// batches splits kvs into transactions within the limits, in order.
func batches(kvs []registry.KV, maxKeys, maxBytes int) [][]registry.KV {
	var out [][]registry.KV
	var cur []registry.KV
	size := 0
	for _, kv := range kvs {
		n := len(kv.Key) + len(kv.Value) + 64
		if len(cur) > 0 && (len(cur)+1 > maxKeys || size+n > maxBytes) {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, kv)
		size += n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// commitAll writes kvs, every one of which must be absent, with head's
// conditions in the first transaction and tail (conditions and writes,
// such as replaced versions) in the last, each transaction through commit
// (last set for the last one, which the caller commits with its
// announcements).
// Within the limits it is one transaction: all or nothing. Beyond them it
// commits several in order and, when one fails, deletes what the earlier
// ones wrote with rollback, and returns the failure (joined with the
// rollback's, if that failed too).
func commitAll(ctx context.Context, commit func(ctx context.Context, txn registry.Txn, last bool) error, kvs []registry.KV, head []registry.Cond, tail registry.Txn, maxKeys, maxBytes int, rollback func(ctx context.Context) error) (txns int, err error) {
	parts := batches(kvs, max(1, maxKeys-len(head)-len(tail.Conds)), maxBytes)
	if len(parts) == 0 {
		parts = [][]registry.KV{nil}
	}
	for i, part := range parts {
		var txn registry.Txn
		if i == 0 {
			txn.Conds = append(txn.Conds, head...)
		}
		for _, kv := range part {
			txn.Conds = append(txn.Conds, registry.Cond{Key: kv.Key})
			txn.Ops = append(txn.Ops, registry.Op{Key: kv.Key, Value: kv.Value})
		}
		if i == len(parts)-1 {
			txn.Conds = append(txn.Conds, tail.Conds...)
			txn.Ops = append(txn.Ops, tail.Ops...)
		}
		if err := commit(ctx, txn, i == len(parts)-1); err != nil {
			if i == 0 {
				return 1, err
			}
			if rerr := rollback(context.WithoutCancel(ctx)); rerr != nil {
				return i + 1, errors.Join(err, fmt.Errorf("roll back the %d transactions already committed: %w", i, rerr))
			}
			return i + 1, err
		}
	}
	return len(parts), nil
}

// undoer restores the subtree of a database to what it was before an
// import: it removes the database's children that did not exist before,
// the database node when it did not exist, and /metadata when the import
// created it.
type undoer struct {
	repo           registry.Repository
	dbKey          string
	hadDB, hadRoot bool
	children       []string // the database's children before
}

func newUndoer(ctx context.Context, repo registry.Repository, dbKey string) (*undoer, error) {
	u := &undoer{repo: repo, dbKey: dbKey}
	var err error
	if u.hadRoot, err = exists(ctx, repo, paths.MetadataRoot); err != nil {
		return nil, err
	}
	if u.hadDB, err = exists(ctx, repo, dbKey); err != nil {
		return nil, err
	}
	if u.hadDB {
		if u.children, err = repo.Children(ctx, dbKey); err != nil {
			return nil, err
		}
	}
	return u, nil
}

func (u *undoer) undo(ctx context.Context) error {
	if !u.hadDB {
		if err := u.repo.Delete(ctx, u.dbKey); err != nil {
			return err
		}
	} else {
		now, err := u.repo.Children(ctx, u.dbKey)
		if err != nil {
			return err
		}
		for _, c := range now {
			if !slices.Contains(u.children, c) {
				if err := u.repo.Delete(ctx, u.dbKey+"/"+c); err != nil {
					return err
				}
			}
		}
	}
	if !u.hadRoot {
		left, err := u.repo.Children(ctx, paths.MetadataRoot)
		if err != nil {
			return err
		}
		if len(left) == 0 {
			return u.repo.Delete(ctx, paths.MetadataRoot)
		}
	}
	return nil
}

func exists(ctx context.Context, repo registry.Repository, key string) (bool, error) {
	_, err := repo.Get(ctx, key)
	if errors.Is(err, registry.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
