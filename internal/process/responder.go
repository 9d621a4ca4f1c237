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
	// AnswerTTL is how long an answer may wait for its asker, which reads
	// and deletes it within its own timeout (DefaultTimeout): after it the
	// Responder deletes the answer itself. Zero means DefaultAnswerTTL.
	AnswerTTL time.Duration
}

// DefaultAnswerTTL is Config.AnswerTTL's default: twice the asker's wait.
const DefaultAnswerTTL = 2 * DefaultTimeout

// maxAnswers bounds the answers of one Responder waiting for their askers:
// a trigger past it is deleted without an answer (its asker, if any, sees
// the instance answer with no processes), so that a flood of forged
// triggers leaves at most this many execution nodes, each for AnswerTTL.
const maxAnswers = 256

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
// Only triggers that can name a real task are answered: the task id must
// be what ShardingSphere's and this package's askers make (32 lower-case
// hex digits, a UUID without dashes); another is deleted without an
// answer. Every answer is removed by the Responder itself after
// Config.AnswerTTL unless its asker removed it, at most maxAnswers wait at
// once, and answers of this instance left from before Open (a node killed
// before its asker collected) are removed by Open, so forged triggers
// cannot pile up execution nodes.
//
// An answer follows the trigger's creation by the registry's watch delay
// plus two writes (a few milliseconds on a local etcd or ZooKeeper). A lost
// watch is re-established with a backoff, and the triggers present then are
// answered. Answers run on at most 8 goroutines at once.
type Responder struct {
	repo   registry.Repository
	cfg    Config
	log    *slog.Logger
	life   context.Context // ended by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // watch loops and answers
	sem    chan struct{}

	mu       sync.Mutex
	inFlight map[string]bool // trigger keys being answered
	answers  map[string]bool // answers written by this run and not yet removed
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
	if cfg.AnswerTTL <= 0 {
		cfg.AnswerTTL = DefaultAnswerTTL
	}
	runCtx, cancel := context.WithCancel(context.Background())
	r := &Responder{repo: repo, cfg: cfg, log: log, cancel: cancel, sem: make(chan struct{}, answerWorkers), inFlight: map[string]bool{}, answers: map[string]bool{}}
	r.life = runCtx
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := r.removeStale(runCtx); err != nil && runCtx.Err() == nil {
			log.Warn("process triggers: stale answers of an earlier run not removed", "err", err)
		}
	}()
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

// report writes the instance's processes for taskID, when it has any and
// taskID can be a real task, and deletes the trigger. The answer is
// removed after Config.AnswerTTL unless the asker removed it.
func (r *Responder) report(ctx context.Context, trigger, taskID string) error {
	var procs []Process
	if r.cfg.Table != nil && isTaskID(taskID) {
		procs = r.cfg.Table.List()
	}
	if len(procs) > 0 {
		node, err := paths.ExecutionNode(taskID, r.cfg.InstanceID)
		if err != nil {
			return err
		}
		if r.reserveAnswer(node) {
			value := List{Processes: procs}.Marshal()
			err := persist(ctx, func() error { _, err := r.repo.Put(ctx, node, value); return err })
			r.expire(node) // also after a failed write, which may have been applied
			if err != nil {
				return err
			}
		}
	}
	return persist(ctx, func() error { return r.repo.Delete(ctx, trigger) })
}

// isTaskID reports whether id is a task id as askers make them: 32
// lower-case hex digits (ShardingSphere's UUID without dashes, newTaskID).
func isTaskID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// reserveAnswer records the answer at node as waiting for its asker,
// unless maxAnswers are (or node already is).
func (r *Responder) reserveAnswer(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.answers) >= maxAnswers || r.answers[node] {
		return false
	}
	r.answers[node] = true
	return true
}

// expire deletes the answer at node after Config.AnswerTTL (a missing one
// is no error), or at Close.
func (r *Responder) expire(node string) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		timer := time.NewTimer(r.cfg.AnswerTTL)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.life.Done():
		}
		ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
		defer cancel()
		if err := r.repo.Delete(ctx, node); err != nil && !errors.Is(err, registry.ErrClosed) {
			r.log.Warn("process triggers: stale answer not removed", "key", node, "err", err)
		}
		r.mu.Lock()
		delete(r.answers, node)
		r.mu.Unlock()
	}()
}

// removeStale deletes this instance's answers under every task: left by
// an earlier run of the instance, no asker waits for them. It runs in the
// background from Open; ctx bounds it.
func (r *Responder) removeStale(ctx context.Context) error {
	tasks, err := r.repo.Children(ctx, paths.ExecutionNodesRoot)
	if err != nil {
		return err
	}
	for _, task := range tasks {
		node, err := paths.ExecutionNode(task, r.cfg.InstanceID)
		if err != nil {
			continue // not a task this layout writes
		}
		// Under mu, so that an answer of this run is never removed.
		r.mu.Lock()
		if !r.answers[node] {
			err = r.repo.Delete(ctx, node)
		}
		r.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
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
