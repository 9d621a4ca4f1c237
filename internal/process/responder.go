package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/retry"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Config configures a Responder.
type Config struct {
	// InstanceID is the instance whose triggers the Responder answers.
	InstanceID string
	// Table holds the instance's processes; nil means none (every SHOW
	// PROCESSLIST is answered with no list, every KILL finds nothing).
	Table *Table
	// Logger receives failed answers; nil means slog.Default().
	Logger *slog.Logger
}

// answerWorkers bounds the triggers answered at once.
const answerWorkers = 8

// answerTimeout bounds the registry writes of one answer, retries
// included: after it the asker has given up anyway (it waits 5 s).
const answerTimeout = 5 * time.Second

// Responder answers the SHOW PROCESSLIST and KILL triggers addressed to one
// instance, as ShardingSphere's ClusterProcessPersistCoordinator does: for
// a show_process_list_trigger it writes the instance's processes to
// /execution_nodes/{taskId}/{instanceId} when there are any, then deletes
// the trigger; for a kill_process_trigger it kills the process when the
// Table has it, then deletes the trigger. Triggers addressed to other
// instances are left alone. Triggers already present when it starts are
// answered too.
//
// An answer follows the trigger's creation by the registry's watch delay
// plus two writes (a few milliseconds on a local etcd or ZooKeeper). A lost
// watch is re-established with a backoff, and the triggers present then are
// answered. Answers run on at most 8 goroutines at once.
type Responder struct {
	repo   registry.Repository
	cfg    Config
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup // watch loops and answers
	sem    chan struct{}

	mu       sync.Mutex
	inFlight map[string]bool // trigger keys being answered
}

// Open starts answering cfg.InstanceID's triggers on repo. It returns once
// both trigger roots are watched, so a trigger written after Open returns
// is answered; ctx bounds only that. It fails when cfg.InstanceID is not a
// valid name or a watch cannot be set up. Close stops it.
func Open(ctx context.Context, repo registry.Repository, cfg Config) (*Responder, error) {
	if err := registry.ValidateName(cfg.InstanceID); err != nil {
		return nil, fmt.Errorf("process responder: instance id: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	runCtx, cancel := context.WithCancel(context.Background())
	r := &Responder{repo: repo, cfg: cfg, log: log, cancel: cancel, sem: make(chan struct{}, answerWorkers), inFlight: map[string]bool{}}
	// A watch lives as long as the ctx it was set up with, so it gets
	// runCtx, which ctx ends only while Open runs.
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	for _, root := range []string{paths.ShowProcessListTriggerRoot, paths.KillProcessTriggerRoot} {
		initial, changes, err := repo.Watch(runCtx, root)
		if err != nil {
			r.Close()
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return nil, fmt.Errorf("process responder: watch %s: %w", root, err)
		}
		r.wg.Add(1)
		go r.follow(runCtx, root, initial, changes)
	}
	if !stop() {
		r.Close()
		return nil, fmt.Errorf("process responder: %w", ctx.Err())
	}
	return r, nil
}

// Close stops watching and waits for the answers in flight. Triggers that
// arrive later stay until their asker deletes them. Idempotent.
func (r *Responder) Close() {
	r.cancel()
	r.wg.Wait()
}

// follow answers the triggers of initial and changes, and watches root
// again whenever the watch is lost, until ctx ends.
func (r *Responder) follow(ctx context.Context, root string, initial []registry.KV, changes <-chan registry.Event) {
	defer r.wg.Done()
	for attempt := 0; ; {
		for _, kv := range initial {
			r.dispatch(ctx, root, kv.Key)
		}
		for ev := range changes {
			if ev.Err == nil && ev.Type == registry.EventPut {
				r.dispatch(ctx, root, ev.KV.Key)
			}
		}
		for {
			if !retry.Sleep(ctx, retry.Backoff(attempt, 50*time.Millisecond, 5*time.Second)) {
				return
			}
			var err error
			initial, changes, err = r.repo.Watch(ctx, root)
			if err == nil {
				attempt = 0
				break
			}
			if ctx.Err() != nil || errors.Is(err, registry.ErrClosed) {
				return
			}
			r.log.Warn("process triggers: watch failed", "root", root, "err", err)
			attempt++
		}
	}
}

// dispatch answers key on a goroutine of its own when it is a trigger
// addressed to this instance that is not already being answered.
func (r *Responder) dispatch(ctx context.Context, root, key string) {
	if path.Dir(key) != root {
		return
	}
	inst, id, ok := paths.ParseTrigger(path.Base(key))
	if !ok || inst != r.cfg.InstanceID {
		return
	}
	r.mu.Lock()
	if r.inFlight[key] {
		r.mu.Unlock()
		return
	}
	r.inFlight[key] = true
	r.mu.Unlock()
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		r.done(key)
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() { <-r.sem }()
		defer r.done(key)
		actx, cancel := context.WithTimeout(ctx, answerTimeout)
		defer cancel()
		var err error
		if root == paths.ShowProcessListTriggerRoot {
			err = r.report(actx, key, id)
		} else {
			err = r.kill(actx, key, id)
		}
		if err != nil && ctx.Err() == nil {
			r.log.Warn("process triggers: no answer", "trigger", key, "err", err)
		}
	}()
}

func (r *Responder) done(key string) {
	r.mu.Lock()
	delete(r.inFlight, key)
	r.mu.Unlock()
}

// report writes the instance's processes for taskID, when it has any, and
// deletes the trigger.
func (r *Responder) report(ctx context.Context, trigger, taskID string) error {
	var procs []Process
	if r.cfg.Table != nil {
		procs = r.cfg.Table.List()
	}
	if len(procs) > 0 {
		node, err := paths.ExecutionNode(taskID, r.cfg.InstanceID)
		if err != nil {
			return err
		}
		value := List{Processes: procs}.Marshal()
		if err := persist(ctx, func() error { _, err := r.repo.Put(ctx, node, value); return err }); err != nil {
			return err
		}
	}
	return persist(ctx, func() error { return r.repo.Delete(ctx, trigger) })
}

// kill kills processID when the table has it and deletes the trigger.
func (r *Responder) kill(ctx context.Context, trigger, processID string) error {
	if r.cfg.Table != nil {
		r.cfg.Table.Kill(processID)
	}
	return persist(ctx, func() error { return r.repo.Delete(ctx, trigger) })
}

// persist runs write until it succeeds, retrying failures other than a
// bad key or a closed repository with a short backoff until ctx ends.
func persist(ctx context.Context, write func() error) error {
	for attempt := 0; ; attempt++ {
		err := write()
		if err == nil || errors.Is(err, registry.ErrBadKey) || errors.Is(err, registry.ErrClosed) {
			return err
		}
		if !retry.Sleep(ctx, retry.Backoff(attempt, 20*time.Millisecond, time.Second)) {
			return err
		}
	}
}
