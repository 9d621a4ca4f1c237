// Package clusterlock is LOCK CLUSTER and UNLOCK CLUSTER: the cluster state
// /states/cluster_state changed under the cluster lock, with upstream's
// checks and error codes (LockClusterExecutor, UnlockClusterExecutor).
//
// LOCK CLUSTER WITH LOCK_STRATEGY(TYPE="WRITE") sets the state READ_ONLY,
// TYPE="READ_WRITE" sets UNAVAILABLE; UNLOCK CLUSTER sets OK. Each runs
// under the lock paths.Layout.ClusterLock names (the exclusive operation
// /exclusive_operation/lock_cluster, or 5.5.2's global lock), which
// ShardingSphere nodes take for the same statements, so that two LOCKs on
// any mix of nodes never both succeed.
//
// A Standalone node refuses LOCK CLUSTER with 17000, as upstream's
// LockClusterExecutor does (DistSQLExecutorClusterModeRequired), and
// accepts UNLOCK CLUSTER, so that a lock set on its registry by a Cluster
// node or an earlier version stays removable from every surface.
package clusterlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// DefaultTimeout is how long LOCK and UNLOCK wait for the cluster lock
// when no TIMEOUT is given (upstream's 3000 ms).
const DefaultTimeout = 3 * time.Second

// The cluster states (ShardingSphereState).
const (
	StateOK          = "OK"
	StateReadOnly    = "READ_ONLY"
	StateUnavailable = "UNAVAILABLE"
)

// The refusals.
var (
	// ErrLocked is LockedClusterException (15030): LOCK of a cluster
	// whose state is not OK.
	ErrLocked = &sqlerr.Error{Code: 15030, SQLState: "HY000", Kind: sqlerr.Conflict, Message: "Cluster is already locked."}
	// ErrNotLocked is NotLockedClusterException (15031): UNLOCK of a
	// cluster whose state is OK.
	ErrNotLocked = &sqlerr.Error{Code: 15031, SQLState: "HY000", Kind: sqlerr.Conflict, Message: "Cluster is not locked."}
	// ErrClusterModeRequired is upstream's DistSQLExecutorClusterModeRequired
	// (17000): LOCK CLUSTER on a Standalone node.
	ErrClusterModeRequired = &sqlerr.Error{Code: 17000, SQLState: "44000", Message: "Mode must be 'cluster'."}
)

// BusyError says the cluster lock was held by someone else for the whole
// timeout. Upstream skips the statement without a word in that case; here
// it is an error, and nothing was written.
type BusyError struct {
	Key     string
	Timeout time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("another LOCK or UNLOCK CLUSTER holds the cluster lock %s (waited %v); nothing was changed, try again", e.Key, e.Timeout)
}

// StateFor returns the state LOCK CLUSTER sets for strategy: READ_ONLY for
// WRITE, UNAVAILABLE for READ_WRITE (any case). Another strategy is
// upstream's server error SPI-00001 (ServiceProviderNotFoundException),
// which a client sees as code 30000.
func StateFor(strategy string) (string, error) {
	switch strings.ToUpper(strategy) {
	case "WRITE":
		return StateReadOnly, nil
	case "READ_WRITE":
		return StateUnavailable, nil
	}
	return "", &sqlerr.Error{Code: 30000, SQLState: "HY000", Message: fmt.Sprintf("SPI-00001: No implementation class load from SPI 'org.apache.shardingsphere.proxy.backend.lock.spi.ClusterLockStrategy' with type '%s'.", strategy)}
}

// Op says which statement Change runs.
type Op struct {
	// Layout says which lock key to take (paths.Layout.ClusterLock).
	Layout paths.Layout
	// Session holds the lock; nil means a session of Change's own, opened
	// and closed around the statement.
	Session registry.Session
	// Timeout bounds the wait for the lock; zero means DefaultTimeout.
	Timeout time.Duration
	// Standalone says the node runs in Standalone mode: Lock refuses
	// with ErrClusterModeRequired; Unlock runs as in Cluster mode.
	Standalone bool
}

// Lock runs LOCK CLUSTER WITH strategy: under the cluster lock, it checks
// that the state is OK (else ErrLocked) and writes the strategy's state,
// which it returns. The state is checked before the lock too, as upstream
// does, so a locked cluster is refused without waiting. On a Standalone
// node (op.Standalone) it returns ErrClusterModeRequired and writes
// nothing. ctx bounds the whole statement.
func Lock(ctx context.Context, repo registry.Repository, strategy string, op Op) (string, error) {
	if op.Standalone {
		return "", ErrClusterModeRequired
	}
	target, err := StateFor(strategy)
	if err != nil {
		return "", err
	}
	err = change(ctx, repo, op, func(cur string) (string, error) {
		if cur != StateOK {
			return "", ErrLocked
		}
		return target, nil
	})
	return target, err
}

// Unlock runs UNLOCK CLUSTER: under the cluster lock, it checks that the
// state is not OK (else ErrNotLocked) and writes OK, in either mode.
func Unlock(ctx context.Context, repo registry.Repository, op Op) error {
	return change(ctx, repo, op, func(cur string) (string, error) {
		if cur == StateOK {
			return "", ErrNotLocked
		}
		return StateOK, nil
	})
}

// State returns the cluster state in the registry: OK when
// /states/cluster_state is missing or empty, as upstream reads it.
func State(ctx context.Context, repo registry.Repository) (string, error) {
	kv, err := repo.Get(ctx, paths.ClusterState)
	if errors.Is(err, registry.ErrNotFound) {
		return StateOK, nil
	}
	if err != nil {
		return "", err
	}
	if v := strings.TrimSpace(string(kv.Value)); v != "" {
		return v, nil
	}
	return StateOK, nil
}

// change checks decide against the current state, takes the cluster lock,
// checks again and writes what decide returns.
func change(ctx context.Context, repo registry.Repository, op Op, decide func(cur string) (string, error)) error {
	cur, err := State(ctx, repo)
	if err != nil {
		return err
	}
	if _, err := decide(cur); err != nil {
		return err
	}
	sess := op.Session
	if sess == nil {
		s, err := repo.NewSession(ctx, registry.SessionOptions{})
		if err != nil {
			return fmt.Errorf("open a registry session for the cluster lock: %w", err)
		}
		defer s.Close(context.WithoutCancel(ctx))
		sess = s
	}
	timeout := op.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	key := op.Layout.ClusterLock()
	lctx, cancel := context.WithTimeout(ctx, timeout)
	lock, err := sess.Lock(lctx, key)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return &BusyError{Key: key, Timeout: timeout}
		}
		return fmt.Errorf("take the cluster lock %s: %w", key, err)
	}
	defer func() { _ = lock.Unlock(context.WithoutCancel(ctx)) }()
	if cur, err = State(ctx, repo); err != nil {
		return err
	}
	next, err := decide(cur)
	if err != nil {
		return err
	}
	if _, err := repo.Put(ctx, paths.ClusterState, []byte(next)); err != nil {
		return fmt.Errorf("write %s: %w", paths.ClusterState, err)
	}
	return nil
}
