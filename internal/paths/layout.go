package paths

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
)

// Layout is the registry layout of a range of ShardingSphere releases. A
// node reads every layout and writes one. The zero value is Layout553
// (not DefaultLayout: a caller that means the default names it).
type Layout int

// Layouts. They differ in where the sharding rule's default strategies
// live, in the name of the database listener coordinator's parent, and
// (Layout554) in where key generate strategies live and in the case of
// schema, table and view node names.
const (
	// Layout553 is the layout of 5.5.3: each default strategy is a unique
	// item, rules/sharding/default_database_strategy; the coordinator is
	// /states/database_listener_coordinator/{db}; schema, table and view
	// nodes are named in lower case.
	Layout553 Layout = iota
	// Layout552 is the layout of 5.5.0 to 5.5.2: the defaults live under
	// rules/sharding/default_strategies/ (ShardingRuleNodePathProvider's
	// "default_strategies." prefix); the coordinator is
	// /states/listener_assisted/{db}.
	Layout552
	// Layout554 is the layout of 5.5.4 (master, 5.5.4-SNAPSHOT): Layout553
	// with the sharding rule's key generate strategies as named items
	// rules/sharding/key_generate_strategies/{name} instead of a table's
	// keyGenerateStrategy, no sharding_cache item, schema, table and view
	// nodes named in their raw case, and database names limited to
	// [A-Za-z][A-Za-z0-9_]*.
	Layout554
)

// DefaultLayout is the layout a node writes when neither layoutVersion,
// the registry's tree nor its registered ShardingSphere nodes settle one:
// the newest release's. It is also what a configuration without
// layoutVersion holds until the node picks (metadata.ChooseLayout).
const DefaultLayout = Layout554

// ParseLayout returns the layout a ShardingSphere release writes: "5.5.0"
// to "5.5.2" give Layout552, "5.5.3" Layout553, "5.5.4" and later 5.5.x
// releases Layout554 (a "-SNAPSHOT" suffix allowed). Other versions are an
// error.
func ParseLayout(release string) (Layout, error) {
	v := strings.TrimSuffix(strings.TrimSpace(release), "-SNAPSHOT")
	patch, ok := strings.CutPrefix(v, "5.5.")
	n, err := strconv.Atoi(patch)
	if !ok || err != nil || n < 0 || strconv.Itoa(n) != patch {
		return 0, fmt.Errorf("%q is not a ShardingSphere 5.5.x release (use 5.5.0 to 5.5.2 for the old layout, 5.5.3, or 5.5.4 for the next one)", release)
	}
	switch {
	case n <= 2:
		return Layout552, nil
	case n == 3:
		return Layout553, nil
	}
	return Layout554, nil
}

// Layouts lists every layout, oldest first.
var Layouts = []Layout{Layout552, Layout553, Layout554}

// String is the release that names the layout: "5.5.2", "5.5.3" or
// "5.5.4".
func (l Layout) String() string {
	switch l {
	case Layout552:
		return "5.5.2"
	case Layout554:
		return "5.5.4"
	}
	return "5.5.3"
}

// NodeName is the registry node name of a schema, table or view named
// name: lower case up to 5.5.3 (upstream's persist services lower-case
// it), the name as it is in Layout554.
func (l Layout) NodeName(name string) string {
	if l == Layout554 {
		return name
	}
	return strings.ToLower(name)
}

// CheckDatabaseName returns an error when the layout's release refuses
// the database name: Layout554 takes [A-Za-z][A-Za-z0-9_]* only
// (DatabaseNameValidator); earlier ones take what the registry path does.
func (l Layout) CheckDatabaseName(name string) error {
	if l != Layout554 {
		return nil
	}
	for i, r := range name {
		letter := r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z'
		if letter || i > 0 && (r == '_' || r >= '0' && r <= '9') {
			continue
		}
		return fmt.Errorf("database name %q is not valid for ShardingSphere 5.5.4: it must start with a letter and hold only letters, digits and underscores", name)
	}
	if name == "" {
		return fmt.Errorf("database name is empty")
	}
	return nil
}

// DefaultStrategiesItem is the 5.5.0-5.5.2 parent of the sharding rule's
// default items (Layout552).
const DefaultStrategiesItem = "default_strategies"

// shardingDefaults are the sharding rule items that Layout552 keeps under
// DefaultStrategiesItem.
var shardingDefaults = map[string]bool{
	"default_database_strategy":     true,
	"default_table_strategy":        true,
	"default_key_generate_strategy": true,
	"default_audit_strategy":        true,
	"default_sharding_column":       true,
}

// RuleItem is RuleItem placed as the layout places it: in Layout552 the
// sharding rule's default items go under default_strategies/.
func (l Layout) RuleItem(db, ruleType, item, name string) (string, error) {
	if l == Layout552 && ruleType == "sharding" && name == "" && shardingDefaults[item] {
		return RuleItem(db, ruleType, DefaultStrategiesItem, item)
	}
	return RuleItem(db, ruleType, item, name)
}

// RuleItemPlacements returns every key an item may live at in any layout
// (one for most items, two for a sharding default), for deleting it.
func RuleItemPlacements(db, ruleType, item, name string) ([]string, error) {
	p, err := RuleItem(db, ruleType, item, name)
	if err != nil {
		return nil, err
	}
	out := []string{p}
	if old, err := Layout552.RuleItem(db, ruleType, item, name); err == nil && old != p {
		out = append(out, old)
	}
	return out, nil
}

// Parents of the database listener coordinator's nodes in each layout.
const (
	DatabaseListenerRoot    = "/states/database_listener_coordinator"
	DatabaseListenerRoot552 = "/states/listener_assisted"
)

// DatabaseListener is the database listener coordinator's node of db
// (ephemeral; CREATE or DROP): /states/database_listener_coordinator/{db},
// or /states/listener_assisted/{db} in Layout552.
func (l Layout) DatabaseListener(db string) (string, error) {
	if l == Layout552 {
		return join(DatabaseListenerRoot552, db)
	}
	return join(DatabaseListenerRoot, db)
}

// The lock LOCK CLUSTER and UNLOCK CLUSTER hold while they change
// /states/cluster_state, in each layout. 5.5.3 and later run them as the
// exclusive operation lock_cluster (ExclusiveOperatorEngine,
// LockClusterOperation); 5.5.0 to 5.5.2 take the global lock cluster_lock
// (GlobalLockDefinition of ClusterLock: /lock/global/locks/{name}). Both
// are the registry's lock recipe (Curator InterProcessMutex children on
// ZooKeeper, an etcd lock on etcd) under that key.
const (
	ClusterLockOperation = "lock_cluster"
	GlobalLockRoot552    = "/lock/global/locks"
	ClusterLockName552   = "cluster_lock"
)

// ClusterLock is the key of the cluster lock: /exclusive_operation/lock_cluster,
// or /lock/global/locks/cluster_lock in Layout552.
func (l Layout) ClusterLock() string {
	if l == Layout552 {
		p, _ := GlobalLock552(ClusterLockName552)
		return p
	}
	p, _ := ExclusiveOperation(ClusterLockOperation)
	return p
}

// GlobalLock552 is /lock/global/locks/{name}, a 5.5.0-5.5.2 global lock
// (GlobalLockDefinition).
func GlobalLock552(name string) (string, error) { return join(GlobalLockRoot552, name) }

// RegistryLayout is shardkeeper's own record of the layout the last
// migration left the tree in ("5.5.4"), which nodes without
// layoutVersion follow. ShardingSphere does not read it.
const RegistryLayout = "/nodes/registry_layout"

// LayoutVar is the layout a node writes now, safe for concurrent use:
// fixed by layoutVersion, or moved by a migration of the tree.
type LayoutVar struct{ v atomic.Int32 }

// NewLayoutVar returns a LayoutVar holding l.
func NewLayoutVar(l Layout) *LayoutVar {
	v := &LayoutVar{}
	v.Store(l)
	return v
}

// Load returns the layout held; a nil LayoutVar holds DefaultLayout.
func (v *LayoutVar) Load() Layout {
	if v == nil {
		return DefaultLayout
	}
	return Layout(v.v.Load())
}

// Store makes l the layout held.
func (v *LayoutVar) Store(l Layout) { v.v.Store(int32(l)) }
