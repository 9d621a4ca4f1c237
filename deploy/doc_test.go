// Package deploy tests what deploy/ ships: the Kubernetes manifests
// (decoded strictly into the API types, checked for the invariants a
// deployment relies on), the Prometheus rules (promtool check and unit
// tests, and a real Prometheus server scraping a live node) and the
// Grafana dashboard (its queries parse, and every metric name they and the
// rules use exists in a live node's /metrics).
package deploy

import (
	"os"
	"os/exec"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// tool returns the path of a command the tests need, installed by
// scripts/servers.sh from Debian package pkg. It fails the test when the
// command is missing under scripts/test.sh (servers required) and skips it
// otherwise.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := name + " not installed (Debian package " + pkg + "; scripts/test.sh installs it)"
	if os.Getenv(testenv.EnvRequireServers) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
