package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestProcessListNamesAPausedNode runs three serve processes on real etcd
// and on real ZooKeeper, pauses one with SIGSTOP and collects the cluster's
// process list as a ShardingSphere node's SHOW PROCESSLIST would: the two
// running nodes answer, the paused one (still online: its session has not
// expired) is named as not answering, within the collection's timeout.
func TestProcessListNamesAPausedNode(t *testing.T) {
	eachRegistry(t, func(t *testing.T, typ string) {
		ctx := testenv.Context(t)
		cl := startCluster(t, typ, 3, clusterOptions{prefix: "e2e-ps", port: 3400, ttl: 30})
		procs, r := cl.procs, cl.repo
		all, err := process.Collect(ctx, r, 0)
		if err != nil || len(all.Answered) != 3 || len(all.Unanswered) != 0 {
			t.Fatalf("Collect with every node running = %+v, %v; want 3 answers", all, err)
		}

		paused := procs[1]
		paused.pause(t)
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
		t.Logf("%s: the paused node named after %v (timeout %v)", typ, took.Round(time.Millisecond), timeout)
	})
}
