// Package sqlerr is the refusal of a cluster operation for which
// ShardingSphere has a vendor code and SQL state (a lock already held, an
// unknown variable, a storage unit in use...). The operations' packages
// return it; the DistSQL console and the HTTP API answer it as upstream's
// front ends answer the same exception.
package sqlerr

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
)

// Error is one refusal. Message is what the client sees.
type Error struct {
	// Code is the MySQL-protocol vendor code (e.g. 15030).
	Code uint16
	// SQLState is the five-character SQL state (e.g. "HY000").
	SQLState string
	Message  string
	// Err is the cause, for logs; it may be nil.
	Err error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// ErrPanicked is the cause (Err) of the error Recover makes of a panic.
var ErrPanicked = errors.New("panicked")

// InternalCode is ShardingSphere's code for an exception it has no code
// for (30000, state HY000): "Unknown exception: ...".
const InternalCode = 30000

// Recover, deferred directly in the function that runs an operation
// (defer sqlerr.Recover(log, "statement", &err)), turns a panic of that
// goroutine into the operation's error: *err becomes an *Error with
// InternalCode, state HY000 and the panic's value, and log gets the value
// with the goroutine's stack, at level ERROR. The goroutine, and the
// process, go on. Without a panic it does nothing.
func Recover(log *slog.Logger, op string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	log.Error(op+" panicked; it failed with an internal error and the node goes on", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	*err = &Error{Code: InternalCode, SQLState: "HY000", Message: fmt.Sprintf("Unknown exception: internal error in the %s: %v", op, r), Err: ErrPanicked}
}
