package metadata

import (
	"context"
	"fmt"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// SetProps merges changes into the registry's props and persists the result
// as a new /props version. Values are checked against the known property
// types first. Every other key is written back as read, with its YAML type
// (an unknown "foo: 3" stays an int, a list stays a list). A concurrent
// SetProps is never lost: the write is a compare-and-set on
// active_version, retried on conflict.
func SetProps(ctx context.Context, repo registry.Repository, changes map[string]string) error {
	_, err := MergeProps(ctx, repo, changes)
	return err
}

// MergeProps is SetProps that also returns the /props version it wrote,
// which nodes that apply it report (see Snapshot.PropsVersion). When the
// new version is active but older versions could not be deleted, it
// returns that version and a *CleanupError: the change is made.
func MergeProps(ctx context.Context, repo registry.Repository, changes map[string]string) (version int, err error) {
	for k, v := range changes {
		if _, err := config.CheckProp(k, v); err != nil {
			return 0, fmt.Errorf("props.%s: %w", k, err)
		}
	}
	return casVersioned(ctx, repo, paths.PropsRoot, func(old []byte) ([]byte, error) {
		if old != nil {
			if _, err := decodeProps(old); err != nil {
				return nil, fmt.Errorf("current /props: %w", err)
			}
		}
		return mergeProps(old, changes)
	})
}
