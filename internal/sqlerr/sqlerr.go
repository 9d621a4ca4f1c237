// Package sqlerr is the one coded refusal of the project: ShardingSphere's
// {vendor code, SQL state, message} for an operation it refuses (a lock
// already held, an unknown variable, a storage unit in use, every worker
// id taken...), and the same triple for the refusals of the consoles' own
// protocols and of the HTTP API. Every package that refuses an operation
// returns an *Error; each front end maps it to its own form in one place:
// the MySQL console as an error packet (Code, SQLState), the PostgreSQL
// console as an ErrorResponse (SQLState, Message, Position), the HTTP API
// as a status from Kind and a {"error", "code"} body, the CLI as
// "message (code N)" and exit code 1.
package sqlerr

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/shardkeeper/shardkeeper/registry"
)

// Error is one refusal. Message is what the client sees.
type Error struct {
	// Code is the MySQL-protocol vendor code (e.g. 15030); 0 when the
	// refusal has none (the HTTP API then answers code 0).
	Code uint16
	// SQLState is the five-character SQL state (e.g. "HY000"), used by
	// both consoles; "" when it has none (the consoles answer HY000).
	SQLState string
	Message  string
	// Kind says what kind of refusal it is, for a front end that answers
	// with a class rather than a SQL state (the HTTP API's status). The
	// zero value is Invalid.
	Kind Kind
	// Position is the 1-based character position in the statement text
	// where a syntax error was found; 0 when the error has none. The
	// PostgreSQL console sends it as the error's position field, which
	// psql shows as a caret under the statement.
	Position int
	// Err is the cause, for logs and errors.Is; it may be nil.
	Err error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with a nonzero Code and the same
// Code and SQLState as e: every refusal with a sentinel's code matches
// the sentinel (errors.Is(err, clusterlock.ErrLocked)), whoever built it.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code != 0 && t.Code == e.Code && t.SQLState == e.SQLState
}

// Kind is the class of a refusal.
type Kind uint8

// The kinds of refusal. The HTTP API answers them with the status named
// in each comment (HTTPStatus), and the CLI reads an API answer's status
// back into its kind (KindOfHTTPStatus).
const (
	// Invalid is a request refused by a check: bad input, or a change
	// the rules forbid (400).
	Invalid Kind = iota
	// NotFound is a request naming something that does not exist (404).
	NotFound
	// Conflict is a request the cluster's current state refuses (a lock
	// held, a change lost to concurrent ones); it may succeed later (409).
	Conflict
	// Unauthenticated is a request without valid credentials (401).
	Unauthenticated
	// Denied is a request whose credentials do not allow it (403).
	Denied
	// Unavailable is a request the node cannot serve now (503).
	Unavailable
	// Internal is a failure of the node itself, a panic (500).
	Internal
)

// HTTPStatus is the HTTP API's status for a refusal of kind k: the one
// mapping of the kinds onto HTTP, which the API answers with.
func (k Kind) HTTPStatus() int {
	switch k {
	case NotFound:
		return http.StatusNotFound
	case Conflict:
		return http.StatusConflict
	case Unauthenticated:
		return http.StatusUnauthorized
	case Denied:
		return http.StatusForbidden
	case Unavailable:
		return http.StatusServiceUnavailable
	case Internal:
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// KindOfHTTPStatus is the kind of a refusal the HTTP API answered with
// status, HTTPStatus read backwards; Invalid for a status no kind has.
func KindOfHTTPStatus(status int) Kind {
	for k := NotFound; k <= Internal; k++ {
		if k.HTTPStatus() == status {
			return k
		}
	}
	return Invalid
}

// UnsupportedCode is the vendor code of ShardingSphere's
// UnsupportedSQLOperationException (SQL state 0A000).
const UnsupportedCode = 30001

// Unsupported is ShardingSphere's UnsupportedSQLOperationException, of
// kind k: code 30001, state 0A000, "Unsupported SQL operation: <reason>.".
func Unsupported(k Kind, reason string) *Error {
	return &Error{Code: UnsupportedCode, SQLState: "0A000", Kind: k, Message: "Unsupported SQL operation: " + reason + "."}
}

// ErrPanicked is the cause (Err) of the error Recover makes of a panic.
var ErrPanicked = errors.New("panicked")

// InternalCode is ShardingSphere's code for an exception it has no code
// for (30000, state HY000): "Unknown exception: ...".
const InternalCode = 30000

// Recover, deferred directly in the function that runs an operation
// (defer sqlerr.Recover(log, "statement", &err)), turns a panic of that
// goroutine into the operation's error: *err becomes an *Error with
// InternalCode, state HY000, kind Internal and the panic's value, and log gets the value
// with the goroutine's stack, at level ERROR. The goroutine, and the
// process, go on. Without a panic it does nothing.
func Recover(log *slog.Logger, op string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	log.Error(op+" panicked; it failed with an internal error and the node goes on", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	*err = &Error{Code: InternalCode, SQLState: "HY000", Kind: Internal, Message: fmt.Sprintf("Unknown exception: internal error in the %s: %v", op, r), Err: ErrPanicked}
}

// Refusal returns the refusal err is or wraps, ok false when there is
// none. A write the registry refused before sending it, for passing its
// request limit (registry.ErrTooLarge, from any statement: SET DIST
// VARIABLE, storage units, rules, IMPORT), is one: Unsupported (30001,
// 0A000, kind Invalid), the message naming the sizes, the limit and that
// nothing was written.
func Refusal(err error) (e *Error, ok bool) {
	if errors.As(err, &e) {
		return e, true
	}
	if errors.Is(err, registry.ErrTooLarge) {
		e = Unsupported(Invalid, err.Error()+": make the value smaller; the registry's limit is its server's (etcd --max-request-bytes, ZooKeeper jute.maxbuffer), named to the node by the repository prop maxRequestBytes")
		e.Err = err
		return e, true
	}
	return nil, false
}
