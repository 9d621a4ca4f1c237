package console

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// [FORCE] REFRESH DATABASE METADATA.

func (e *Engine) refreshDatabaseMetadata(ctx context.Context, s *Session, st *distsql.RefreshDatabaseMetadata) (*Result, error) {
	return nil, notYet("REFRESH DATABASE METADATA")
}
