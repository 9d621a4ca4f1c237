package console

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// SHOW SHARDING TABLE RULES, ALGORITHMS and KEY GENERATORS.

func (e *Engine) showShardingTableRules(ctx context.Context, s *Session, st *distsql.ShowShardingTableRules) (*Result, error) {
	return nil, notYet("SHOW SHARDING TABLE RULES")
}

func (e *Engine) showShardingAlgorithms(ctx context.Context, s *Session, st *distsql.ShowShardingAlgorithms) (*Result, error) {
	return nil, notYet("SHOW SHARDING ALGORITHMS")
}

func (e *Engine) showShardingKeyGenerators(ctx context.Context, s *Session, st *distsql.ShowShardingKeyGenerators) (*Result, error) {
	return nil, notYet("SHOW SHARDING KEY GENERATORS")
}
