package dbconfig

import (
	"context"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// heldSession is a session whose Commit waits until release is closed.
type heldSession struct {
	registry.Session
	release chan struct{}
}

func (s heldSession) Commit(ctx context.Context, txn registry.Txn) (registry.Version, error) {
	<-s.release
	return s.Session.Commit(ctx, txn)
}

// TestCommitOneAckBeforeCommit checks the chaos negative control
// config.UnsafeAckBeforeCommit: CommitOne returns while the registry has
// not confirmed the commit, which still lands afterwards; without the
// switch it returns only once committed.
func TestCommitOneAckBeforeCommit(t *testing.T) {
	ctx := context.Background()
	repo := memory.New()
	sess, err := repo.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	txn := func(key string) registry.Txn {
		return registry.Txn{Conds: []registry.Cond{{Key: key}}, Ops: []registry.Op{{Key: key, Value: []byte("v")}}}
	}

	t.Setenv(config.EnvUnsafeControl, config.UnsafeAckBeforeCommit)
	held := heldSession{Session: sess, release: make(chan struct{})}
	if _, err := CommitOne(ctx, repo, held, txn("/early")); err != nil {
		t.Fatalf("CommitOne with the commit held: %v", err)
	}
	if _, err := repo.Get(ctx, "/early"); err == nil {
		t.Fatal("the key is there before the commit was released")
	}
	close(held.release)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := repo.Get(ctx, "/early"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the commit sent after the answer never landed")
		}
	}

	t.Setenv(config.EnvUnsafeControl, "")
	held = heldSession{Session: sess, release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := CommitOne(ctx, repo, held, txn("/confirmed"))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("CommitOne returned (%v) before the commit was confirmed", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(held.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Get(ctx, "/confirmed"); err != nil {
		t.Fatalf("after CommitOne: %v", err)
	}
}
