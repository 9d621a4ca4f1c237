package cluster

import (
	"context"
	"errors"

	"strconv"
	"sync"

	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// offsetClock is the system clock shifted by off: a node whose clock is
// behind or ahead of its peers'.
type offsetClock struct {
	base snowflake.Clock
	off  time.Duration
}

func (c offsetClock) UnixNano() int64       { return c.base.UnixNano() + int64(c.off) }
func (c offsetClock) Sleep(d time.Duration) { c.base.Sleep(d) }

// loadNode issues keys in batches until ctx ends, recording every key it
// got; errors (no worker id for a moment) are retried.
func loadNode(ctx context.Context, n *Node, keys *[]int64, wg *sync.WaitGroup) {
	defer wg.Done()
	buf := make([]int64, 0, 32)
	for ctx.Err() == nil {
		c, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		buf, _ = n.AppendIDs(c, buf[:0], 32)
		cancel()
		*keys = append(*keys, buf...)
		time.Sleep(200 * time.Microsecond)
	}
}

func waitLedger(t *testing.T, r registry.Repository) {
	t.Helper()
	testenv.Eventually(t, "the worker id ledger", func() bool {
		_, err := r.Get(testenv.Context(t), paths.Ledger)
		return err == nil
	})
}

// deleteFencesAndSwapHints is the operator's transaction: the two nodes'
// hints swapped, both ids' reservation and fence deleted, at once. It is
// conditioned on what it read (the nodes renew their fences meanwhile), and
// read again when a renewal came between.
func deleteFencesAndSwapHints(t *testing.T, r registry.Repository, instA string, idA int, instB string, idB int) {
	t.Helper()
	ctx := testenv.Context(t)
	sess, err := r.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	for attempt := 0; ; attempt++ {
		var txn registry.Txn
		get := func(key string) registry.Version {
			kv, err := r.Get(ctx, key)
			if err != nil {
				t.Fatalf("get %s: %v", key, err)
			}
			return kv.Version
		}
		for _, h := range []struct {
			inst string
			to   int
		}{{instA, idB}, {instB, idA}} {
			key, _ := paths.WorkerIDHint(h.inst)
			txn.Conds = append(txn.Conds, registry.Cond{Key: key, Version: get(key)})
			txn.Ops = append(txn.Ops, registry.Op{Key: key, Value: []byte(strconv.Itoa(h.to))})
		}
		for _, id := range []int{idA, idB} {
			res, _ := paths.Reservation(id)
			fk, _ := paths.Fence(id)
			for _, key := range []string{res, fk} {
				txn.Conds = append(txn.Conds, registry.Cond{Key: key, Version: get(key)})
				txn.Ops = append(txn.Ops, registry.Op{Key: key, Delete: true})
			}
		}
		_, err := sess.Commit(ctx, txn)
		if err == nil {
			return
		}
		if !errors.Is(err, registry.ErrBadVersion) || attempt == 20 {
			t.Fatalf("operator transaction: %v", err)
		}
	}
}

// deletedFencesRun: two nodes under load (B's clock a second behind A's),
// then the operator transaction; it returns the duplicate keys and the keys
// each node issued after it.
func deletedFencesRun(t *testing.T, b backend, trustAbsent bool) (dups int, after [2]int) {
	r := b.open(t)
	a := openNode(t, b.open(t), Config{InstanceID: "fence-a", UnsafeTrustAbsentFence: trustAbsent})
	cfgB := Config{InstanceID: "fence-b", UnsafeTrustAbsentFence: trustAbsent}
	cfgB.Snowflake = snowflake.DefaultConfig()
	cfgB.Snowflake.Clock = offsetClock{snowflake.SystemClock(), -time.Second}
	bn := openNode(t, b.open(t), cfgB)
	waitLedger(t, r)

	ctx, cancel := context.WithCancel(testenv.Context(t))
	var wg sync.WaitGroup
	var keys [2][]int64
	wg.Add(2)
	go loadNode(ctx, a, &keys[0], &wg)
	go loadNode(ctx, bn, &keys[1], &wg)
	time.Sleep(1500 * time.Millisecond)
	idA, idB := a.WorkerID(), bn.WorkerID()
	if idA < 0 || idB < 0 {
		cancel()
		wg.Wait()
		t.Fatalf("worker ids %d, %d before the operator's transaction", idA, idB)
	}
	deleteFencesAndSwapHints(t, r, "fence-a", idA, "fence-b", idB)
	time.Sleep(2500 * time.Millisecond)
	cancel()
	wg.Wait()

	seen := make(map[int64]struct{}, len(keys[0])+len(keys[1]))
	for i, ks := range keys {
		for _, k := range ks {
			if _, dup := seen[k]; dup {
				dups++
			}
			seen[k] = struct{}{}
			if p := snowflake.Decompose(k); int(p.WorkerID) != []int{idA, idB}[i] {
				after[i]++
			}
		}
	}
	t.Logf("trustAbsent=%v: ids %d, %d; keys %d, %d (on another id after the deletion %d, %d); duplicates %d",
		trustAbsent, idA, idB, len(keys[0]), len(keys[1]), after[0], after[1], dups)
	return dups, after
}

// TestHostileDeletedFences: an operator transaction that swaps two nodes'
// hints and deletes both ids' reservation and fence, under load, with one
// node's clock a second behind. Fenced, no key is issued twice and both
// nodes keep issuing (on other ids: a missing fence on a ledgered cluster
// has an unknown floor a minute ahead). With UnsafeTrustAbsentFence (the
// missing fence read as never used) the node whose clock is behind takes
// the other's id and re-issues its keys: the control must find duplicates.
func TestHostileDeletedFences(t *testing.T) {
	for name, mk := range map[string]func(*testing.T) backend{"etcd": etcdBackend, "zookeeper": zookeeperBackend} {
		t.Run(name, func(t *testing.T) {
			dups, after := deletedFencesRun(t, mk(t), false)
			if dups != 0 {
				t.Errorf("fenced: %d duplicate keys", dups)
			}
			if after[0] == 0 || after[1] == 0 {
				t.Errorf("fenced: keys issued on a new worker id after the deletion: %v, want both > 0", after)
			}
			if dups, _ := deletedFencesRun(t, mk(t), true); dups == 0 {
				t.Errorf("negative control (UnsafeTrustAbsentFence): no duplicates; the scenario does not bite")
			}
		})
	}
}

// TestHostileHolderStopsOnForeignChange: a holder stops issuing as soon as
// its fence, its reservation or its worker_id node is changed by someone
// else (a ShardingSphere node on etcd overwrites a reservation with a
// plain put), long before its next renewal (every 10 s here) would find
// out.
func TestHostileHolderStopsOnForeignChange(t *testing.T) {
	for name, mk := range map[string]func(*testing.T) backend{"etcd": etcdBackend, "zookeeper": zookeeperBackend} {
		for _, change := range []string{"fence overwritten", "fence deleted", "reservation deleted", "reservation overwritten",
			"worker_id overwritten", "worker_id deleted"} {
			t.Run(name+"/"+change, func(t *testing.T) {
				b := mk(t)
				lost := make(chan Event, 4)
				n := openNode(t, b.open(t), Config{InstanceID: "victim", Reservation: 30 * time.Second, OnEvent: func(e Event) {
					if e.Kind == EventLost {
						select {
						case lost <- e:
						default:
						}
					}
				}})
				id := n.WorkerID()
				r := b.open(t)
				ctx := testenv.Context(t)
				fk, _ := paths.Fence(id)
				res, _ := paths.Reservation(id)
				wid, _ := paths.WorkerID("victim")
				time.Sleep(200 * time.Millisecond) // the watch is up
				var err error
				switch change {
				case "fence overwritten":
					_, err = r.Put(ctx, fk, []byte(`{"epoch":99,"holder":"intruder","reservedUntil":0}`))
				case "fence deleted":
					err = r.Delete(ctx, fk)
				case "reservation deleted":
					err = r.Delete(ctx, res)
				case "reservation overwritten":
					_, err = r.Put(ctx, res, []byte("upstream-instance"))
				case "worker_id overwritten":
					_, err = r.Put(ctx, wid, []byte(strconv.Itoa((id+1)%(paths.MaxWorkerID+1))))
				case "worker_id deleted":
					err = r.Delete(ctx, wid)
				}
				if err != nil {
					t.Fatal(err)
				}
				changed := time.Now()
				select {
				case e := <-lost:
					if e.WorkerID != id {
						t.Fatalf("lost worker id %d, want %d", e.WorkerID, id)
					}
					t.Logf("stopped issuing %v after the change (%v)", time.Since(changed).Round(time.Millisecond), e.Err)
				case <-time.After(3 * time.Second):
					t.Fatalf("still issuing on worker id %d 3 s after its %s", id, change)
				}
			})
		}
	}
}
