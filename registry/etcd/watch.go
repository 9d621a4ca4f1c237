package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/shardkeeper/shardkeeper/registry"
)

// watchBuffer is the capacity of a Watch channel.
const watchBuffer = 64

// Watch implements registry.Repository. It reads prefix and everything under
// "prefix/" at one revision, then watches them from the next
// revision with one gRPC watch (with require-leader, so a member that loses
// its leader ends the watch instead of going silent).
//
// The channel is closed when ctx ends (no final event), and otherwise after
// a final Event whose Err wraps registry.ErrWatchLost: compaction past the
// watch's revision, a lost leader, CloseWatches, or any other end of the
// stream. Close ends the watch too; the final event then wraps
// registry.ErrClosed and is delivered only if the channel has room.
//
// A slow consumer holds up only its own watch: undelivered events wait in
// the client's memory (the etcd client buffers them without bound), and
// neither ctx cancellation nor Close wait for the consumer.
func (r *Repo) Watch(ctx context.Context, prefix string) ([]registry.KV, <-chan registry.Event, error) {
	const op = "watch"
	c, cancel, err := r.begin(ctx, op, prefix)
	if err != nil {
		return nil, nil, err
	}
	// The snapshot reads exactly prefix and "prefix/..." in one Txn (one
	// revision); the watch covers [prefix, prefix0), which also holds
	// name-prefix siblings such as "prefix-x", dropped in pump.
	var gets []clientv3.Op
	if prefix == "/" {
		gets = []clientv3.Op{clientv3.OpGet(r.full("/"), clientv3.WithPrefix())}
	} else {
		gets = []clientv3.Op{clientv3.OpGet(r.full(prefix)), clientv3.OpGet(r.full(prefix)+"/", clientv3.WithPrefix())}
	}
	resp, err := r.client.Txn(c).Then(gets...).Commit()
	cancel()
	if err != nil {
		return nil, nil, r.convertError(ctx, op, prefix, err)
	}
	initial := []registry.KV{}
	for _, rr := range resp.Responses {
		for _, kv := range rr.GetResponseRange().Kvs {
			initial = append(initial, registry.KV{Key: r.strip(kv.Key), Value: kv.Value, Version: registry.Version(kv.ModRevision)})
		}
	}
	start, end := r.rangeOf(prefix)

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, nil, &registry.OpError{Op: op, Key: prefix, Err: registry.ErrClosed}
	}
	if r.watcher == nil {
		r.watcher = clientv3.NewWatcher(r.client)
	}
	w := r.watcher
	r.wg.Add(1)
	r.mu.Unlock()

	wctx, wcancel := context.WithCancel(ctx)
	stop := context.AfterFunc(r.ctx, wcancel)
	out := make(chan registry.Event, watchBuffer)
	go func() {
		defer r.wg.Done()
		defer close(out)
		defer stop()
		defer wcancel()
		next := resp.Header.Revision + 1
		var err error
		for renewals := 0; ; renewals++ {
			gen := r.streamGen.Load()
			wch := w.Watch(clientv3.WithRequireLeader(streamContext(wctx, gen)), start,
				clientv3.WithRange(end), clientv3.WithRev(next))
			err = r.pump(ctx, prefix, wch, out, &next)
			if !isStaleToken(err) || renewals == maxTokenRenewals || wctx.Err() != nil {
				break
			}
			// The gRPC stream still carries the token it was opened with;
			// move new watches to a fresh stream, which fetches a new token,
			// and resume from the first revision not delivered.
			r.streamGen.CompareAndSwap(gen, gen+1)
		}
		switch {
		case ctx.Err() != nil:
		case r.ctx.Err() != nil:
			select {
			case out <- registry.Event{Err: &registry.OpError{Op: op, Key: prefix, Err: registry.ErrClosed}}:
			default:
			}
		default:
			ev := registry.Event{Err: &registry.OpError{Op: op, Key: prefix, Err: err}}
			select {
			case out <- ev:
			case <-ctx.Done():
			case <-r.ctx.Done():
			}
		}
	}()
	return initial, out, nil
}

// maxTokenRenewals bounds how often one Watch moves to a fresh stream
// because its auth token expired before it ends as lost.
const maxTokenRenewals = 3

// streamContext tags ctx with the stream generation: the etcd client
// shares one gRPC watch stream among watches whose contexts carry the same
// metadata, so a new generation opens a new stream.
func streamContext(ctx context.Context, gen int64) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "shardkeeper-watch-stream", strconv.FormatInt(gen, 10))
}

// isStaleToken reports whether err says that the auth token of the request
// expired or predates a change of users or roles. etcd's simple tokens
// expire after --auth-token-ttl without use; a watch stream presents the
// token it was opened with for every new watch on it.
func isStaleToken(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, rpctypes.ErrInvalidAuthToken) || errors.Is(err, rpctypes.ErrAuthOldRevision) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, rpctypes.ErrInvalidAuthToken.Error()) || strings.Contains(msg, rpctypes.ErrAuthOldRevision.Error())
}

// pump forwards the events of wch under prefix to out until the watch ends
// and returns why it ended, as an error wrapping registry.ErrWatchLost.
// After each response it sets *next to the revision after its last event.
func (r *Repo) pump(ctx context.Context, prefix string, wch clientv3.WatchChan, out chan<- registry.Event, next *int64) error {
	for resp := range wch {
		if err := resp.Err(); err != nil {
			return lostError(r.convertError(ctx, "watch", prefix, err))
		}
		if resp.Canceled {
			return fmt.Errorf("%w: the server cancelled the watch", registry.ErrWatchLost)
		}
		for _, e := range resp.Events {
			key := r.strip(e.Kv.Key)
			if !registry.IsUnder(key, prefix) {
				continue // shares the name prefix only ("prefix-x")
			}
			ev := registry.Event{KV: registry.KV{Key: key, Version: registry.Version(e.Kv.ModRevision)}}
			switch e.Type {
			case clientv3.EventTypePut:
				ev.Type = registry.EventPut
				ev.KV.Value = e.Kv.Value
			case clientv3.EventTypeDelete:
				ev.Type = registry.EventDelete
			default:
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return ctx.Err()
			case <-r.ctx.Done():
				return registry.ErrClosed
			}
		}
		if n := len(resp.Events); n > 0 {
			*next = resp.Events[n-1].Kv.ModRevision + 1
		}
	}
	return fmt.Errorf("%w: the etcd watch stream ended (watcher closed or connection lost)", registry.ErrWatchLost)
}

// lostError makes err, already converted, wrap registry.ErrWatchLost.
func lostError(err error) error {
	var oe *registry.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	if errors.Is(err, registry.ErrWatchLost) {
		return err
	}
	return fmt.Errorf("%w: %w", registry.ErrWatchLost, err)
}

// CloseWatches ends every watch open on r as a lost watch: each channel gets
// a final Event wrapping registry.ErrWatchLost and closes. Later Watch calls
// open a new etcd watcher. Tests use it to simulate a lost watch; operators
// can use it to force consumers to resync.
func (r *Repo) CloseWatches() {
	r.mu.Lock()
	w := r.watcher
	r.watcher = nil
	r.mu.Unlock()
	if w != nil {
		_ = w.Close()
	}
}
