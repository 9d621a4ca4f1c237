// Package registry is the storage contract of shardkeeper: a small
// Repository (versioned key/value with compare-and-set, children, subtree
// delete, watch) and a Session (ephemeral keys, exclusive creates, locks)
// that the etcd, ZooKeeper, embedded-etcd and memory backends implement.
//
// Guarantees every backend gives (pinned down by registrytest.Run):
//   - Keys are absolute paths validated by ValidateKey before any I/O; a bad
//     key is an *OpError wrapping ErrBadKey and never a write.
//   - Prefix operations (Delete, Watch, Children) treat the prefix as a whole
//     path: deleting "/metadata/db1" never touches "/metadata/db10".
//   - Versions never repeat for a key, even after delete and re-create, so
//     Update is a safe compare-and-set (no ABA).
//   - Ephemeral keys and locks live exactly as long as their Session. Session
//     loss is reported on Done and Err, never hidden by a silent reconnect.
//   - CreateExclusiveEphemeral has exactly one winner among racing callers.
//
// Non-guarantees:
//   - A Session or a Lock is not a fencing token. The registry can expire a
//     session before the client notices (an etcd client closes Done only
//     after its own deadline; a paused process notices nothing). Writes that
//     must not race a lost session use Version and Update.
//   - Whether an intermediate key that was never written exists for Get is
//     backend-specific (ZooKeeper creates parent nodes with empty values,
//     etcd has none). Children lists the names under a key either way.
//   - Watch may deliver duplicates and coalesce rapid changes; handlers must
//     be idempotent. Follow does the resync after a lost watch.
package registry
