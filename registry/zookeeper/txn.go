package zookeeper

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Commit implements registry.Session with one multi on the session's
// connection. Conditions on a version are read first (Mzxid compared, then
// the znode's data version checked inside the multi, as Update does, with
// the data version of the key's deletion guard, read before the key, so
// that a key deleted and created again in between fails: guardBuckets);
// absence is asserted by the create of the key, or by a create and delete
// pair when the key is not written. Missing parents of created keys are
// created by the same multi, as persistent znodes with empty data, so a
// Commit that fails leaves none behind; a created key that is an ancestor
// of another created key is created before it. Ephemeral puts create ephemeral
// znodes; a put of an existing znode sets its data and keeps its kind.
// ctx bounds the reads and stops the retries; the multi itself is bounded
// by the connection's timeouts.
//
// A multi that fails only on a guard (a deletion of another key of the same
// bucket meanwhile, or this key's) is run again from the reads, which then
// find the conditions changed or not, up to guardAttempts times.
func (s *session) Commit(ctx context.Context, txn registry.Txn) (registry.Version, error) {
	if err := txn.Check(); err != nil {
		return 0, err
	}
	for attempt := 1; ; attempt++ {
		v, err := s.commit(ctx, txn)
		if !errors.Is(err, errGuardMoved) {
			return v, err
		}
		if attempt == guardAttempts || ctx.Err() != nil {
			return 0, s.whichFailed(ctx, txn.Conds, zk.ErrBadVersion)
		}
	}
}

// commit is one attempt of Commit: errGuardMoved when only a guard failed.
func (s *session) commit(ctx context.Context, txn registry.Txn) (registry.Version, error) {
	first := txn.Conds[0].Key
	if err := s.check(ctx, "commit", first); err != nil {
		return 0, err
	}
	keyBytes, valueBytes, largest := 0, 0, 0
	for _, c := range txn.Conds {
		keyBytes += len(c.Key)
	}
	for _, o := range txn.Ops {
		keyBytes, valueBytes, largest = keyBytes+len(o.Key), valueBytes+len(o.Value), max(largest, len(o.Value))
	}
	// One created key's value is sent twice (a set returns the Stat).
	if err := s.r.checkSize("commit", first, len(txn.Conds)+len(txn.Ops), keyBytes, valueBytes+largest); err != nil {
		return 0, err
	}
	for _, c := range txn.Conds {
		if c.Key == "/" {
			return 0, &registry.OpError{Op: "commit", Key: c.Key, Err: fmt.Errorf("%w: / is the namespace root, not a key", registry.ErrBadKey)}
		}
	}
	// The keys that must be absent are created by the multi (and deleted
	// again when they are not written), so their parents must exist; the
	// missing ones are looked up while the versions are read, and created
	// by the multi itself, as persistent znodes ahead of the writes.
	var creates []string
	for _, c := range txn.Conds {
		if c.Version == 0 {
			creates = append(creates, s.r.full(c.Key))
		}
	}
	var (
		parents    []string
		parentsErr error
		looked     = make(chan struct{})
	)
	go func() {
		defer close(looked)
		parents, parentsErr = missingParents(ctx, s.conn, creates)
	}()
	// The guards of the keys with a version condition are read before the
	// keys (on this connection, in order): a key deleted and created again
	// after its guard's read moves the guard on, one deleted before the
	// keys' read fails its condition there (see guardBuckets).
	var guards []string
	for _, c := range txn.Conds {
		if g := s.r.guard(c.Key); c.Version != 0 && !slices.Contains(guards, g) {
			guards = append(guards, g)
		}
	}
	guardVersions, err := s.r.guardVersions(ctx, s.conn, guards)
	if err != nil {
		<-looked
		return 0, s.convert("commit", first, err)
	}
	stats, err := s.statConds(ctx, txn.Conds)
	<-looked
	if err != nil {
		return 0, err
	}
	if parentsErr != nil {
		return 0, s.convert("commit", first, parentsErr)
	}
	ops := make(map[string]registry.Op, len(txn.Ops))
	for _, o := range txn.Ops {
		ops[o.Key] = o
	}
	// A key the multi creates that is an ancestor of another created key
	// goes with the missing parents, at its depth, so that it exists
	// before its descendants are created.
	promoted := map[string]*zk.CreateRequest{}
	for _, c := range txn.Conds {
		o, written := ops[c.Key]
		if c.Version != 0 || !written || o.Delete {
			continue
		}
		p := s.r.full(c.Key)
		for _, q := range creates {
			if strings.HasPrefix(q, p+"/") {
				flags := int32(0)
				if o.Ephemeral {
					flags = zk.FlagEphemeral
				}
				promoted[c.Key] = &zk.CreateRequest{Path: p, Data: data(o.Value), Acl: s.r.acl, Flags: flags}
				break
			}
		}
	}
	var reqs []any
	versionAt := -1 // index of a request whose Stat carries the multi's zxid
	for _, c := range txn.Conds {
		p := s.r.full(c.Key)
		o, written := ops[c.Key]
		if promoted[c.Key] != nil {
			continue
		}
		switch {
		case c.Version == 0 && (!written || o.Delete):
			reqs = append(reqs, &zk.CreateRequest{Path: p, Data: []byte{}, Acl: s.r.acl}, &zk.DeleteRequest{Path: p, Version: -1})
		case c.Version == 0:
			flags := int32(0)
			if o.Ephemeral {
				flags = zk.FlagEphemeral
			}
			reqs = append(reqs, &zk.CreateRequest{Path: p, Data: data(o.Value), Acl: s.r.acl, Flags: flags})
			if versionAt < 0 {
				// A set at version 0 right after the create returns the Stat.
				reqs = append(reqs, &zk.SetDataRequest{Path: p, Data: data(o.Value), Version: 0})
				versionAt = len(reqs) - 1
			}
		case !written:
			reqs = append(reqs, &zk.CheckVersionRequest{Path: p, Version: stats[c.Key].Version})
		case o.Delete:
			reqs = append(reqs, &zk.DeleteRequest{Path: p, Version: stats[c.Key].Version})
		default:
			reqs = append(reqs, &zk.SetDataRequest{Path: p, Data: data(o.Value), Version: stats[c.Key].Version})
			versionAt = len(reqs) - 1
		}
	}
	// The guards checked, then the guards moved on: of the keys deleted,
	// and of the ephemeral keys created (their deletion is the server's).
	firstGuard := len(reqs)
	for _, g := range guards {
		reqs = append(reqs, &zk.CheckVersionRequest{Path: g, Version: guardVersions[g]})
	}
	var bumped []string
	for _, c := range txn.Conds {
		o, written := ops[c.Key]
		if g := s.r.guard(c.Key); written && (c.Version != 0 && o.Delete || c.Version == 0 && o.Ephemeral && !o.Delete) && !slices.Contains(bumped, g) {
			bumped = append(bumped, g)
			reqs = append(reqs, s.r.bump(c.Key))
		}
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := ctx.Err(); err != nil {
				return 0, convertError("commit", first, err)
			}
		}
		front := make([]*zk.CreateRequest, 0, len(parents)+len(promoted))
		for _, p := range parents {
			front = append(front, &zk.CreateRequest{Path: p, Data: []byte{}, Acl: s.r.acl})
		}
		for _, r := range promoted {
			front = append(front, r)
		}
		slices.SortFunc(front, func(a, b *zk.CreateRequest) int {
			return cmp.Or(cmp.Compare(strings.Count(a.Path, "/"), strings.Count(b.Path, "/")), strings.Compare(a.Path, b.Path))
		})
		all := make([]any, 0, len(front)+len(reqs))
		for _, r := range front {
			all = append(all, r)
		}
		s.r.between()
		all = append(all, reqs...)
		res, at, err := multiAt(s.conn, all...)
		if err == nil {
			if versionAt >= 0 {
				return registry.Version(res[len(front)+versionAt].Stat.Mzxid), nil
			}
			return 0, nil // only deletes and checks: no written key to version
		}
		failed := err
		if at >= len(front)+firstGuard && errors.Is(failed, zk.ErrNoNode) && attempt < 5 {
			if sd, ok := all[at].(*zk.SetDataRequest); ok {
				// A guard moved on is missing: create it, write again.
				if err := s.r.makeGuard(s.conn, sd.Path); err != nil {
					return 0, s.convert("commit", first, err)
				}
				continue
			}
		}
		if g := len(front) + firstGuard; at >= g && at < g+len(guards) && errors.Is(failed, zk.ErrBadVersion) {
			return 0, errGuardMoved
		}
		if at >= 0 && at < len(front) && promoted[s.r.key(front[at].Path)] != nil && errors.Is(failed, zk.ErrNodeExists) {
			return 0, s.whichFailed(ctx, txn.Conds, failed)
		}
		parentFailed := at >= 0 && at < len(front)
		if (parentFailed || errors.Is(failed, zk.ErrNoNode)) && attempt < 5 {
			// A parent is missing, or one the multi creates appeared (or
			// lost its own parent) meanwhile: look again.
			missing, err := missingParents(ctx, s.conn, creates)
			if err != nil {
				return 0, s.convert("commit", first, err)
			}
			if parentFailed || len(missing) > 0 {
				parents = missing
				continue
			}
		}
		if parentFailed {
			return 0, s.convert("commit", s.r.key(front[at].Path), failed)
		}
		if errors.Is(failed, zk.ErrNodeExists) || errors.Is(failed, zk.ErrNoNode) || errors.Is(failed, zk.ErrBadVersion) {
			return 0, s.whichFailed(ctx, txn.Conds, failed)
		}
		return 0, s.convert("commit", first, failed)
	}
}

// missingParents returns the ancestors of paths that do not exist,
// shallowest first, leaving out paths themselves. It reads each level of
// ancestors with pipelined Exists calls.
func missingParents(ctx context.Context, conn *zk.Conn, paths []string) ([]string, error) {
	seen := make(map[string]bool, 2*len(paths))
	for _, p := range paths {
		seen[p] = true
	}
	var level, missing []string
	up := func(p string) {
		if q := parent(p); q != "/" && !seen[q] {
			seen[q] = true
			level = append(level, q)
		}
	}
	for _, p := range paths {
		up(p)
	}
	for len(level) > 0 {
		exists := make([]bool, len(level))
		err := pipeline(ctx, len(level), func(i int) error {
			ok, _, err := conn.Exists(level[i])
			exists[i] = ok
			return err
		})
		if err != nil {
			return nil, err
		}
		checked := level
		level = nil
		for i, p := range checked {
			if !exists[i] {
				missing = append(missing, p)
				up(p)
			}
		}
	}
	slices.SortFunc(missing, func(a, b string) int {
		return cmp.Or(cmp.Compare(strings.Count(a, "/"), strings.Count(b, "/")), strings.Compare(a, b))
	})
	return missing, nil
}

// statConds reads the Stat of every condition with a version (pipelined)
// and checks the Mzxid; it returns the failure of the first condition (in
// order) that does not hold.
func (s *session) statConds(ctx context.Context, conds []registry.Cond) (map[string]*zk.Stat, error) {
	var versioned []registry.Cond
	for _, c := range conds {
		if c.Version != 0 {
			versioned = append(versioned, c)
		}
	}
	found, stats, err := s.stat(ctx, versioned)
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]*zk.Stat, len(versioned))
	for i, c := range versioned {
		switch {
		case !found[i]:
			return nil, &registry.OpError{Op: "commit", Key: c.Key, Err: registry.ErrNotFound}
		case registry.Version(stats[i].Mzxid) != c.Version:
			return nil, &registry.OpError{Op: "commit", Key: c.Key,
				Err: fmt.Errorf("%w: expected %d, found %d", registry.ErrBadVersion, c.Version, stats[i].Mzxid)}
		}
		byKey[c.Key] = stats[i]
	}
	return byKey, nil
}

// stat reads whether each condition's key exists, and its Stat, with
// pipelined Exists calls. An error names the first key whose read failed.
func (s *session) stat(ctx context.Context, conds []registry.Cond) ([]bool, []*zk.Stat, error) {
	found := make([]bool, len(conds))
	stats := make([]*zk.Stat, len(conds))
	err := pipeline(ctx, len(conds), func(i int) error {
		ok, stat, err := s.conn.Exists(s.r.full(conds[i].Key))
		if err != nil {
			return s.convert("commit", conds[i].Key, err)
		}
		found[i], stats[i] = ok, stat
		return nil
	})
	if err != nil {
		return nil, nil, convertError("commit", conds[0].Key, err)
	}
	return found, stats, nil
}

// whichFailed names the first condition that does not hold now; if all
// hold again (a race), it reports the multi's own failure.
func (s *session) whichFailed(ctx context.Context, conds []registry.Cond, failed error) error {
	found, stats, err := s.stat(ctx, conds)
	if err != nil {
		return err
	}
	for i, c := range conds {
		switch {
		case c.Version == 0 && found[i]:
			return &registry.OpError{Op: "commit", Key: c.Key, Err: registry.ErrExists}
		case c.Version != 0 && !found[i]:
			return &registry.OpError{Op: "commit", Key: c.Key, Err: registry.ErrNotFound}
		case c.Version != 0 && registry.Version(stats[i].Mzxid) != c.Version:
			return &registry.OpError{Op: "commit", Key: c.Key,
				Err: fmt.Errorf("%w: expected %d, found %d", registry.ErrBadVersion, c.Version, stats[i].Mzxid)}
		}
	}
	return &registry.OpError{Op: "commit", Key: conds[0].Key, Err: fmt.Errorf("%w: a condition changed during the transaction: %v", registry.ErrBadVersion, failed)}
}
