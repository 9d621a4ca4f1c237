package dbconfig

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/shardkeeper/shardkeeper/internal/paths"
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
// such as ephemeral announcements or replaced versions) in the last.
// Within the limits it is one transaction: all or nothing. Beyond them it
// commits several in order and, when one fails, deletes what the earlier
// ones wrote with rollback, and returns the failure (joined with the
// rollback's, if that failed too).
func commitAll(ctx context.Context, sess registry.Session, kvs []registry.KV, head []registry.Cond, tail registry.Txn, maxKeys, maxBytes int, rollback func(ctx context.Context) error) (txns int, err error) {
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
		if _, err := sess.Commit(ctx, txn); err != nil {
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
