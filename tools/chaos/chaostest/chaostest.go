// Package chaostest holds the test helpers of the chaos harness's
// packages: the root and tool checks, and a throwaway test network.
package chaostest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/tools/chaos/netns"
)

// RequireTools fails the test under SHARDKEEPER_REQUIRE_SERVERS=1 and skips
// it otherwise when not root or a tool is missing.
func RequireTools(t testing.TB, tools ...string) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (network namespaces need CAP_NET_ADMIN)")
	}
	for _, tool := range append([]string{"ip"}, tools...) {
		if strings.HasPrefix(tool, "/") {
			if _, err := os.Stat(tool); err != nil {
				missing = append(missing, tool)
			}
		} else if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "missing: " + strings.Join(missing, ", ") +
		" (run as root with iproute2; install etcd, ZooKeeper and java with" +
		" `bash -c 'source scripts/servers.sh && install_servers'`)"
	if os.Getenv(testenv.EnvRequireServers) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Network creates a test network with a random prefix on a random free
// 10.213.x.0/24 (x in 100..199, so it does not collide with a harness run
// on the default 10.213.0.0/24) with the named hosts, and closes it when the
// test ends, failing the test if anything is left behind.
func Network(t testing.TB, hosts ...string) (*netns.Network, []*netns.Host) {
	t.Helper()
	var n *netns.Network
	for try := 0; ; try++ {
		prefix := fmt.Sprintf("skt%04x", rand.IntN(1<<16))
		subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 213, byte(100 + rand.IntN(100)), 0}), 24)
		var err error
		n, err = netns.NewNetwork(prefix, subnet)
		if errors.Is(err, netns.ErrSubnetInUse) && try < 10 {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		AssertNoLeftovers(t, n.Prefix())
	})
	var hs []*netns.Host
	for _, name := range hosts {
		h, err := n.AddHost(name)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	return n, hs
}

// AssertNoLeftovers fails the test for every namespace and link whose
// name starts with prefix.
func AssertNoLeftovers(t testing.TB, prefix string) {
	t.Helper()
	left, err := netns.Leftovers(prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range left {
		t.Errorf("%s left behind", l)
	}
}
