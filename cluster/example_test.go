package cluster_test

import (
	"context"
	"fmt"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// A node on a registry: in production the repository comes from
// registry/etcd, registry/zookeeper or registry/embedded.
func Example() {
	ctx := context.Background()
	repo := memory.New()
	node, err := cluster.Open(ctx, repo, cluster.Config{InstanceID: "orders-service-1"})
	if err != nil {
		panic(err)
	}
	defer node.Close(ctx)

	key, err := node.NextID(ctx)
	if err != nil {
		panic(err)
	}
	batch, err := node.NextIDs(ctx, 100)
	if err != nil {
		panic(err)
	}
	parts := snowflake.Decompose(key)
	fmt.Println(int(parts.WorkerID) == node.WorkerID(), len(batch), batch[0] > key)
	// Output: true 100 true
}
