package console

import (
	"context"
	"fmt"
	"strings"

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
	res := &Result{Warnings: out.Warnings}
	if len(out.Pending) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s = %s is in the registry (/props version %d), but %d node(s) did not confirm applying it in time: %s",
			out.Key, out.Value, out.Version, len(out.Pending), strings.Join(out.Pending, ", ")))
	}
	if len(out.Unacknowledging) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d node(s) apply %s without acknowledging (ShardingSphere nodes, or shardkeeper nodes still starting): %s",
			len(out.Unacknowledging), out.Key, strings.Join(out.Unacknowledging, ", ")))
	}
	return res, nil
}
