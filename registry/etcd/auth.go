package etcd

import (
	"context"
	"errors"
	"sync"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// authenticateMethod is the gRPC method that exchanges a user and password
// for a token.
const authenticateMethod = "/etcdserverpb.Auth/Authenticate"

// tokenAuth keeps the auth token of a client that logs in with a user and
// password, in place of the etcd client's own token handling: that one
// sends the expired token along with the request for a new one, which etcd
// 3.4 refuses ("invalid auth token"), so once a token expired (after
// --auth-token-ttl unused, or when the server restarted and forgot its
// simple tokens) the client would never get a new one.
//
// It asks for a token without sending one, before every new stream (a
// stream keeps the token it was opened with) and when a request is refused
// for a missing, expired or outdated token, which is then sent once more.
// It is safe for concurrent use.
type tokenAuth struct {
	user, password string

	mu    sync.Mutex
	auth  clientv3.Auth // set once the client exists
	token string
}

// dialOptions are the client's gRPC options that carry the token.
func (a *tokenAuth) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithPerRPCCredentials(a),
		grpc.WithChainUnaryInterceptor(a.unary),
		grpc.WithChainStreamInterceptor(a.stream),
	}
}

// setClient gives a the client it asks for tokens through.
func (a *tokenAuth) setClient(c *clientv3.Client) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.auth = c.Auth
}

// GetRequestMetadata implements credentials.PerRPCCredentials: the current
// token, on every request but Authenticate.
func (a *tokenAuth) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	if ri, ok := credentials.RequestInfoFromContext(ctx); ok && ri.Method == authenticateMethod {
		return nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.token == "" {
		return nil, nil
	}
	return map[string]string{rpctypes.TokenFieldNameGRPC: a.token}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials: tokens
// go over plain connections too, as with the etcd client.
func (a *tokenAuth) RequireTransportSecurity() bool { return false }

// refresh asks the server for a new token.
func (a *tokenAuth) refresh(ctx context.Context) error {
	a.mu.Lock()
	auth := a.auth
	a.mu.Unlock()
	if auth == nil {
		return errors.New("etcd: no client to authenticate with")
	}
	resp, err := auth.Authenticate(ctx, a.user, a.password)
	token := ""
	switch {
	case err == nil:
		token = resp.Token
	case errors.Is(rpctypes.Error(err), rpctypes.ErrAuthNotEnabled):
	default:
		return err
	}
	a.mu.Lock()
	a.token = token
	a.mu.Unlock()
	return nil
}

func (a *tokenAuth) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if method == authenticateMethod || !needsToken(err) {
		return err
	}
	if err := a.refresh(ctx); err != nil {
		return err
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (a *tokenAuth) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if err := a.refresh(ctx); err != nil {
		return nil, err
	}
	return streamer(ctx, desc, cc, method, opts...)
}

// needsToken reports whether err refuses a request for its token: none,
// expired, or issued before a change of users or roles.
func needsToken(err error) bool {
	if err == nil {
		return false
	}
	err = rpctypes.Error(err)
	return errors.Is(err, rpctypes.ErrInvalidAuthToken) || errors.Is(err, rpctypes.ErrAuthOldRevision) || errors.Is(err, rpctypes.ErrUserEmpty)
}
