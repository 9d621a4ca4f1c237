package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/shardkeeper/shardkeeper/registry"
)

// convertError maps an error of the ZooKeeper client onto the registry
// sentinels and wraps it in a *registry.OpError for op and key (the key as the
// caller gave it, without namespace). Every client call goes through it. The
// client's own error stays in the chain, so errors.Is works for both.
func convertError(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var already *registry.OpError
	if errors.As(err, &already) {
		return err
	}
	var mapped error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		mapped = err
	case errors.Is(err, zk.ErrNoNode):
		mapped = fmt.Errorf("%w: %w", registry.ErrNotFound, err)
	case errors.Is(err, zk.ErrNodeExists):
		mapped = fmt.Errorf("%w: %w", registry.ErrExists, err)
	case errors.Is(err, zk.ErrBadVersion):
		mapped = fmt.Errorf("%w: %w", registry.ErrBadVersion, err)
	case errors.Is(err, zk.ErrSessionExpired):
		mapped = fmt.Errorf("%w: %w", registry.ErrSessionExpired, err)
	case errors.Is(err, zk.ErrNoAuth):
		mapped = fmt.Errorf("permission denied by the znode's ACL: the node was created by another "+
			"user; set Digest (user:password) to the credentials it was created with: %w", err)
	case errors.Is(err, zk.ErrAuthFailed):
		mapped = fmt.Errorf("ZooKeeper rejected the credentials: check Digest (user:password) "+
			"and the server's authProvider settings: %w", err)
	case errors.Is(err, zk.ErrNotEmpty):
		mapped = fmt.Errorf("the znode has children (only a leaf can be replaced this way): %w", err)
	case errors.Is(err, zk.ErrNoChildrenForEphemerals):
		mapped = fmt.Errorf("an ephemeral key cannot have children (write persistent keys elsewhere): %w", err)
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer),
		errors.Is(err, zk.ErrClosing), errors.Is(err, zk.ErrSessionMoved):
		mapped = fmt.Errorf("%w: %w (the operation's outcome is unknown; retry once the connection is back)",
			registry.ErrUnavailable, err)
	case errors.Is(err, registry.ErrClosed), errors.Is(err, registry.ErrBadKey),
		errors.Is(err, registry.ErrLocked), errors.Is(err, registry.ErrLockNotHeld),
		errors.Is(err, registry.ErrUnavailable), errors.Is(err, registry.ErrExists),
		errors.Is(err, registry.ErrNotFound), errors.Is(err, registry.ErrBadVersion),
		errors.Is(err, registry.ErrWatchLost):
		mapped = err
	default:
		mapped = fmt.Errorf("zookeeper: %w", err)
	}
	return &registry.OpError{Op: op, Key: key, Err: mapped}
}
