// Package paths builds every registry path shardkeeper reads or writes, in
// this one file, with ShardingSphere master's layout. Functions that take a
// name (instance id, database, schema, table, ...) validate it with
// registry.ValidateName first, so a name that would escape its path is an
// error before it becomes a key.
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
	ComputeNodes      = "/nodes/compute_nodes"
	OnlineRoot        = "/nodes/compute_nodes/online"
	StatusRoot        = "/nodes/compute_nodes/status"
	WorkerIDRoot      = "/nodes/compute_nodes/worker_id"
	LabelsRoot        = "/nodes/compute_nodes/labels"
	ReservationRoot   = "/reservation/worker_id"
	FenceRoot         = "/reservation/worker_id_fence"
	MetadataRoot      = "/metadata"
	GlobalRulesRoot   = "/rules"
	PropsRoot         = "/props"
	StatesRoot        = "/states"
	ClusterState      = "/states/cluster_state"
	ExclusiveRoot     = "/exclusive_operation"
	ActiveVersionName = "active_version"
	VersionsName      = "versions"
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
// by compare-and-set; shardkeeper's own node, see DESIGN.md).
func Fence(workerID int) (string, error) {
	if err := checkWorkerID(workerID); err != nil {
		return "", err
	}
	return FenceRoot + "/" + strconv.Itoa(workerID), nil
}

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

// ExclusiveOperation is /exclusive_operation/{name}, a lock path.
func ExclusiveOperation(name string) (string, error) { return join(ExclusiveRoot, name) }

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
