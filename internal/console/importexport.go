package console

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// EXPORT / IMPORT DATABASE CONFIGURATION and EXPORT / IMPORT METADATA.

func (e *Engine) exportDatabaseConfiguration(ctx context.Context, s *Session, st *distsql.ExportDatabaseConfiguration) (*Result, error) {
	return nil, notYet("EXPORT DATABASE CONFIGURATION")
}

func (e *Engine) importDatabaseConfiguration(ctx context.Context, s *Session, st *distsql.ImportDatabaseConfiguration) (*Result, error) {
	return nil, notYet("IMPORT DATABASE CONFIGURATION")
}

func (e *Engine) exportMetadata(ctx context.Context, s *Session, st *distsql.ExportMetadata) (*Result, error) {
	return nil, notYet("EXPORT METADATA")
}

func (e *Engine) importMetadata(ctx context.Context, s *Session, st *distsql.ImportMetadata) (*Result, error) {
	return nil, notYet("IMPORT METADATA")
}
