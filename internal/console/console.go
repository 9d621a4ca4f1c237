// Package console executes the DistSQL statements an operator types into a
// MySQL or PostgreSQL client connected to a shardkeeper node: SHOW COMPUTE
// NODES, SET DIST VARIABLE, SHOW PROCESSLIST and the rest (see
// docs/distsql.md). The wire front ends (internal/mysqlfront,
// internal/pgfront) authenticate a client, then hand every statement to an
// Executor and write its Result or Error back in their protocol.
package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"maps"

	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// Session is one client connection, as the front end that accepted it
// describes it. A front end creates it after authentication and passes the
// same pointer with every statement of the connection; the Executor may
// change Database (USE).
type Session struct {
	// ID is the process id SHOW PROCESSLIST shows and KILL takes:
	// NewSessionID's, unique across the cluster as upstream's are.
	ID string
	// User is the authenticated user name; Host the client's address
	// (host only, no port).
	User string
	Host string
	// Database is the current logical database ("" when none).
	Database string
	// Protocol is "MySQL" or "PostgreSQL".
	Protocol string
	// Variables are the session variables the client SET (names lower
	// case; user variables with their leading @). Only the Executor
	// reads and writes it, one statement at a time; nil until the first
	// SET.
	Variables map[string]string
}

// ColumnType is how a front end declares a result column to its client.
// Values are always sent as text.
type ColumnType int

const (
	// Text is a character column (VARCHAR / text).
	Text ColumnType = iota
	// Int64 is a BIGINT column: its values are decimal integers.
	Int64
)

// Column is one result column.
type Column struct {
	Name string
	Type ColumnType
}

// Result is what a statement returns: a result set when Columns is not
// empty, otherwise an OK with Affected rows. A nil *string in a row is
// SQL NULL. Results may share their Columns and Rows with other results
// (cached views): a front end reads them and never modifies them.
type Result struct {
	Columns  []Column
	Rows     [][]*string
	Affected uint64
	// Warnings are shown to the client after the result (MySQL
	// warnings, PostgreSQL notices); a statement that completed but could
	// not reach every node names the nodes here.
	Warnings []string
	// Shared reports that Columns and Rows are shared by every statement
	// that returns them and never modified (SHOW COMPUTE NODES' rows of
	// one membership view): a front end may keep their encoding, keyed by
	// the identity of the Rows slice, for as long as it keeps that slice.
	Shared bool
}

// Executor runs one statement of a session. It must be safe for
// concurrent use by many sessions; ctx is cancelled when the session is
// killed or the node shuts down. Executors return an *sqlerr.Error, with
// ShardingSphere's vendor code and SQL state where upstream has one, for
// every failure a client caused or should see; any other error is
// reported as an internal error (code 30000, state HY000), with its text.
type Executor interface {
	Execute(ctx context.Context, s *Session, query string) (*Result, error)
}

// NewSessionID returns a process id as ShardingSphere makes them: a random
// UUID's 32 hex digits without dashes.
func NewSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}

// ExecuteCancellable runs query on e for s and returns once the statement
// is done or ctx ends, whichever comes first, so that KILL, a cancel
// request and shutdown always end a statement at once. A statement stuck
// in I/O that ignores ctx (a read of a FIFO) then goes on in the
// background and its outcome is dropped: it runs on a copy of s, which is
// copied back only when it returns in time. The error is ctx's when the
// statement was left behind. A panic in the statement is its error, an
// internal error (30000) logged to log with its stack: the session and
// the node go on.
func ExecuteCancellable(ctx context.Context, log *slog.Logger, e Executor, s *Session, query string) (*Result, error) {
	type outcome struct {
		res *Result
		err error
		s   Session
	}
	cs := *s
	cs.Variables = maps.Clone(s.Variables)
	done := make(chan outcome, 1)
	go func() {
		res, err := execute(ctx, log, e, &cs, query)
		done <- outcome{res, err, cs}
	}()
	select {
	case o := <-done:
		*s = o.s
		return o.res, o.err
	case <-ctx.Done():
		select {
		case o := <-done: // it ended with ctx: keep its answer
			*s = o.s
			return o.res, o.err
		default:
			return nil, ctx.Err()
		}
	}
}

// execute runs query on e for s, a panic its error (sqlerr.Recover).
func execute(ctx context.Context, log *slog.Logger, e Executor, s *Session, query string) (res *Result, err error) {
	defer func() { err = opError(s, err) }() // a wrapped refusal, a panic's included, as the client's *sqlerr.Error
	defer sqlerr.Recover(log, "statement", &err)
	return e.Execute(ctx, s, query)
}
