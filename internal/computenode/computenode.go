// Package computenode is the administration of compute nodes shared by the
// CLI and the HTTP API: SHOW COMPUTE NODES rows read from the registry and
// ENABLE / DISABLE COMPUTE NODE with ShardingSphere's checks and codes.
package computenode

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Row is one row of ShardingSphere's SHOW COMPUTE NODES; the JSON names
// are its column names (the HTTP API and the admin CLI print it).
type Row struct {
	InstanceID   string   `json:"instance_id"`
	InstanceType string   `json:"instance_type"` // PROXY or JDBC
	Host         string   `json:"host"`
	Port         int      `json:"port"` // -1 for JDBC
	Status       string   `json:"status"`
	ModeType     string   `json:"mode_type"`
	WorkerID     int      `json:"worker_id"` // -1 when none
	Version      string   `json:"version"`
	DatabaseName string   `json:"database_name"`
	Labels       []string `json:"labels,omitempty"`
}

// RowOf returns inst as SHOW COMPUTE NODES shows it, for a cluster in
// modeType ("Cluster" or "Standalone"): an instance with no status node is
// OK (ShardingSphere's initial state).
func RowOf(inst cluster.Instance, modeType string) Row {
	r := Row{
		InstanceID: inst.ID, InstanceType: strings.ToUpper(inst.Type), Host: inst.Host, Port: inst.Port,
		Status: inst.Status, ModeType: modeType, WorkerID: inst.WorkerID, Version: inst.Version,
		DatabaseName: inst.DatabaseName, Labels: inst.Labels,
	}
	if r.Status == "" {
		r.Status = "OK"
	}
	if inst.Type == cluster.TypeJDBC {
		r.Port = -1
	}
	return r
}

// SetState is ENABLE (enable true) or DISABLE COMPUTE NODE id with
// ShardingSphere's checks: id must be online; DISABLE refuses self (the
// caller's own instance id, "" for none) and a node already disabled. It
// writes the status node with a compare-and-set through a short session,
// which keeps the node's own ownership of that ephemeral key (etcd: its
// lease; ZooKeeper: its session), so the status still vanishes with the
// node. It returns the status written (OK or CIRCUIT_BREAK); refusals are
// ShardingSphere's UnsupportedSQLOperationException (sqlerr.Unsupported,
// code 30001) with its texts: of kind sqlerr.NotFound for an id not
// online, sqlerr.Invalid for self, sqlerr.Conflict for a node already
// disabled, without a status node yet, or whose status changed meanwhile
// (the last two may succeed when retried).
func SetState(ctx context.Context, repo registry.Repository, id string, enable bool, self string) (string, error) {
	refuse := func(kind sqlerr.Kind, reason string) (string, error) {
		return "", sqlerr.Unsupported(kind, reason)
	}
	if registry.ValidateName(id) != nil {
		return refuse(sqlerr.NotFound, "`"+id+"` does not exist")
	}
	if online, err := isOnline(ctx, repo, id); err != nil {
		return "", err
	} else if !online {
		return refuse(sqlerr.NotFound, "`"+id+"` does not exist")
	}
	statusKey, _ := paths.Status(id)
	cur, err := repo.Get(ctx, statusKey)
	if errors.Is(err, registry.ErrNotFound) {
		return refuse(sqlerr.Conflict, fmt.Sprintf("compute node %s has no status node yet; retry in a moment", id))
	} else if err != nil {
		return "", err
	}
	want := "OK"
	if !enable {
		if id == self {
			return refuse(sqlerr.Invalid, "`"+id+"` is the currently in use instance and cannot be disabled")
		}
		if string(cur.Value) == "CIRCUIT_BREAK" {
			return refuse(sqlerr.Conflict, "`"+id+"` compute node has been disabled")
		}
		want = "CIRCUIT_BREAK"
	}
	if string(cur.Value) == want {
		return want, nil
	}
	sess, err := repo.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		return "", err
	}
	defer sess.Close(context.WithoutCancel(ctx))
	_, err = sess.Commit(ctx, registry.Txn{
		Conds: []registry.Cond{{Key: statusKey, Version: cur.Version}},
		Ops:   []registry.Op{{Key: statusKey, Value: []byte(want)}},
	})
	if errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrNotFound) {
		return refuse(sqlerr.Conflict, fmt.Sprintf("the status of compute node %s changed meanwhile (or it left); retry", id))
	}
	return want, err
}

// isOnline reports whether id has an online node (proxy or jdbc).
func isOnline(ctx context.Context, repo registry.Repository, id string) (bool, error) {
	for _, typ := range []paths.InstanceType{paths.Proxy, paths.JDBC} {
		key, _ := paths.Online(typ, id) // id is validated
		if ok, err := registry.Exists(ctx, repo, key); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// Readers returns the ShardingSphere nodes among instances (a node's
// membership view), for the layout checks (metadata.ReadersOf).
func Readers(instances []cluster.Instance) []metadata.Reader {
	members := make([]metadata.Member, len(instances))
	for i, inst := range instances {
		members[i] = metadata.Member{InstanceID: inst.ID, Version: inst.Version}
	}
	return metadata.ReadersOf(members)
}
