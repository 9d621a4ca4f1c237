package distvar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/retry"
	"github.com/shardkeeper/shardkeeper/registry"
)

// AckerConfig configures an Acker.
type AckerConfig struct {
	// InstanceID is the node whose acknowledgement the Acker publishes.
	InstanceID string
	// Store is the node's metadata store; its Snapshot.PropsVersion is
	// what the Acker reports.
	Store *metadata.Store
	// SessionTTL is the TTL of the session the acknowledgement lives in;
	// zero means registry.DefaultSessionTTL.
	SessionTTL time.Duration
	// Logger receives failed writes; nil means slog.Default().
	Logger *slog.Logger
}

// Acker publishes the /props version a node's metadata store applied, at
// /nodes/props_applied/{instanceId}, in an ephemeral key of a session of
// its own: it writes the current version when it starts and again after
// every snapshot whose PropsVersion differs. The key goes with the session
// (Close, or the process gone for the TTL); a lost session is replaced and
// the key written again.
type Acker struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// StartAcker starts publishing cfg.Store's applied props version on repo
// and returns once the first acknowledgement is written, so that Set
// counts the node from then on. ctx bounds only that first write. Close
// stops it.
func StartAcker(ctx context.Context, repo registry.Repository, cfg AckerConfig) (*Acker, error) {
	key, err := paths.PropsApplied(cfg.InstanceID)
	if err != nil {
		return nil, fmt.Errorf("props acknowledgement: instance id: %w", err)
	}
	if cfg.Store == nil {
		return nil, errors.New("props acknowledgement: no metadata store")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	sess, err := repo.NewSession(ctx, registry.SessionOptions{TTL: cfg.SessionTTL})
	if err != nil {
		return nil, fmt.Errorf("props acknowledgement: open session: %w", err)
	}
	v := cfg.Store.Current().PropsVersion
	if err := sess.PutEphemeral(ctx, key, []byte(strconv.Itoa(v))); err != nil {
		_ = sess.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("props acknowledgement: write %s: %w", key, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	a := &Acker{cancel: cancel, done: make(chan struct{})}
	go a.run(runCtx, repo, cfg, log, key, sess, v)
	return a, nil
}

// Close stops publishing and ends the session, which removes the
// acknowledgement. Idempotent.
func (a *Acker) Close() {
	a.cancel()
	<-a.done
}

func (a *Acker) run(ctx context.Context, repo registry.Repository, cfg AckerConfig, log *slog.Logger, key string, sess registry.Session, written int) {
	defer close(a.done)
	defer func() {
		if sess != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = sess.Close(cctx)
			cancel()
		}
	}()
	for attempt := 0; ; {
		if sess == nil {
			s, err := repo.NewSession(ctx, registry.SessionOptions{TTL: cfg.SessionTTL})
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, registry.ErrClosed) {
					return
				}
				log.Warn("props acknowledgement: open session", "err", err)
				attempt++
				if !retry.Sleep(ctx, retry.Backoff(attempt, 50*time.Millisecond, 5*time.Second)) {
					return
				}
				continue
			}
			sess, written = s, -2
		}
		if v := cfg.Store.Current().PropsVersion; v != written {
			if err := sess.PutEphemeral(ctx, key, []byte(strconv.Itoa(v))); err != nil {
				if ctx.Err() != nil || errors.Is(err, registry.ErrClosed) {
					return
				}
				log.Warn("props acknowledgement: write", "key", key, "err", err)
				if sess.Err() != nil {
					sess = nil
				}
				attempt++
				if !retry.Sleep(ctx, retry.Backoff(attempt, 20*time.Millisecond, time.Second)) {
					return
				}
				continue
			}
			written = v
		}
		attempt = 0
		// Wait for a different version or the end of the session.
		wctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-sess.Done():
				cancel()
			case <-wctx.Done():
			}
		}()
		_, err := cfg.Store.Wait(wctx, func(s *metadata.Snapshot) bool { return s.PropsVersion != written })
		cancel()
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		if err != nil { // the session ended
			log.Warn("props acknowledgement: session ended; starting another", "err", sess.Err())
			_ = sess.Close(ctx)
			sess = nil
		}
	}
}
