package cluster

import "github.com/shardkeeper/shardkeeper/internal/workerid"

// ErrExhausted matches, with errors.Is, the *ExhaustedError that Open
// returns when all 1024 worker ids are taken.
var ErrExhausted error = newExhausted()

// ExhaustedError is the error Open returns when every worker id is taken:
// ShardingSphere's WorkerIdAssignedException, with its vendor code, SQL
// state and message ("Worker ID assigned failed, which should be in
// [0, 1024)."). Every *ExhaustedError matches ErrExhausted with errors.Is.
type ExhaustedError struct {
	Code     int    // ShardingSphere's vendor code: 17001
	SQLState string // HY000
	Message  string
}

func newExhausted() *ExhaustedError {
	e := workerid.ErrExhausted
	return &ExhaustedError{Code: e.Code, SQLState: e.SQLState, Message: e.Message}
}

func (e *ExhaustedError) Error() string { return e.Message }

// Is reports whether target is an *ExhaustedError, ErrExhausted included.
func (e *ExhaustedError) Is(target error) bool {
	_, ok := target.(*ExhaustedError)
	return ok
}
