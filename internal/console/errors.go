package console

import (
	"errors"
	"fmt"

	"github.com/shardkeeper/shardkeeper/internal/clusterlock"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// The errors below are built here and nowhere else in the console, with
// the codes ShardingSphere-Proxy's front ends answer them with.

// unknownDatabase is ShardingSphere's UnknownDatabaseException as its
// front ends answer it: MySQL's ER_BAD_DB_ERROR (1049, 42000), PostgreSQL's
// invalid_catalog_name (3D000).
func unknownDatabase(s *Session, name string) *sqlerr.Error {
	if s != nil && s.Protocol == "PostgreSQL" {
		return &sqlerr.Error{Code: 1049, SQLState: "3D000", Message: fmt.Sprintf("database \"%s\" does not exist", name)}
	}
	return &sqlerr.Error{Code: 1049, SQLState: "42000", Message: fmt.Sprintf("Unknown database '%s'", name)}
}

// noDatabaseSelected is ShardingSphere's NoDatabaseSelectedException as
// its front ends answer it: MySQL's ER_NO_DB_ERROR (1046, 3D000).
func noDatabaseSelected() *sqlerr.Error {
	return &sqlerr.Error{Code: 1046, SQLState: "3D000", Message: "No database selected"}
}

// unsupported is ShardingSphere's UnsupportedSQLOperationException
// (30001, 0A000): "Unsupported SQL operation: <what>."
func unsupported(what string) *sqlerr.Error {
	return sqlerr.Unsupported(sqlerr.Invalid, what)
}

// unsupportedVariable is ShardingSphere's UnsupportedVariableException
// (12010, 44000), as distvar builds it.
func unsupportedVariable(name string) error {
	return opError(nil, distvar.UnsupportedVariable(name))
}

// invalidVariableValue is ShardingSphere's InvalidVariableValueException
// (12011, HY004), as distvar builds it.
func invalidVariableValue(value string) error {
	return opError(nil, distvar.InvalidValue(value, nil))
}

// unknownThread is MySQL's ER_NO_SUCH_THREAD (1094, HY000), KILL's
// answer for a process nobody has.
func unknownThread(id string) *sqlerr.Error {
	return &sqlerr.Error{Code: 1094, SQLState: "HY000", Message: fmt.Sprintf("Unknown thread id: %s", id)}
}

// unknownException is what ShardingSphere answers for an exception it has
// no code for (30000, HY000).
func unknownException(err error) *sqlerr.Error {
	return &sqlerr.Error{Code: 30000, SQLState: "HY000", Message: "Unknown exception: " + err.Error()}
}

// opError converts the failures of the packages the console runs
// statements through (dbconfig, distvar, clusterlock, computenode) into
// the client's *sqlerr.Error for session s: a wrapped refusal is the
// refusal itself; other errors pass unchanged.
func opError(s *Session, err error) error {
	var (
		unknown *dbconfig.UnknownDatabaseError
		busy    *clusterlock.BusyError
	)
	refusal, refused := sqlerr.Refusal(err)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &unknown):
		return unknownDatabase(s, unknown.Name)
	case refused:
		return refusal
	case errors.As(err, &busy):
		return unknownException(busy)
	}
	return err
}
