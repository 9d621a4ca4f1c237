package cluster

import (
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/workerid"
)

// ErrExhausted matches, with errors.Is, the *ExhaustedError that Open
// returns when all 1024 worker ids are taken.
var ErrExhausted error = workerid.ErrExhausted

// ExhaustedError is the type of the error Open returns when every worker
// id is taken: the project's one coded refusal ({Code, SQLState,
// Message}), here ShardingSphere's WorkerIdAssignedException with its
// vendor code 17001, SQL state HY000 and message ("Worker ID assigned
// failed, which should be in [0, 1024)."). It is the type the consoles and
// the HTTP API answer every coded refusal with, so a node's front ends
// show it as ShardingSphere does. errors.Is(err, ErrExhausted) matches it,
// wrapped or not; errors.As with an *ExhaustedError matches it too (and
// any other coded refusal, of which Open returns none).
type ExhaustedError = sqlerr.Error

// exhausted is a fresh copy of ErrExhausted, so that a caller that changes
// the error it got changes no one else's.
func exhausted() *ExhaustedError {
	e := *workerid.ErrExhausted
	return &e
}
