// Package testenv tells tests where the real registry servers are. The test
// script (scripts/test.sh, run by `make test`) starts etcd and ZooKeeper on
// loopback and exports their addresses together with
// SHARDKEEPER_REQUIRE_SERVERS=1; under it a missing server fails the test.
// A plain `go test ./...` without the script skips those tests instead.
// The same holds for the shared reference (Shared): upstream's material
// that tests read in place from ../shared next to the clone, which the
// script requires with SHARDKEEPER_REQUIRE_SHARED=1.
//
// It also holds what tests of every package share: Context (a bounded
// context), Eventually (poll until a condition holds), Namespace (a name no
// other test uses), and the builder of the real binary. Namespaces on the
// real registries, with a real session expiry, come from the backends'
// harnesses, registry/etcd/etcdtest and registry/zookeeper/zktest.
package testenv

import (
	"os"
	"strings"
	"testing"
)

// Environment variables set by scripts/test.sh.
const (
	EnvEtcdEndpoints  = "SHARDKEEPER_ETCD_ENDPOINTS"  // comma-separated, e.g. http://127.0.0.1:2379
	EnvZooKeeper      = "SHARDKEEPER_ZK_SERVERS"      // comma-separated host:port
	EnvRequireServers = "SHARDKEEPER_REQUIRE_SERVERS" // "1": fail, do not skip, when a server is missing
)

// EtcdEndpoints returns the endpoints of the real etcd server for tests. It
// fails the test when they are missing and servers are required, and skips
// it otherwise.
func EtcdEndpoints(t testing.TB) []string {
	return lookup(t, EnvEtcdEndpoints, "etcd")
}

// ZooKeeperServers returns the host:port list of the real ZooKeeper server
// for tests, failing or skipping like EtcdEndpoints.
func ZooKeeperServers(t testing.TB) []string {
	return lookup(t, EnvZooKeeper, "ZooKeeper")
}

func lookup(t testing.TB, env, what string) []string {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(env))
	if v == "" {
		msg := what + " server not configured: run `make test` (it starts one) or set " + env
		if os.Getenv(EnvRequireServers) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return strings.Split(v, ",")
}
