package console

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// SHOW DIST VARIABLES and SHOW DIST VARIABLE.

func (e *Engine) showDistVariables(ctx context.Context, s *Session, st *distsql.ShowDistVariables) (*Result, error) {
	return nil, notYet("SHOW DIST VARIABLES")
}

func (e *Engine) showDistVariable(ctx context.Context, s *Session, st *distsql.ShowDistVariable) (*Result, error) {
	return nil, notYet("SHOW DIST VARIABLE")
}
