package distvar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/retry"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Holder holds the registry session an acknowledgement lives in: the
// node it acknowledges for. *cluster.Node implements it.
type Holder interface {
	// Session is the node's registry session now, nil while it holds none.
	Session() registry.Session
	// OnSession calls f with the current session and with each later one.
	OnSession(ctx context.Context, f func(ctx context.Context, sess registry.Session) error) (remove func(), err error)
}

// AckerConfig configures an Acker.
type AckerConfig struct {
	// InstanceID is the node whose acknowledgement the Acker publishes.
	InstanceID string
	// Node holds the session the acknowledgement lives in.
	Node Holder
	// Store is the node's metadata store; its Snapshot.PropsVersion is
	// what the Acker reports.
	Store *metadata.Store
	// Logger receives failed writes; nil means slog.Default().
	Logger *slog.Logger
}

// Acker publishes what a node's metadata store applied (see Ack: the
// /props version, each database's rules digest and the global rules'), at
// /nodes/props_applied/{instanceId}, in an ephemeral key of the node's
// session: it writes it when it starts and again after every snapshot
// that changes it. The key goes with the
// session (the node closed, or the process gone for the TTL); when the
// node holds a new session after losing one, the key is written again in
// it (Node.OnSession) before the node counts as back.
type Acker struct {
	repo   registry.Repository
	key    string
	cfg    AckerConfig
	log    *slog.Logger
	remove func()
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	sess    registry.Session // the session written holds
	written string           // the acknowledgement written in sess
}

// StartAcker starts publishing cfg.Store's applied props version in
// cfg.Node's session and returns once the first acknowledgement is
// written (unless the node holds no session now: then it is written with
// the node's next one), so that Set counts the node from then on. ctx
// bounds only that first write. Close stops it; repo is what Close
// withdraws the acknowledgement with.
func StartAcker(ctx context.Context, repo registry.Repository, cfg AckerConfig) (*Acker, error) {
	key, err := paths.PropsApplied(cfg.InstanceID)
	if err != nil {
		return nil, fmt.Errorf("props acknowledgement: instance id: %w", err)
	}
	if cfg.Store == nil {
		return nil, errors.New("props acknowledgement: no metadata store")
	}
	if cfg.Node == nil {
		return nil, errors.New("props acknowledgement: no node")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	a := &Acker{repo: repo, key: key, cfg: cfg, log: log, written: "", done: make(chan struct{})}
	remove, err := cfg.Node.OnSession(ctx, a.write)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	a.remove, a.cancel = remove, cancel
	go a.run(runCtx)
	return a, nil
}

// Close stops publishing and withdraws the acknowledgement (deletes the
// key, if the node's session has not taken it along already).
// Idempotent.
func (a *Acker) Close() {
	a.cancel()
	<-a.done
	a.remove()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sess != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.repo.Delete(ctx, a.key); err != nil && !errors.Is(err, registry.ErrNotFound) && !errors.Is(err, registry.ErrClosed) {
			a.log.Warn("props acknowledgement: withdraw", "key", a.key, "err", err)
		}
		a.sess = nil
	}
}

// write publishes the acknowledgement of the store's current snapshot in
// sess.
func (a *Acker) write(ctx context.Context, sess registry.Session) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	v := a.ack(a.cfg.Store.Current())
	if err := sess.PutEphemeral(ctx, a.key, []byte(v)); err != nil {
		return fmt.Errorf("props acknowledgement: write %s: %w", a.key, err)
	}
	a.sess, a.written = sess, v
	return nil
}

// ack is the acknowledgement of snap: its props version, each database's
// rules digest (the one the store keeps up to date item by item, O(1)
// here) and the global rules' digest. a.mu is held.
func (a *Acker) ack(snap *metadata.Snapshot) string {
	out := Ack{Props: snap.PropsVersion, Rules: map[string]string{}}
	for name, db := range snap.Databases {
		if d := db.RulesDigest(); d != "" {
			out.Rules[name] = d
		}
	}
	if d := metadata.GlobalRulesDigest(snap.GlobalRules); d != "" {
		out.Rules[GlobalRules] = d
	}
	return out.String()
}

// pending reports whether snap's acknowledgement differs from the one
// written.
func (a *Acker) pending(snap *metadata.Snapshot) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ack(snap) != a.written
}

// run writes each new props version in the node's session until ctx
// ends. A write that fails is retried while the session lives; a session
// that ended is the node's to replace, and OnSession writes in the next.
func (a *Acker) run(ctx context.Context) {
	defer close(a.done)
	for attempt := 0; ; {
		if _, err := a.cfg.Store.Wait(ctx, a.pending); err != nil {
			return // ctx ended
		}
		sess := a.cfg.Node.Session()
		if sess == nil {
			// Between sessions: the next one is written through OnSession.
			attempt++
			if !retry.Sleep(ctx, retry.Backoff(attempt, 20*time.Millisecond, time.Second)) {
				return
			}
			continue
		}
		if err := a.write(ctx, sess); err != nil {
			if ctx.Err() != nil {
				return
			}
			if sess.Err() == nil {
				a.log.Warn("props acknowledgement: write", "key", a.key, "err", err)
			}
			attempt++
			if !retry.Sleep(ctx, retry.Backoff(attempt, 20*time.Millisecond, time.Second)) {
				return
			}
			continue
		}
		attempt = 0
	}
}
