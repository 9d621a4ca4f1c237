package zookeeper

import (
	"context"
	"sync"
	"sync/atomic"
)

// window bounds the requests one bulk operation (List, a Watch's loading of
// a subtree, a Commit's reads) keeps in flight. The client writes requests
// from concurrent callers back to back on its one connection and matches
// the replies, so a window of callers pipelines the round trips instead of
// paying one per znode.
const window = 64

// pipeline calls fn(i) for every i in [0, n), at most window at a time, and
// returns the error of the lowest i that failed. After the first failure, or
// once ctx ends, it starts no more calls: then it returns ctx's error if no
// call failed. It returns when every started call has returned.
func pipeline(ctx context.Context, n int, fn func(i int) error) error {
	return pipelineWidth(ctx, n, window, fn)
}

// pipelineWidth is pipeline with at most width calls at a time.
func pipelineWidth(ctx context.Context, n, width int, fn func(i int) error) error {
	errs := make([]error, n)
	var (
		next   atomic.Int64
		done   atomic.Int64
		failed atomic.Bool
		wg     sync.WaitGroup
	)
	for range min(n, width) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() && ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errs[i] = err
					failed.Store(true)
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if done.Load() < int64(n) {
		return ctx.Err()
	}
	return nil
}
