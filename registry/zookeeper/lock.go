package zookeeper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Lock node names follow Curator's protected InterProcessMutex nodes,
// "_c_{guid}-lock-{sequence}", and the queue is ordered by the sequence
// suffix, as Curator orders it: a Curator mutex on the same path and this
// one exclude each other. The guid finds our node again when the create's
// reply was lost.
const (
	lockProtected = "_c_"
	lockName      = "-lock-"
)

// lock is a held registry.Lock: the session's sequential ephemeral znode
// that is first in the key's queue.
type lock struct {
	s    *session
	key  string
	node string // full znode path
	held atomic.Bool
}

// Lock implements registry.Session with the sequential-ephemeral queue
// recipe (Curator InterProcessMutex, Vitess zk2topo): join the queue under
// key, then wait for the node just before ours to go. When ctx ends, the
// queue node is removed and the context's error returned. Locks are not
// reentrant: a second Lock by the same session waits like anyone else.
func (s *session) Lock(ctx context.Context, key string) (registry.Lock, error) {
	return s.lock(ctx, "lock", key, true)
}

// TryLock implements registry.Session: it joins the queue and leaves it
// again with ErrLocked when anyone is ahead.
func (s *session) TryLock(ctx context.Context, key string) (registry.Lock, error) {
	return s.lock(ctx, "trylock", key, false)
}

func (s *session) lock(ctx context.Context, op, key string, wait bool) (registry.Lock, error) {
	if err := s.check(ctx, op, key); err != nil {
		return nil, err
	}
	dir := s.r.full(key)
	node, err := s.enqueue(dir)
	if err != nil {
		return nil, s.convert(op, key, err)
	}
	l := &lock{s: s, key: key, node: node}
	for {
		first, prev, err := s.position(dir, node)
		if err == nil && first {
			l.held.Store(true)
			return l, nil
		}
		if err == nil && !wait {
			err = registry.ErrLocked
		}
		var gone <-chan zk.Event
		if err == nil {
			var ok bool
			ok, _, gone, err = s.conn.ExistsW(dir + "/" + prev)
			if err == nil && !ok {
				continue // it went meanwhile: look again
			}
		}
		if err == nil {
			select {
			case <-gone:
				continue
			case <-ctx.Done():
				err = ctx.Err()
			case <-s.done:
				err = s.Err()
			}
		}
		s.dequeue(node)
		return nil, s.convert(op, key, err)
	}
}

// enqueue creates our sequential ephemeral node under dir (creating dir and
// its parents) and returns its path. When the connection drops before the
// reply, it looks for the node by its guid.
func (s *session) enqueue(dir string) (string, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	prefix := lockProtected + hex.EncodeToString(b[:]) + lockName
	var node string
	err := withParents(s.conn, s.r.acl, dir+"/"+prefix, func() error {
		for attempt := 0; ; attempt++ {
			var err error
			node, err = s.conn.Create(dir+"/"+prefix, []byte{}, zk.FlagEphemeralSequential, s.r.acl)
			if !errors.Is(err, zk.ErrConnectionClosed) || attempt == 3 {
				return err
			}
			names, _, lerr := s.conn.Children(dir)
			if lerr != nil {
				return err
			}
			for _, n := range names {
				if strings.HasPrefix(n, prefix) {
					node = dir + "/" + n
					return nil
				}
			}
		}
	})
	return node, err
}

// position reports whether node is first in dir's queue, and otherwise the
// name of the node just before it.
func (s *session) position(dir, node string) (first bool, prev string, err error) {
	names, _, err := s.conn.Children(dir)
	if err != nil {
		return false, "", err
	}
	queue := names[:0]
	for _, n := range names {
		if strings.Contains(n, lockName) {
			queue = append(queue, n)
		}
	}
	slices.SortFunc(queue, func(a, b string) int { return strings.Compare(sequence(a), sequence(b)) })
	me := node[strings.LastIndexByte(node, '/')+1:]
	i := slices.Index(queue, me)
	switch {
	case i < 0:
		return false, "", fmt.Errorf("%w: our lock node %s is gone", zk.ErrSessionExpired, node)
	case i == 0:
		return true, "", nil
	default:
		return false, queue[i-1], nil
	}
}

// sequence is the ten-digit sequence suffix of a lock node name.
func sequence(name string) string {
	return name[strings.LastIndex(name, lockName)+len(lockName):]
}

// dequeue removes our queue node; the session's end removes it otherwise.
func (s *session) dequeue(node string) {
	if err := s.conn.Delete(node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) && !s.refuse.Load() {
		s.r.cfg.logf("zookeeper: could not remove lock node %s (the session's end will): %v", node, err)
	}
}

// Key implements registry.Lock.
func (l *lock) Key() string { return l.key }

// Unlock implements registry.Lock: it deletes the lock node, which lets the
// next in the queue through. A second call returns ErrLockNotHeld. After the
// session ended the lock is already gone and Unlock returns nil.
func (l *lock) Unlock(ctx context.Context) error {
	if !l.held.CompareAndSwap(true, false) {
		return &registry.OpError{Op: "unlock", Key: l.key, Err: registry.ErrLockNotHeld}
	}
	select {
	case <-l.s.done:
		return nil
	default:
	}
	err := l.s.conn.Delete(l.node, -1)
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if l.s.refuse.Load() {
		return nil // the session ended: the node went with it
	}
	l.held.Store(true) // still ours: the caller may retry
	return l.s.convert("unlock", l.key, err)
}
