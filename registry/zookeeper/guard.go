package zookeeper

import (
	"context"
	"errors"
	"hash/fnv"
	"strconv"

	"github.com/go-zookeeper/zk"
)

// A ZooKeeper multi checks a znode's data version only, and a znode
// deleted and created again starts again at data version 0 (1 after this
// package's create and set): a conditional write that read a key's Mzxid
// (its registry version) and then checked the data version in its multi
// would pass on a key deleted and created again in between, at the same
// data version (an ABA; a rule item is deleted with its last entry and
// created again by the next change). So every deletion this package makes
// of a key, and every creation of an ephemeral key (whose deletion the
// server makes when its session ends), sets the data of the key's
// deletion guard in the same multi, and every conditional write checks the
// data version of the guard of each key it has a version condition on,
// read with the keys' Mzxids. A guard is one of guardBuckets znodes,
// chosen by a hash of the key, under a sibling of the namespace root (so
// no List, Children, Watch or Delete of the namespace sees it); it is
// created on first use and never deleted by this package. Deletions that do not go
// through this package (an operator's, or ShardingSphere's on a shared
// namespace) are not seen. A write that failed on a guard only is read and
// tried again (guardAttempts): the reads then tell a deletion of its own
// keys (their Mzxid differs) from one of another key of the bucket.
const guardBuckets = 64

// guardAttempts bounds how many times a conditional write whose multi
// failed only on a guard reads its conditions and writes again: a guard
// moves on with every deletion of a key of its bucket, most of them other
// keys', which must not fail the write (a worker id's renewal takes a
// failed condition on its fence for the id lost).
const guardAttempts = 8

// errGuardMoved is a conditional write's multi failing only on a guard.
var errGuardMoved = errors.New("zookeeper: a deletion guard moved on")

// guardRoot returns the znode under which the namespace's guards live: a
// sibling of the namespace root.
func (r *Repo) guardRoot() string { return r.root + ".deletions" }

// guard returns the path of key's deletion guard.
func (r *Repo) guard(key string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return r.guardRoot() + "/" + strconv.Itoa(int(h.Sum32()%guardBuckets))
}

// bump returns the multi operation that moves key's guard on.
func (r *Repo) bump(key string) *zk.SetDataRequest {
	return &zk.SetDataRequest{Path: r.guard(key), Data: []byte{}, Version: -1}
}

// makeGuard creates guard path g (and the guards' root) if missing.
func (r *Repo) makeGuard(conn *zk.Conn, g string) error {
	for _, p := range []string{r.guardRoot(), g} {
		if _, err := conn.Create(p, []byte{}, 0, r.acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// guardVersions returns the data version of each of guards (created when
// missing), read with pipelined Exists calls.
func (r *Repo) guardVersions(ctx context.Context, conn *zk.Conn, guards []string) (map[string]int32, error) {
	versions := make([]int32, len(guards))
	err := pipeline(ctx, len(guards), func(i int) error {
		for attempt := 0; ; attempt++ {
			ok, stat, err := conn.Exists(guards[i])
			switch {
			case err != nil:
				return err
			case ok:
				versions[i] = stat.Version
				return nil
			case attempt == 3:
				return zk.ErrNoNode
			}
			if err := r.makeGuard(conn, guards[i]); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]int32, len(guards))
	for i, g := range guards {
		out[g] = versions[i]
	}
	return out, nil
}

// guardedMulti runs ops as one multi and, when it fails because a guard
// it bumps is missing (the operation at an index ≥ firstGuard), creates
// the guard and runs it again, a few times at most.
func (r *Repo) guardedMulti(conn *zk.Conn, firstGuard int, ops ...any) ([]zk.MultiResponse, int, error) {
	for attempt := 0; ; attempt++ {
		res, at, err := multiAt(conn, ops...)
		if at < firstGuard || !errors.Is(err, zk.ErrNoNode) || attempt == 3 {
			return res, at, err
		}
		g := ""
		switch op := ops[at].(type) {
		case *zk.SetDataRequest:
			g = op.Path
		case *zk.CheckVersionRequest:
			return res, at, err // a checked guard was there when read: it changed
		}
		if err := r.makeGuard(conn, g); err != nil {
			return res, at, err
		}
	}
}
