package console

import (
	"context"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/clusterlock"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
)

// LOCK CLUSTER and UNLOCK CLUSTER (internal/clusterlock): the cluster state
// changed under the layout's cluster lock, with upstream's checks; a
// Standalone node refuses LOCK and accepts UNLOCK, as the HTTP API and
// the CLI do. Both
// return once this node's view shows the new state (at most 3 s later),
// so that the session's next statement sees it.

func (e *Engine) lockCluster(ctx context.Context, s *Session, st *distsql.LockCluster) (*Result, error) {
	state, err := clusterlock.Lock(ctx, e.d.Repo, st.Strategy, e.lockOp(st.TimeoutMillis))
	if err != nil {
		return nil, opError(s, err)
	}
	e.awaitClusterState(ctx, state)
	return &Result{}, nil
}

func (e *Engine) unlockCluster(ctx context.Context, s *Session, st *distsql.UnlockCluster) (*Result, error) {
	if err := clusterlock.Unlock(ctx, e.d.Repo, e.lockOp(st.TimeoutMillis)); err != nil {
		return nil, opError(s, err)
	}
	e.awaitClusterState(ctx, clusterlock.StateOK)
	return &Result{}, nil
}

// lockOp is the clusterlock.Op of a LOCK or UNLOCK CLUSTER with the
// statement's TIMEOUT on this node.
func (e *Engine) lockOp(timeoutMillis int64) clusterlock.Op {
	return clusterlock.Op{Layout: e.layoutNow(e.d.Layout), Timeout: time.Duration(timeoutMillis) * time.Millisecond,
		Standalone: e.d.ModeType == config.ModeStandalone}
}

func (e *Engine) awaitClusterState(ctx context.Context, state string) {
	e.await(ctx, func(s *metadata.Snapshot) bool { return s.ClusterState == state })
}

// awaitTimeout bounds how long a statement that changed the registry
// waits for this node's view to show the change.
const awaitTimeout = 3 * time.Second

// await waits until cond holds for this node's metadata view, at most
// awaitTimeout: the change is in the registry either way, and the view
// follows it.
func (e *Engine) await(ctx context.Context, cond func(*metadata.Snapshot) bool) {
	if e.d.Metadata == nil {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, awaitTimeout)
	defer cancel()
	_, _ = e.d.Metadata.Wait(wctx, cond)
}
