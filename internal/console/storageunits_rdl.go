package console

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// REGISTER, ALTER and UNREGISTER STORAGE UNIT.

func (e *Engine) registerStorageUnit(ctx context.Context, s *Session, st *distsql.RegisterStorageUnit) (*Result, error) {
	return nil, notYet("REGISTER STORAGE UNIT")
}

func (e *Engine) alterStorageUnit(ctx context.Context, s *Session, st *distsql.AlterStorageUnit) (*Result, error) {
	return nil, notYet("ALTER STORAGE UNIT")
}

func (e *Engine) unregisterStorageUnit(ctx context.Context, s *Session, st *distsql.UnregisterStorageUnit) (*Result, error) {
	return nil, notYet("UNREGISTER STORAGE UNIT")
}
