package console

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// [FORCE] REFRESH DATABASE METADATA [db] (internal/dbconfig.Refresh): the
// real schemas of the units, written where the registry's copy differs
// (every table with FORCE). The result's affected rows are the tables and
// views written and deleted.

func (e *Engine) refreshDatabaseMetadata(ctx context.Context, s *Session, st *distsql.RefreshDatabaseMetadata) (*Result, error) {
	out, err := dbconfig.Refresh(ctx, e.d.Repo, e.layoutNow(e.d.Mode.Repository.Layout), e.d.Metadata.Current(), st.Database, st.Force, e.d.Introspect)
	if err != nil {
		return nil, opError(s, err)
	}
	var n uint64
	for _, r := range out {
		n += uint64(r.Written + r.Dropped)
	}
	return &Result{Affected: n}, nil
}
