package console

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// SHOW PROCESSLIST and KILL across the cluster.

func (e *Engine) showProcesslist(ctx context.Context, s *Session, st *distsql.ShowProcesslist) (*Result, error) {
	return nil, notYet("SHOW PROCESSLIST")
}

func (e *Engine) kill(ctx context.Context, s *Session, st *distsql.Kill) (*Result, error) {
	return nil, notYet("KILL")
}
