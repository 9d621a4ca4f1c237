package console

import (
	"cmp"
	"context"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
)

// alterReadwriteStatus is ALTER READWRITE_SPLITTING RULE g ENABLE|DISABLE
// unit [FROM db]: upstream's checks (metadata.CheckDataSourceState), then
// the state written where ShardingSphere keeps it, as the HTTP API's and
// the CLI's state change does; it waits up to 3 s for this node to see it.
func (e *Engine) alterReadwriteStatus(ctx context.Context, s *Session, st *distsql.AlterReadwriteSplittingStatus) (*Result, error) {
	d, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	q, err := metadata.CheckDataSourceState(e.d.Metadata.Current(), d.Name, st.Group, st.Unit, st.Enable)
	if err != nil {
		return nil, err
	}
	state := metadata.StateDisabled
	if st.Enable {
		state = metadata.StateEnabled
	}
	if err := metadata.SetDataSourceState(ctx, e.d.Repo, q, state); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, _ = e.d.Metadata.Wait(wctx, func(snap *metadata.Snapshot) bool {
		return cmp.Or(snap.DataSourceStates[q], metadata.StateEnabled) == state
	})
	return &Result{}, nil
}
