package dbconfig

import (
	"errors"
	"testing"

	"github.com/shardkeeper/shardkeeper/registry"
)

// TestTornRead: a listing whose every active_version names a version it
// holds is whole; one naming a version it lacks (replaced between the
// listing's steps) is torn, as ErrBadVersion; a value that is no number
// is left to the decoder.
func TestTornRead(t *testing.T) {
	node := "/metadata/db/rules/sharding/tables/t"
	whole := []registry.KV{
		{Key: "/metadata/db/rules/sharding/tables/a/active_version", Value: []byte("0")},
		{Key: "/metadata/db/rules/sharding/tables/a/versions/0", Value: []byte("x")},
		{Key: node + "/active_version", Value: []byte("1")},
		{Key: node + "/versions/1", Value: []byte("y")},
		{Key: "/metadata/db/rules/sharding/tables/u/active_version", Value: []byte("not a number")},
	}
	if err := TornRead(whole); err != nil {
		t.Fatalf("a whole listing: %v", err)
	}
	torn := append([]registry.KV(nil), whole[:3]...) // t's versions/1 not listed
	torn = append(torn, registry.KV{Key: node + "/versions/0", Value: []byte("old")})
	if err := TornRead(torn); !errors.Is(err, registry.ErrBadVersion) {
		t.Fatalf("a torn listing: %v, want ErrBadVersion", err)
	}
}
