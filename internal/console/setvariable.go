package console

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// SET DIST VARIABLE.

func (e *Engine) setDistVariable(ctx context.Context, s *Session, st *distsql.SetDistVariable) (*Result, error) {
	return nil, notYet("SET DIST VARIABLE")
}
