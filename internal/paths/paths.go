// Package paths builds every registry path shardkeeper reads or writes,
// with ShardingSphere's layout (master's, and the older releases' where
// they differ: see Layout). Functions that take a name (instance id,
// database, schema, table, ...) validate it with registry.ValidateName
// first, so a name that would escape its path is an error before it
// becomes a key.
package paths

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/registry"
)

// MaxWorkerID is the largest Snowflake worker id (10 bits).
const MaxWorkerID = 1023

// InstanceType is the online node's type segment: "proxy" or "jdbc".
type InstanceType string

// Instance types, lower case as ShardingSphere writes them.
const (
	Proxy InstanceType = "proxy"
	JDBC  InstanceType = "jdbc"
)

// Parents that are listed or watched.
const (
	ComputeNodes    = "/nodes/compute_nodes"
	OnlineRoot      = "/nodes/compute_nodes/online"
	StatusRoot      = "/nodes/compute_nodes/status"
	WorkerIDRoot    = "/nodes/compute_nodes/worker_id"
	LabelsRoot      = "/nodes/compute_nodes/labels"
	ReservationRoot = "/reservation/worker_id"
	FenceRoot       = "/reservation/worker_id_fence"
	HintRoot        = "/reservation/worker_id_hint"
	// ReservationTop is the parent of every reservation, fence, hint and
	// the ledger.
	ReservationTop = "/reservation"
	// Ledger is written once, when the cluster's 1024 fences have all been
	// created: from then on a missing fence was deleted, not never used.
	Ledger = "/reservation/worker_id_ledger"
	// LedgerLock is held (ephemeral) by the one node creating the fences
	// and the ledger.
	LedgerLock = "/reservation/worker_id_ledger_lock"
	// NodesTop is the parent of every compute node's registration.
	NodesTop          = "/nodes"
	MetadataRoot      = "/metadata"
	GlobalRulesRoot   = "/rules"
	PropsRoot         = "/props"
	StatesRoot        = "/states"
	ClusterState      = "/states/cluster_state"
	ExclusiveRoot     = "/exclusive_operation"
	ActiveVersionName = "active_version"
	VersionsName      = "versions"
	// ShowProcessListTriggerRoot holds ShardingSphere's SHOW PROCESSLIST
	// triggers, {instanceId}:{taskId} (persistent, value "").
	ShowProcessListTriggerRoot = "/nodes/compute_nodes/show_process_list_trigger"
	// KillProcessTriggerRoot holds ShardingSphere's KILL triggers,
	// {instanceId}:{processId} (persistent, value "").
	KillProcessTriggerRoot = "/nodes/compute_nodes/kill_process_trigger"
	// ExecutionNodesRoot holds the answers to SHOW PROCESSLIST triggers,
	// /execution_nodes/{taskId}/{instanceId} (persistent, YAML process list).
	ExecutionNodesRoot = "/execution_nodes"
	// PropsAppliedRoot holds, per shardkeeper node, what its metadata
	// applied: /nodes/props_applied/{instanceId} (ephemeral; the decimal
	// /props version on the first line, then a "{db} {digest}" line per
	// database with rules and a "/ {digest}" line for the global rules, see
	// distvar.Ack). ShardingSphere never reads it.
	PropsAppliedRoot = "/nodes/props_applied"
	// RulesReadBarrier is the key a rule statement writes (an empty value)
	// on a registry that replays its history (etcd) before it reads the
	// rules written since its node's last read: every change committed
	// before the statement is at or before that write's revision
	// (registry.ReplayChanges). ShardingSphere never reads it.
	RulesReadBarrier = "/nodes/rules_read_barrier"
	// ImportsRoot holds, per logical database, the mark of an IMPORT in
	// progress: /shardkeeper/imports/{db} (persistent, JSON), written
	// before the import's first transaction and deleted after its last, so
	// that one left behind says the database is half-written.
	// ShardingSphere never reads /shardkeeper.
	ImportsRoot = "/shardkeeper/imports"
)

// Online is /nodes/compute_nodes/online/{type}/{instanceId} (ephemeral; YAML
// attribute, databaseName, version).
func Online(typ InstanceType, instanceID string) (string, error) {
	if typ != Proxy && typ != JDBC {
		return "", fmt.Errorf("%w: instance type %q (want proxy or jdbc)", registry.ErrBadKey, typ)
	}
	return join(OnlineRoot+"/"+string(typ), instanceID)
}

// Status is /nodes/compute_nodes/status/{instanceId} (ephemeral; OK or
// CIRCUIT_BREAK).
func Status(instanceID string) (string, error) { return join(StatusRoot, instanceID) }

// WorkerID is /nodes/compute_nodes/worker_id/{instanceId} (ephemeral;
// decimal worker id).
func WorkerID(instanceID string) (string, error) { return join(WorkerIDRoot, instanceID) }

// Labels is /nodes/compute_nodes/labels/{instanceId} (ephemeral; YAML list;
// ShardingSphere 5.5.x).
func Labels(instanceID string) (string, error) { return join(LabelsRoot, instanceID) }

// Reservation is /reservation/worker_id/{workerId} (ephemeral, created
// exclusively; value: the holder's instance id).
func Reservation(workerID int) (string, error) {
	if err := checkWorkerID(workerID); err != nil {
		return "", err
	}
	return ReservationRoot + "/" + strconv.Itoa(workerID), nil
}

// Fence is /reservation/worker_id_fence/{workerId} (persistent, changed only
// by compare-and-set; shardkeeper's own node, absent from ShardingSphere's
// layout): the holder, its epoch and the time reserved up to, which a
// successor's keys start above.
func Fence(workerID int) (string, error) {
	if err := checkWorkerID(workerID); err != nil {
		return "", err
	}
	return FenceRoot + "/" + strconv.Itoa(workerID), nil
}

// WorkerIDHint is /reservation/worker_id_hint/{instanceId} (persistent;
// decimal worker id): the id a node with a stable instance id held last, so
// that it gets it back after a restart (shardkeeper's own node).
func WorkerIDHint(instanceID string) (string, error) { return join(HintRoot, instanceID) }

// ParseWorkerID parses a reservation or fence child name ("17") into a
// worker id, refusing anything outside [0, MaxWorkerID] or not canonical
// ("017", "+1").
func ParseWorkerID(name string) (int, error) {
	id, err := strconv.Atoi(name)
	if err != nil || strconv.Itoa(id) != name {
		return 0, fmt.Errorf("worker id %q is not a decimal number", name)
	}
	if err := checkWorkerID(id); err != nil {
		return 0, err
	}
	return id, nil
}

// Database is /metadata/{db}.
func Database(db string) (string, error) { return join(MetadataRoot, db) }

// Schema is /metadata/{db}/schemas/{schema}.
func Schema(db, schema string) (string, error) {
	d, err := Database(db)
	if err != nil {
		return "", err
	}
	return join(d+"/schemas", schema)
}

// Table is /metadata/{db}/schemas/{schema}/tables/{table} (versioned).
func Table(db, schema, table string) (string, error) {
	s, err := Schema(db, schema)
	if err != nil {
		return "", err
	}
	return join(s+"/tables", table)
}

// View is /metadata/{db}/schemas/{schema}/views/{view} (versioned).
func View(db, schema, view string) (string, error) {
	s, err := Schema(db, schema)
	if err != nil {
		return "", err
	}
	return join(s+"/views", view)
}

// Unit is /metadata/{db}/data_sources/units/{unit} (versioned).
func Unit(db, unit string) (string, error) {
	d, err := Database(db)
	if err != nil {
		return "", err
	}
	return join(d+"/data_sources/units", unit)
}

// GlobalRule is /rules/{ruleType} (versioned).
func GlobalRule(ruleType string) (string, error) { return join(GlobalRulesRoot, ruleType) }

// ActiveVersion is {node}/active_version of a versioned node.
func ActiveVersion(node string) string { return node + "/" + ActiveVersionName }

// Version is {node}/versions/{n} of a versioned node.
func Version(node string, n int) string { return node + "/" + VersionsName + "/" + strconv.Itoa(n) }

// Import returns the import mark of database db (ImportsRoot).
func Import(db string) (string, error) { return join(ImportsRoot, db) }

// PropsApplied is /nodes/props_applied/{instanceId}: what instanceID
// applied, its /props version first (ephemeral, see distvar.Ack).
func PropsApplied(instanceID string) (string, error) { return join(PropsAppliedRoot, instanceID) }

// ExclusiveOperation is /exclusive_operation/{name}, a lock path.
func ExclusiveOperation(name string) (string, error) { return join(ExclusiveRoot, name) }

// ShowProcessListTrigger is
// /nodes/compute_nodes/show_process_list_trigger/{instanceId}:{taskId}: the
// trigger asking instanceID to report its processes for taskID.
func ShowProcessListTrigger(instanceID, taskID string) (string, error) {
	return trigger(ShowProcessListTriggerRoot, instanceID, taskID)
}

// KillProcessTrigger is
// /nodes/compute_nodes/kill_process_trigger/{instanceId}:{processId}: the
// trigger asking instanceID to kill its process processID.
func KillProcessTrigger(instanceID, processID string) (string, error) {
	return trigger(KillProcessTriggerRoot, instanceID, processID)
}

// ParseTrigger splits a trigger's name (the last segment of a
// ShowProcessListTrigger or KillProcessTrigger key) into the instance id and
// the task or process id at its last ":", as ShardingSphere's handlers do.
// ok is false when either part is empty.
func ParseTrigger(name string) (instanceID, id string, ok bool) {
	i := strings.LastIndexByte(name, ':')
	if i <= 0 || i == len(name)-1 {
		return "", "", false
	}
	return name[:i], name[i+1:], true
}

// ExecutionTask is /execution_nodes/{taskId}: the answers to one SHOW
// PROCESSLIST task.
func ExecutionTask(taskID string) (string, error) {
	if err := checkTriggerID(taskID); err != nil {
		return "", err
	}
	return ExecutionNodesRoot + "/" + taskID, nil
}

// ExecutionNode is /execution_nodes/{taskId}/{instanceId}: instanceID's
// process list (YAML YamlProcessList) for taskID.
func ExecutionNode(taskID, instanceID string) (string, error) {
	t, err := ExecutionTask(taskID)
	if err != nil {
		return "", err
	}
	return join(t, instanceID)
}

// trigger is root/{instanceID}:{id}. The id may not contain ":", so that
// the name splits back into the same two parts (see ParseTrigger).
func trigger(root, instanceID, id string) (string, error) {
	if err := registry.ValidateName(instanceID); err != nil {
		return "", err
	}
	if err := checkTriggerID(id); err != nil {
		return "", err
	}
	return join(root, instanceID+":"+id)
}

func checkTriggerID(id string) error {
	if err := registry.ValidateName(id); err != nil {
		return err
	}
	if strings.Contains(id, ":") {
		return fmt.Errorf("%w: task or process id %q contains \":\"", registry.ErrBadKey, id)
	}
	return nil
}

// InstanceIDFrom returns the instance id of an online, status, worker_id or
// labels key, and which of them it is ("online", "status", "worker_id",
// "labels"). ok is false for any other key.
func InstanceIDFrom(key string) (kind, instanceID string, typ InstanceType, ok bool) {
	rest, found := strings.CutPrefix(key, ComputeNodes+"/")
	if !found {
		return "", "", "", false
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 3 && parts[0] == "online" && (parts[1] == string(Proxy) || parts[1] == string(JDBC)):
		return "online", parts[2], InstanceType(parts[1]), true
	case len(parts) == 2 && (parts[0] == "status" || parts[0] == "worker_id" || parts[0] == "labels"):
		return parts[0], parts[1], "", true
	}
	return "", "", "", false
}

func join(parent, name string) (string, error) {
	if err := registry.ValidateName(name); err != nil {
		return "", err
	}
	return parent + "/" + name, nil
}

func checkWorkerID(id int) error {
	if id < 0 || id > MaxWorkerID {
		return fmt.Errorf("worker id %d outside [0, %d]", id, MaxWorkerID)
	}
	return nil
}

// DatabaseRule is /metadata/{db}/rules/{ruleType} (the parent of a database
// rule's items, e.g. ruleType "sharding").
func DatabaseRule(db, ruleType string) (string, error) {
	d, err := Database(db)
	if err != nil {
		return "", err
	}
	return join(d+"/rules", ruleType)
}

// RuleItem is a database rule item (versioned): the unique item
// /metadata/{db}/rules/{ruleType}/{item} when name is "", else the named
// item /metadata/{db}/rules/{ruleType}/{item}/{name}. Item and name may not
// be "active_version" or "versions", which would make the key ambiguous.
func RuleItem(db, ruleType, item, name string) (string, error) {
	r, err := DatabaseRule(db, ruleType)
	if err != nil {
		return "", err
	}
	for _, s := range []string{item, name} {
		if s == ActiveVersionName || s == VersionsName {
			return "", fmt.Errorf("%w: rule item name %q is reserved", registry.ErrBadKey, s)
		}
	}
	p, err := join(r, item)
	if err != nil || name == "" {
		return p, err
	}
	return join(p, name)
}

// Kinds of keys under /metadata, /rules, /props and /states that
// ParseKey recognises.
const (
	KindDatabase     = "database"      // /metadata/{db}
	KindSchema       = "schema"        // /metadata/{db}/schemas/{schema}
	KindTable        = "table"         // .../schemas/{schema}/tables/{table}[/...]
	KindView         = "view"          // .../schemas/{schema}/views/{view}[/...]
	KindUnit         = "unit"          // /metadata/{db}/data_sources/units/{unit}[/...]
	KindRuleItem     = "rule_item"     // /metadata/{db}/rules/{type}/{item}[/{name}][/...]
	KindRuleType     = "rule"          // /metadata/{db}/rules/{type}
	KindGlobalRule   = "global_rule"   // /rules/{type}[/...]
	KindProps        = "props"         // /props[/...]
	KindClusterState = "cluster_state" // /states/cluster_state
	// KindDatabaseListener is /states/database_listener_coordinator/{db}
	// or, written by 5.5.0-5.5.2, /states/listener_assisted/{db}.
	KindDatabaseListener = "database_listener"
)

// Key is a parsed metadata, rule, props or state key (see ParseKey).
type Key struct {
	Kind     string // one of the Kind constants
	Database string // for keys under /metadata/{db}
	Schema   string // tables, views and schemas
	Name     string // table, view, unit or global rule type
	RuleType string // database rules: "sharding", "broadcast", ...
	RuleItem string // database rules: "tables", "default_table_strategy", ...
	ItemName string // database rules: the named item's key ("t_order"); "" for unique items
	// Node is the versioned node itself, e.g. /metadata/db/schemas/s/tables/t.
	Node string
	// Leaf is "" for the node itself, ActiveVersionName for its
	// active_version, VersionsName for one of its versions.
	Leaf    string
	Version int // the N of versions/N; -1 otherwise
}

// ParseKey recognises the keys shardkeeper and ShardingSphere write under
// /metadata, /rules, /props, /states/cluster_state and the database
// listener coordinator, in every Layout: a 5.5.2 sharding default
// (rules/sharding/default_strategies/{item}) parses as the unique item
// {item}, its Node the key's own node. ok is false for any other key
// (including unknown subtrees and malformed version numbers).
func ParseKey(key string) (k Key, ok bool) {
	k.Version = -1
	if key == ClusterState {
		k.Kind, k.Node = KindClusterState, key
		return k, true
	}
	segs := strings.Split(strings.TrimPrefix(key, "/"), "/")
	if len(segs) == 0 || strings.HasPrefix(key, "//") {
		return k, false
	}
	for _, root := range []string{DatabaseListenerRoot, DatabaseListenerRoot552} {
		if db, ok := strings.CutPrefix(key, root+"/"); ok {
			if db == "" || strings.Contains(db, "/") {
				return k, false
			}
			k.Kind, k.Database, k.Node = KindDatabaseListener, db, key
			return k, true
		}
	}
	// leaf splits a versioned node's suffix off segs[i:].
	leaf := func(base int) bool {
		rest := segs[base:]
		k.Node = "/" + strings.Join(segs[:base], "/")
		switch {
		case len(rest) == 0:
			return true
		case len(rest) == 1 && rest[0] == ActiveVersionName:
			k.Leaf = ActiveVersionName
			return true
		case len(rest) == 2 && rest[0] == VersionsName:
			n, err := strconv.Atoi(rest[1])
			if err != nil || n < 0 || strconv.Itoa(n) != rest[1] {
				return false
			}
			k.Leaf, k.Version = VersionsName, n
			return true
		}
		return false
	}
	switch segs[0] {
	case "props":
		k.Kind = KindProps
		return k, leaf(1)
	case "rules":
		if len(segs) < 2 || segs[1] == "" {
			return k, false
		}
		k.Kind, k.Name = KindGlobalRule, segs[1]
		return k, leaf(2)
	case "metadata":
	default:
		return k, false
	}
	if len(segs) < 2 || segs[1] == "" {
		return k, false
	}
	k.Database = segs[1]
	if len(segs) == 2 {
		k.Kind, k.Node = KindDatabase, key
		return k, true
	}
	switch segs[2] {
	case "schemas":
		if len(segs) < 4 {
			return k, false
		}
		k.Schema = segs[3]
		if len(segs) == 4 {
			k.Kind, k.Node = KindSchema, key
			return k, true
		}
		if len(segs) < 6 {
			return k, false
		}
		switch segs[4] {
		case "tables":
			k.Kind = KindTable
		case "views":
			k.Kind = KindView
		default:
			return k, false
		}
		k.Name = segs[5]
		return k, leaf(6)
	case "data_sources":
		if len(segs) < 5 || segs[3] != "units" {
			return k, false
		}
		k.Kind, k.Name = KindUnit, segs[4]
		return k, leaf(5)
	case "rules":
		if len(segs) < 4 {
			return k, false
		}
		k.RuleType = segs[3]
		if len(segs) == 4 {
			k.Kind, k.Node = KindRuleType, key
			return k, true
		}
		k.Kind, k.RuleItem = KindRuleItem, segs[4]
		if k.RuleItem == ActiveVersionName || k.RuleItem == VersionsName {
			return k, false
		}
		if k.RuleType == "sharding" && k.RuleItem == DefaultStrategiesItem {
			// Layout552: default_strategies/{item} is the unique item
			// {item}.
			if len(segs) < 6 || !shardingDefaults[segs[5]] {
				return k, false
			}
			k.RuleItem = segs[5]
			return k, leaf(6)
		}
		base := 5
		if len(segs) > 5 && segs[5] != ActiveVersionName && segs[5] != VersionsName {
			k.ItemName = segs[5]
			base = 6
		}
		return k, leaf(base)
	}
	return k, false
}
