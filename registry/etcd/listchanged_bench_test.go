package etcd_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
)

// BenchmarkListChanged times, next to 20,000 keys of 200 bytes (the rule
// keys of 10,000 sharding tables), a ListChanged that finds nothing
// changed against a List of the same prefix and a Get of one key, in one
// run: what a rule statement's reads cost the server.
func BenchmarkListChanged(b *testing.B) {
	s := etcdtest.New(b)
	r := s.Open(b, s.Namespace(b, "listchanged"))
	ctx := context.Background()
	sess, err := r.NewSession(ctx, registry.SessionOptions{TTL: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close(ctx)
	var txn registry.Txn
	for i := range 20000 {
		k := fmt.Sprintf("/p/t_%05d/versions/0", i)
		txn.Conds = append(txn.Conds, registry.Cond{Key: k})
		txn.Ops = append(txn.Ops, registry.Op{Key: k, Value: make([]byte, 200)})
		if len(txn.Ops) == 100 {
			if _, err := sess.Commit(ctx, txn); err != nil {
				b.Fatal(err)
			}
			txn = registry.Txn{}
		}
	}
	all, err := r.List(ctx, "/p")
	if err != nil {
		b.Fatal(err)
	}
	var since registry.Version
	for _, kv := range all {
		since = max(since, kv.Version)
	}
	b.Run("Get", func(b *testing.B) {
		for range b.N {
			if _, err := r.Get(ctx, "/p/t_00001/versions/0"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ListChanged", func(b *testing.B) {
		for range b.N {
			if c, _, err := registry.ListChanged(ctx, r, "/p", since, 1000); err != nil || len(c.KVs) != 0 {
				b.Fatal(c, err)
			}
		}
	})
	b.Run("List", func(b *testing.B) {
		for range b.N {
			if _, err := r.List(ctx, "/p"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
