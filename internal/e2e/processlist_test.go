package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestProcessListNamesAPausedNode runs three serve processes on real etcd
// and on real ZooKeeper, pauses one with SIGSTOP and collects the cluster's
// process list as a ShardingSphere node's SHOW PROCESSLIST would: the two
// running nodes answer, the paused one (still online: its session has not
// expired) is named as not answering, within the collection's timeout.
func TestProcessListNamesAPausedNode(t *testing.T) {
	for _, reg := range []struct{ name, typ string }{{"etcd", config.RepositoryEtcd}, {"ZooKeeper", config.RepositoryZooKeeper}} {
		t.Run(reg.name, func(t *testing.T) {
			var servers []string
			if reg.typ == config.RepositoryEtcd {
				servers = testenv.EtcdEndpoints(t)
			} else {
				servers = testenv.ZooKeeperServers(t)
			}
			ctx := testenv.Context(t)
			repo := config.Repository{Type: reg.typ, ServerLists: servers, Namespace: testenv.Namespace("sk_e2e_"),
				TimeToLive: 30 * time.Second, ConnectTimeout: 10 * time.Second}
			conf := t.TempDir()
			global := fmt.Sprintf("mode:\n  type: Cluster\n  repository:\n    type: %s\n    props:\n      namespace: %s\n      server-lists: %s\n      timeToLiveSeconds: 30\n",
				reg.typ, repo.Namespace, strings.Join(servers, ","))
			if err := os.WriteFile(filepath.Join(conf, "global.yaml"), []byte(global), 0o644); err != nil {
				t.Fatal(err)
			}
			var procs []*proc
			for i := 1; i <= 3; i++ {
				procs = append(procs, startServe(t, conf, fmt.Sprintf("e2e-ps-%d", i), 3400+i))
			}
			r, err := connect.Open(ctx, repo)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			all, err := process.Collect(ctx, r, 0)
			if err != nil || len(all.Answered) != 3 || len(all.Unanswered) != 0 {
				t.Fatalf("Collect with every node running = %+v, %v; want 3 answers", all, err)
			}

			paused := procs[1]
			if err := paused.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			// Resumed before the cleanup's SIGTERM, which a stopped process
			// would not act on.
			t.Cleanup(func() { _ = paused.cmd.Process.Signal(syscall.SIGCONT) })
			const timeout = 3 * time.Second
			start := time.Now()
			c, err := process.Collect(ctx, r, timeout)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			var answered []string
			for _, l := range c.Answered {
				answered = append(answered, l.InstanceID)
			}
			if !slices.Equal(answered, []string{"e2e-ps-1", "e2e-ps-3"}) || !slices.Equal(c.Unanswered, []string{"e2e-ps-2"}) {
				t.Fatalf("Collect with e2e-ps-2 paused = %+v; want e2e-ps-1 and e2e-ps-3 answered, e2e-ps-2 not", c)
			}
			if took < timeout || took > timeout+5*time.Second {
				t.Errorf("Collect took %v with a timeout of %v", took, timeout)
			}
			t.Logf("%s: the paused node named after %v (timeout %v)", reg.name, took.Round(time.Millisecond), timeout)
		})
	}
}
