package console

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// LOCK CLUSTER and UNLOCK CLUSTER.

func (e *Engine) lockCluster(ctx context.Context, s *Session, st *distsql.LockCluster) (*Result, error) {
	return nil, notYet("LOCK CLUSTER")
}

func (e *Engine) unlockCluster(ctx context.Context, s *Session, st *distsql.UnlockCluster) (*Result, error) {
	return nil, notYet("UNLOCK CLUSTER")
}
