package registry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

func TestFollowStopsWhenTheRepositoryCloses(t *testing.T) {
	r := memory.New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	started := make(chan struct{}, 1)
	go func() {
		done <- registry.Follow(ctx, r, "/x", func(registry.Event) {
			select {
			case started <- struct{}{}:
			default:
			}
		})
	}()
	if _, err := r.Put(ctx, "/x/a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	<-started
	r.Close()
	select {
	case err := <-done:
		if !errors.Is(err, registry.ErrClosed) {
			t.Fatalf("Follow = %v, want ErrClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("Follow kept going after the repository closed")
	}
}

func TestValidateKey(t *testing.T) {
	for _, k := range []string{"/", "/a", "/a/b-c_d.e", "/nodes/compute_nodes/online/proxy/8c7b2a3e-5d1f"} {
		if err := registry.ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v", k, err)
		}
	}
	for _, k := range []string{"", "a", "/a/", "//a", "/a/../b", "/.", "/a\x00", "/a\tb"} {
		if err := registry.ValidateKey(k); !errors.Is(err, registry.ErrBadKey) {
			t.Errorf("ValidateKey(%q) = %v, want ErrBadKey", k, err)
		}
	}
	if !registry.IsUnder("/a/db1/x", "/a/db1") || registry.IsUnder("/a/db10", "/a/db1") || !registry.IsUnder("/a", "/") {
		t.Error("IsUnder must treat the prefix as a whole path")
	}
}
