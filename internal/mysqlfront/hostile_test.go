package mysqlfront

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// pipeNet registers a go-sql-driver network under name whose connections
// are sessions of s over net.Pipe, seen as coming from the address the
// DSN names: one process plays clients on several hosts.
func pipeNet(t *testing.T, name string, s *Server) {
	gomysql.RegisterDialContext(name, func(_ context.Context, addr string) (net.Conn, error) {
		remote, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			return nil, err
		}
		client, srv := net.Pipe()
		ss := newSession(context.Background(), s, pipeConn{srv, remote})
		go ss.serve()
		return client, nil
	})
	t.Cleanup(func() { gomysql.DeregisterDialContext(name) })
}

func loginFrom(ctx context.Context, network, host, user, password string) error {
	c := gomysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.Timeout = user, password, network, host+":40000", 5*time.Second
	db, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}

// TestHostileMySQLSha2CacheAcrossHosts: go-mysql's server keeps one
// caching_sha2_password cache per Server keyed by the user name and the
// server's own address, so a client that logged in as ops@% with that
// user's password made the fast path accept the same password for
// ops@127.0.0.1, whose password is another. Each session has a server of
// its own: the cache never outlives the login.
func TestHostileMySQLSha2CacheAcrossHosts(t *testing.T) {
	u, err := authority.FromRules(config.Rule{Type: authority.RuleType, Content: map[string]any{"users": []any{
		map[string]any{"user": "ops@127.0.0.1", "password": "local-pw", "authenticationMethodName": "caching_sha2_password"},
		map[string]any{"user": "ops@%", "password": "any-pw", "authenticationMethodName": "caching_sha2_password"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Executor: echoExecutor{}, Users: func() (*authority.Users, error) { return u, nil }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	pipeNet(t, "skpipe-sha2", s)
	ctx := testenv.Context(t)
	for i := 0; i < 2; i++ { // twice, so that a cache would be filled
		if err := loginFrom(ctx, "skpipe-sha2", "10.0.0.9", "ops", "any-pw"); err != nil {
			t.Fatalf("ops@%% from 10.0.0.9: %v", err)
		}
	}
	err = loginFrom(ctx, "skpipe-sha2", "127.0.0.1", "ops", "any-pw")
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1045 {
		t.Fatalf("ops from 127.0.0.1 with ops@%%'s password: %v, want 1045", err)
	}
	if err := loginFrom(ctx, "skpipe-sha2", "127.0.0.1", "ops", "local-pw"); err != nil {
		t.Errorf("ops@127.0.0.1 with its own password: %v", err)
	}
}
