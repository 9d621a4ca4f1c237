package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// TestMixedClusterOverwriteEtcd measures the exposure window of a mixed
// cluster on etcd. A ShardingSphere node reserves a worker id with a plain
// leased put (EtcdRepository.persistExclusiveEphemeral), which overwrites
// the reservation of a shardkeeper node that holds the id. The node, issuing
// keys as fast as it can, stops issuing on that id as soon as its watch
// delivers the put, long before its next renewal (every 10 s here) would
// find out, and no key with the id is issued after it reported the loss.
// The test reports, per round, how many keys the node stamped with the id
// after the put was sent (an upper bound: a batch counts whole when it ends
// after the put was sent) and how long the stop took.
func TestMixedClusterOverwriteEtcd(t *testing.T) {
	srv := etcdtest.New(t)
	cli := srv.Client(t)
	const rounds = 5
	var worst int64
	for round := 0; round < rounds; round++ {
		ns := srv.Namespace(t, "sk_mixed_")
		lost := make(chan Event, 1)
		n := openNode(t, srv.Open(t, ns), Config{InstanceID: "victim", Reservation: 30 * time.Second, OnEvent: func(e Event) {
			if e.Kind == EventLost {
				select {
				case lost <- e:
				default:
				}
			}
		}})
		id := n.WorkerID()
		ctx := testenv.Context(t)
		lease, err := cli.Grant(ctx, 30)
		if err != nil {
			t.Fatal(err)
		}
		res, _ := paths.Reservation(id)

		var sent, stopped atomic.Bool
		var before, after, afterStop int64 // keys stamped with id
		loadCtx, stopLoad := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]int64, 0, 64)
			for loadCtx.Err() == nil {
				wasStopped := stopped.Load()
				buf, _ = n.AppendIDs(loadCtx, buf[:0], 64)
				onID := int64(0)
				for _, k := range buf {
					if int(snowflake.Decompose(k).WorkerID) == id {
						onID++
					}
				}
				switch {
				case wasStopped:
					afterStop += onID
				case sent.Load():
					after += onID
				default:
					before += onID
				}
			}
		}()
		time.Sleep(300 * time.Millisecond) // issuing at full speed
		sent.Store(true)
		start := time.Now()
		if _, err := cli.Put(ctx, ns+res, "upstream-instance", clientv3.WithLease(lease.ID)); err != nil {
			stopLoad()
			wg.Wait()
			t.Fatal(err)
		}
		put := time.Since(start)
		select {
		case e := <-lost:
			stopped.Store(true)
			took := time.Since(start)
			time.Sleep(300 * time.Millisecond) // still loading: nothing more on id
			stopLoad()
			wg.Wait()
			if e.WorkerID != id {
				t.Fatalf("lost worker id %d, want %d", e.WorkerID, id)
			}
			if before == 0 {
				t.Fatalf("no key issued before the overwrite")
			}
			if afterStop != 0 {
				t.Fatalf("%d keys stamped with worker id %d after the node reported its loss", afterStop, id)
			}
			worst = max(worst, after)
			t.Logf("round %d: worker id %d overwritten (put took %v); stopped %v after the put was sent; %d keys with the id before, at most %d after the put was sent (%v)",
				round, id, put.Round(time.Microsecond), took.Round(time.Microsecond), before, after, e.Err)
		case <-time.After(3 * time.Second):
			stopLoad()
			wg.Wait()
			t.Fatalf("still issuing on worker id %d 3 s after its reservation was overwritten", id)
		}
		if err := n.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Revoke(ctx, lease.ID); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("at most %d keys stamped with an overwritten worker id after the overwrite was sent (worst of %d rounds)", worst, rounds)
}
