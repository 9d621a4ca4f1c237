package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardkeeper/shardkeeper/registry"
)

// convertError maps an error of the etcd client onto the registry's errors,
// wrapped in an *registry.OpError. Every client call goes through it. ctx is
// the caller's context (not the one bounded by RequestTimeout), so a request
// that timed out while the caller still waits is reported as an unavailable
// registry, and one whose caller gave up as the caller's context error.
//
//   - context.Canceled / DeadlineExceeded of the caller pass through.
//   - A request timeout, gRPC Unavailable, no leader and similar: ErrUnavailable,
//     naming the endpoints.
//   - Compaction: ErrWatchLost. Lease not found: ErrSessionExpired.
//   - A closed client: ErrClosed.
//   - Anything else is wrapped as it is (auth errors keep rpctypes' values).
func (r *Repo) convertError(ctx context.Context, op, key string, err error) error {
	if err == nil {
		return nil
	}
	var oe *registry.OpError
	if errors.As(err, &oe) {
		return err
	}
	wrap := func(e error) error { return &registry.OpError{Op: op, Key: key, Err: e} }
	if ctx != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || isCtxStatus(err)) {
		return wrap(ctx.Err())
	}
	if r.isClosed() {
		return wrap(registry.ErrClosed)
	}
	err = rpctypes.Error(err)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded:
		return wrap(fmt.Errorf("%w: no answer from etcd at %v within the request timeout (%v): %w",
			registry.ErrUnavailable, r.endpoints, r.requestTimeout, context.DeadlineExceeded))
	case errors.Is(err, context.Canceled):
		return wrap(err)
	case errors.Is(err, rpctypes.ErrCompacted):
		return wrap(fmt.Errorf("%w: %v", registry.ErrWatchLost, err))
	case errors.Is(err, rpctypes.ErrLeaseNotFound), errors.Is(err, concurrency.ErrSessionExpired):
		return wrap(fmt.Errorf("%w: %v", registry.ErrSessionExpired, err))
	case errors.Is(err, rpctypes.ErrNoLeader), errors.Is(err, rpctypes.ErrTimeout),
		errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail), errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost),
		errors.Is(err, rpctypes.ErrLeaderChanged), errors.Is(err, rpctypes.ErrNotCapable),
		errors.Is(err, rpctypes.ErrStopped), status.Code(err) == codes.Unavailable:
		return wrap(fmt.Errorf("%w: etcd at %v: %v", registry.ErrUnavailable, r.endpoints, err))
	case errors.Is(err, rpctypes.ErrTooManyOps):
		return wrap(fmt.Errorf("%w: %v (etcd's --max-txn-ops, 128 by default); nothing was written", registry.ErrTooLarge, err))
	case isAuthError(err):
		return wrap(fmt.Errorf("etcd at %v refused the request (check the username, password and the user's role on namespace %q): %w", r.endpoints, r.ns, err))
	}
	return wrap(err)
}

func isCtxStatus(err error) bool {
	c := status.Code(err)
	return c == codes.Canceled || c == codes.DeadlineExceeded
}

func isAuthError(err error) bool {
	err = rpctypes.Error(err)
	for _, e := range []error{
		rpctypes.ErrAuthFailed, rpctypes.ErrAuthNotEnabled, rpctypes.ErrInvalidAuthToken,
		rpctypes.ErrPermissionDenied, rpctypes.ErrUserEmpty, rpctypes.ErrAuthOldRevision,
		rpctypes.ErrInvalidAuthMgmt,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	c := status.Code(err)
	return c == codes.Unauthenticated || c == codes.PermissionDenied
}
