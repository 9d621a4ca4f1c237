package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// DefaultTimeout is how long Collect and Kill wait for the instances'
// answers when given no timeout: ShardingSphere's
// ProcessOperationLock.TIMEOUT_MILLIS.
const DefaultTimeout = 5 * time.Second

// InstanceList is one instance's processes in a Collection.
type InstanceList struct {
	InstanceID string
	Processes  []Process
}

// Collection is the result of Collect.
type Collection struct {
	// Answered are the instances that answered, with their processes
	// (none for an instance that has none), sorted by instance id.
	Answered []InstanceList
	// Unanswered are the online instances that did not answer within the
	// timeout, sorted.
	Unanswered []string
}

// Processes returns every answered instance's processes, in Answered's
// order: ShardingSphere's merged SHOW PROCESSLIST.
func (c Collection) Processes() []Process {
	var out []Process
	for _, l := range c.Answered {
		out = append(out, l.Processes...)
	}
	return out
}

// Collect asks every online instance (proxy and JDBC, this one included)
// for its processes, as ShardingSphere's ClusterProcessPersistService
// does: it writes a show_process_list_trigger for each under a new task
// id, waits until each trigger is deleted or timeout (DefaultTimeout when
// 0) passes, reads the lists under /execution_nodes/{taskId}, then deletes
// them and the triggers nobody answered. An instance whose trigger is still
// there at the timeout is named in Unanswered. ctx bounds the whole call;
// the clean-up runs even when ctx has ended.
func Collect(ctx context.Context, repo registry.Repository, timeout time.Duration) (Collection, error) {
	taskID := newTaskID()
	task, err := paths.ExecutionTask(taskID)
	if err != nil {
		return Collection{}, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = repo.Delete(cctx, task)
	}()
	answered, unanswered, err := ask(ctx, repo, paths.ShowProcessListTrigger, taskID, timeout)
	if err != nil {
		return Collection{}, err
	}
	// One answer per online instance; what else is under the task (a
	// co-tenant's writes) is cut at the limits.
	kvs, _, err := registry.ListLimited(ctx, repo, task, registry.Limits{Rows: 4096, Bytes: 32 << 20})
	if err != nil {
		return Collection{}, fmt.Errorf("process list: read %s: %w", task, err)
	}
	lists := map[string][]Process{}
	for _, kv := range kvs {
		if len(kv.Value) == 0 {
			continue // a parent written by the backend
		}
		l, err := ParseList(kv.Value)
		if err != nil {
			return Collection{}, fmt.Errorf("process list: %s: %w", kv.Key, err)
		}
		lists[registry.Base(kv.Key)] = l.Processes
	}
	c := Collection{Unanswered: unanswered}
	for _, id := range answered {
		c.Answered = append(c.Answered, InstanceList{InstanceID: id, Processes: lists[id]})
	}
	return c, nil
}

// Kill asks every online instance to kill processID, as ShardingSphere's
// ClusterProcessPersistService.killProcess does: it writes a
// kill_process_trigger for each, waits until each is deleted or timeout
// (DefaultTimeout when 0) passes, and deletes the triggers nobody
// answered. It returns the online instances that did not answer, sorted.
// The protocol does not say which instance had the process. processID may
// not contain ":" (registry.ErrBadKey). ctx bounds the whole call; the
// clean-up runs even when ctx has ended.
func Kill(ctx context.Context, repo registry.Repository, processID string, timeout time.Duration) (unanswered []string, err error) {
	_, unanswered, err = ask(ctx, repo, paths.KillProcessTrigger, processID, timeout)
	return unanswered, err
}

// ask writes trigger(instance, id) for every online instance and waits
// until each is deleted or timeout passes; it deletes the triggers left.
func ask(ctx context.Context, repo registry.Repository, trigger func(instanceID, id string) (string, error), id string, timeout time.Duration) (answered, unanswered []string, err error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	instances, err := onlineInstances(ctx, repo)
	if err != nil {
		return nil, nil, err
	}
	keys := make(map[string]string, len(instances)) // trigger key -> instance
	var root string
	for _, inst := range instances {
		k, err := trigger(inst, id)
		if err != nil {
			return nil, nil, err
		}
		keys[k], root = inst, path.Dir(k)
	}
	if len(keys) == 0 {
		return nil, nil, nil
	}
	pending := make(map[string]bool, len(keys))
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for k := range pending {
			_ = repo.Delete(cctx, k)
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The watch is set up before the triggers are written, so that it sees
	// their deletions; without it wait only reads the triggers.
	_, changes, err := repo.Watch(wctx, root)
	if err == nil {
		defer func() {
			cancel()
			for range changes { // closed once wctx has ended
			}
		}()
	}
	for k := range keys {
		pending[k] = true
		if _, err := repo.Put(wctx, k, []byte{}); err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			if wctx.Err() != nil {
				break
			}
			return nil, nil, fmt.Errorf("process triggers: write %s: %w", k, err)
		}
	}
	wait(wctx, repo, changes, pending)
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for k, inst := range keys {
		if pending[k] {
			unanswered = append(unanswered, inst)
		} else {
			answered = append(answered, inst)
		}
	}
	slices.Sort(answered)
	slices.Sort(unanswered)
	return answered, unanswered, nil
}

// wait removes the keys from pending as they are deleted, until none is
// left or ctx ends. A deletion is seen on changes or, every 100 ms, by
// reading the pending keys: a watch may coalesce a trigger's creation and
// deletion into nothing (ZooKeeper), and may be lost.
func wait(ctx context.Context, repo registry.Repository, changes <-chan registry.Event, pending map[string]bool) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-changes: // never ready once changes is nil
			switch {
			case !ok || ev.Err != nil:
				changes = nil // closed, or closed right after this event
			case ev.Type == registry.EventDelete:
				delete(pending, ev.KV.Key)
			}
		case <-tick.C:
			for k := range pending {
				if ok, err := registry.Exists(ctx, repo, k); err == nil && !ok {
					delete(pending, k)
				}
			}
		}
	}
}

// onlineInstances returns the ids under the online roots of both instance
// types, as ShardingSphere lists them.
func onlineInstances(ctx context.Context, repo registry.Repository) ([]string, error) {
	var out []string
	for _, typ := range []paths.InstanceType{paths.Proxy, paths.JDBC} {
		ids, err := repo.Children(ctx, paths.OnlineRoot+"/"+string(typ))
		if err != nil {
			return nil, fmt.Errorf("process triggers: list online instances: %w", err)
		}
		out = append(out, ids...)
	}
	return out, nil
}

// newTaskID returns a random UUID without hyphens, as ShardingSphere names
// a SHOW PROCESSLIST task.
func newTaskID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
