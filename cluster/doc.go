// Package cluster runs one compute node of a shardkeeper cluster: it gets a
// Snowflake worker id from the registry, registers itself online, keeps a
// live view of its peers, and hands out 64-bit keys that are unique across
// the cluster, ShardingSphere-compatible in layout and registry paths.
//
// Open returns a node that holds a worker id and a committed time
// reservation; Close leaves gracefully. In between the node renews its
// reservation every Reservation/3: the fence, a registry record per worker
// id of the time up to which its holder may stamp keys, committed before
// the keys are issued and changed only by compare-and-set. Meanwhile:
//   - a failed renewal whose outcome is unknown keeps the last committed
//     limit: keys keep flowing until it is reached, then NextID waits;
//   - a fence, reservation or worker_id node taken by someone else, or a
//     lost session, stops issuing at once (NextID returns ErrNotIssuing), is
//     logged at error level and counted in Stats; the node then starts a new
//     session, re-acquires a worker id (its previous one if still free) and
//     registers again.
//
// A node holds one registry session at a time: its worker id, online,
// status and labels nodes live in it. The other parts of a process that
// keep ephemeral nodes for the node (a props acknowledgement, the labels
// a console writes) write them in the same session (Session) and write
// them again in the next one (OnSession), so that everything the node
// keeps goes with it at once and, on ZooKeeper, a node holds two
// connections: the repository's and its session's.
//
// Guarantee: no two nodes ever issue the same key, given only a
// linearizable registry that is never rolled back: the timestamps a holder
// of a worker id may stamp are committed to the registry before they are
// used, and a successor starts strictly above them. Paused processes, clock
// steps, partitions and lease bugs cost availability, never uniqueness.
//
// The guarantee is between shardkeeper nodes. ShardingSphere nodes in the
// same namespace neither write nor honour the fence: on ZooKeeper both
// sides reserve a worker id exclusively; on etcd an upstream node's plain
// put can overwrite a shardkeeper node's reservation, and the node stops
// issuing on that id as soon as its watch delivers the change. Nodes leave
// the lowest worker ids (below 128), where upstream nodes take theirs, to
// them while higher ids are free.
package cluster
