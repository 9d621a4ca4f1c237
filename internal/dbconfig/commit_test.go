package dbconfig

import (
	"errors"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
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
	if err := TornRead(metadata.NewRuleKeys(whole)); err != nil {
		t.Fatalf("a whole listing: %v", err)
	}
	torn := append([]registry.KV(nil), whole[:3]...) // t's versions/1 not listed
	torn = append(torn, registry.KV{Key: node + "/versions/0", Value: []byte("old")})
	if err := TornRead(metadata.NewRuleKeys(torn)); !errors.Is(err, registry.ErrBadVersion) {
		t.Fatalf("a torn listing: %v, want ErrBadVersion", err)
	}
	// The same, with the keys brought forward by changes (an overlay).
	moved := metadata.NewRuleKeys(whole).With(nil, []registry.KV{{Key: node + "/active_version", Value: []byte("2")}, {Key: node + "/versions/2", Value: []byte("z")}})
	if err := TornRead(moved); err != nil {
		t.Fatalf("a whole listing brought forward: %v", err)
	}
	if err := TornRead(moved.With([]string{node + "/versions/2"}, nil)); !errors.Is(err, registry.ErrBadVersion) {
		t.Fatalf("a torn listing brought forward: %v, want ErrBadVersion", err)
	}
}
