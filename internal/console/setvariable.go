package console

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
)

// SET DIST VARIABLE: the property is merged into /props, and the statement
// returns once every online shardkeeper node applied it, or after
// Deps.SetVariableTimeout with the nodes that did not named in warnings
// (see internal/distvar and docs/distsql.md).

func (e *Engine) setDistVariable(ctx context.Context, s *Session, st *distsql.SetDistVariable) (*Result, error) {
	if st.Value.Kind == distsql.NullValue {
		return nil, invalidVariableValue(st.Value.Text)
	}
	out, err := distvar.Set(ctx, e.d.Repo, st.Name, st.Value.Text, distvar.Options{Timeout: e.d.SetVariableTimeout})
	if err != nil {
		return nil, opError(s, err)
	}
	return &Result{Warnings: out.Warnings()}, nil
}
