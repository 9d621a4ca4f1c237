package console

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

// The sharding, broadcast, mask and encrypt rule statements (RDL) run through
// internal/rules, as the HTTP API and the CLI run them: the change is
// checked, written in one registry transaction, and the statement returns
// once every online shardkeeper node applied it, or after
// Deps.SetVariableTimeout with the nodes that did not named in warnings.

func (e *Engine) applyRule(ctx context.Context, s *Session, st distsql.Statement) (*Result, error) {
	db, err := sessionDatabase(s)
	if err != nil {
		return nil, err
	}
	out, err := rules.Apply(ctx, e.d.Repo, db, st, e.ruleOptions())
	if err != nil {
		return nil, opError(s, err)
	}
	e.awaitRules(ctx, db, out)
	return &Result{Warnings: out.Warnings(db)}, nil
}
