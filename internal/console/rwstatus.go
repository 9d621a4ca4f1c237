package console

import (
	"cmp"
	"context"
	"errors"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
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
		var ce *metadata.CheckError
		if errors.As(err, &ce) {
			state := "44000"
			switch ce.Code {
			case metadata.CodeMissingRule:
				state = "42S02"
			case metadata.CodeUnsupportedOperation:
				state = "0A000"
			}
			return nil, &sqlerr.Error{Code: uint16(ce.Code), SQLState: state, Message: ce.Message}
		}
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
