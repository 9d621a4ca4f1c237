// Package metadata keeps a node's view of the cluster's logical databases
// in step with the registry, the way ShardingSphere's cluster mode does.
//
// Layout and encodings are ShardingSphere master's (internal/paths builds
// every key): /metadata/{db} with data source units, database rule items,
// schemas, tables and views; global rules under /rules; /props. Every item
// is versioned: {node}/versions/{n} holds the content and
// {node}/active_version the number of the live one. A write creates the next
// version, then moves active_version, then deletes older versions.
//
// Bootstrap either loads everything from the registry (it already has
// databases: props and global rules from the registry win) or, under a
// registry lock so that two nodes starting together end with one copy,
// persists the local configuration and the schemas introspected from the
// real data sources. The result is a Store whose Current snapshot is
// immutable and swapped atomically; Run keeps it current through one watch
// per prefix and resyncs after a lost watch, emitting deletes for keys that
// vanished meanwhile. Subscribe and Wait let library users react to
// changes.
//
// One write side: the *Writes functions (DatabaseWrites, SchemaWrites,
// GlobalWrites, RuleWrites, UnitWrites, ReplaceWrites, DeleteWrites)
// return the conditions and writes of a registry transaction without
// writing anything, so that a caller (dbconfig's IMPORT and storage unit
// statements, the rule statements) commits a change as one transaction
// that fails when the registry changed since it was read. The Persist
// functions write a first copy at bootstrap; SetProps and MergeProps
// (props.go) change /props by compare-and-set.
//
// Guarantees: a reader only applies an active_version whose value is still
// the current one; corrupt values are reported (Problems, logs) and skipped,
// and the node keeps running. Non-guarantees: a committed
// transaction and the writer functions return once the registry has the change, not once any node (this one included)
// has applied it; use Wait for that. A node that dies half-way through the
// first persist leaves a partial copy, as ShardingSphere does.
package metadata
