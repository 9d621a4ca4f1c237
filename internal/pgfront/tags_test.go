package pgfront

import (
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/console"
)

// CREATE DATABASE and DROP DATABASE complete with PostgreSQL's tags, with
// no row count; other statements keep their first word and count.
func TestCommandTags(t *testing.T) {
	one := &console.Result{Affected: 1}
	for q, want := range map[string]string{
		"CREATE DATABASE d":                   "CREATE DATABASE",
		"  /* c */ drop database if exists d": "DROP DATABASE",
		"create schema s":                     "CREATE SCHEMA",
		"CREATE SHARDING TABLE RULE t (x)":    "CREATE 1",
		"REGISTER STORAGE UNIT ds_0 ()":       "REGISTER 1",
		"SHOW THINGS":                         "SHOW 1",
	} {
		if got := commandTag(q, one); got != want {
			t.Errorf("%q: tag %q, want %q", q, got, want)
		}
	}
}
