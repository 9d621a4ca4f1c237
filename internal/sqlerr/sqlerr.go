// Package sqlerr is the refusal of a cluster operation for which
// ShardingSphere has a vendor code and SQL state (a lock already held, an
// unknown variable, a storage unit in use...). The operations' packages
// return it; the DistSQL console and the HTTP API answer it as upstream's
// front ends answer the same exception.
package sqlerr

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
