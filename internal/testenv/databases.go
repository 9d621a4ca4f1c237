package testenv

import (
	"os"
	"strings"
	"testing"
)

// Environment variables naming the real PostgreSQL and MySQL/MariaDB
// servers for data source tests, as URLs. Unset, they default to the
// servers on this machine.
const (
	EnvPostgres = "SHARDKEEPER_PG_DSN"    // e.g. postgres://postgres@127.0.0.1:5432/test
	EnvMySQL    = "SHARDKEEPER_MYSQL_DSN" // e.g. mysql://root@127.0.0.1:3306/test
)

// Defaults for EnvPostgres and EnvMySQL.
const (
	DefaultPostgres = "postgres://postgres@127.0.0.1:5432/test"
	DefaultMySQL    = "mysql://root@127.0.0.1:3306/test"
)

// PostgresURL returns the URL of the PostgreSQL server for tests.
func PostgresURL() string { return envOr(EnvPostgres, DefaultPostgres) }

// MySQLURL returns the URL of the MySQL or MariaDB server for tests.
func MySQLURL() string { return envOr(EnvMySQL, DefaultMySQL) }

// DatabaseUnreachable ends a test whose database server cannot be reached:
// it fails under SHARDKEEPER_REQUIRE_SERVERS=1 and skips otherwise.
func DatabaseUnreachable(t testing.TB, what string, err error) {
	t.Helper()
	msg := what + " unreachable (" + err.Error() + "): start it or set " + EnvPostgres + " / " + EnvMySQL
	if os.Getenv(EnvRequireServers) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func envOr(env, def string) string {
	if v := strings.TrimSpace(os.Getenv(env)); v != "" {
		return v
	}
	return def
}
