package console

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// SHOW STORAGE UNITS.

func (e *Engine) showStorageUnits(ctx context.Context, s *Session, st *distsql.ShowStorageUnits) (*Result, error) {
	return nil, notYet("SHOW STORAGE UNITS")
}
