package workerid

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// BaselineAcquire is ShardingSphere's worker id assignment
// (ClusterWorkerIdGenerator, ReservationPersistService and
// ClusterComputeNodePersistService), kept only as the baseline of the
// worker-id benchmark (tools/workeridbench). Never use it to run a
// node: it takes no fence, so it gives none of Acquire's guarantees.
//
// It follows upstream step by step over the registry contract, one call
// per upstream repository call:
//  1. loadWorkerId: Get /nodes/compute_nodes/worker_id/{instanceID}; a
//     decimal value there is returned as is.
//  2. getAssignedWorkerIds: Children of /nodes/compute_nodes/worker_id,
//     then a Get of every child's value, one by one (a child gone meanwhile
//     is skipped, like upstream's null value).
//  3. the lowest id in [0, 1024) not among those values (reservations are
//     not consulted); none left is ErrExhausted (upstream: a
//     NullPointerException from checkNotNull).
//  4. persistExclusiveEphemeral /reservation/worker_id/{id}; ErrExists
//     starts again at step 2, with no sleep and no attempt limit.
//  5. persistEphemeral /nodes/compute_nodes/worker_id/{instanceID} = id.
//
// Differences from upstream: the exclusive create is exclusive on every
// backend (upstream's etcd repository does a plain put there, so upstream
// on etcd never conflicts and hands out duplicate ids); a registry error
// other than ErrExists is returned instead of being retried forever; a
// non-numeric worker_id value is an error, as upstream's
// NumberFormatException. stats, when not nil, counts lost reservations
// (conflicts).
func BaselineAcquire(ctx context.Context, repo registry.Repository, sess registry.Session, instanceID string, stats *Stats) (int, error) {
	nodeKey, err := paths.WorkerID(instanceID)
	if err != nil {
		return 0, err
	}
	var conflicts int64
	defer func() { stats.add(conflicts) }()

	kv, err := repo.Get(ctx, nodeKey)
	switch {
	case err == nil:
		if id, perr := strconv.Atoi(string(kv.Value)); perr == nil {
			return id, nil
		}
	case !errors.Is(err, registry.ErrNotFound):
		return 0, fmt.Errorf("baseline worker id: load: %w", err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("baseline worker id: %w", err)
		}
		names, err := repo.Children(ctx, paths.WorkerIDRoot)
		if err != nil {
			return 0, fmt.Errorf("baseline worker id: children: %w", err)
		}
		assigned := make(map[int]bool, len(names))
		for _, name := range names {
			key := paths.WorkerIDRoot + "/" + name
			kv, err := repo.Get(ctx, key)
			if errors.Is(err, registry.ErrNotFound) || (err == nil && len(kv.Value) == 0) {
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("baseline worker id: get %s: %w", key, err)
			}
			id, err := strconv.Atoi(string(kv.Value))
			if err != nil {
				return 0, fmt.Errorf("baseline worker id: %s: %w", key, err)
			}
			assigned[id] = true
		}
		if len(assigned) > Count {
			return 0, ErrExhausted
		}
		id := -1
		for c := 0; c < Count; c++ {
			if !assigned[c] {
				id = c
				break
			}
		}
		if id < 0 {
			return 0, ErrExhausted
		}
		res, _ := paths.Reservation(id)
		err = sess.CreateExclusiveEphemeral(ctx, res, []byte(instanceID))
		if errors.Is(err, registry.ErrExists) {
			conflicts++
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("baseline worker id: reserve %d: %w", id, err)
		}
		err = sess.PutEphemeral(ctx, nodeKey, []byte(strconv.Itoa(id)))
		if err != nil {
			return 0, fmt.Errorf("baseline worker id: persist %d: %w", id, err)
		}
		return id, nil
	}
}
