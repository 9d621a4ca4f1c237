package dbconfig

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

// TestHalfWrittenImportIsMarked, on real etcd and ZooKeeper: an import
// whose process dies between its transactions (the third fails and
// nothing after it reaches the registry, rollback included) leaves the
// database marked under /shardkeeper/imports/{db} with the statement and
// node; the next import of it is refused naming the drop and the import
// to run; DROP removes database and mark, and the import then finishes
// and leaves no mark. A finished import leaves none either.
func TestHalfWrittenImportIsMarked(t *testing.T) {
	realtest.Each(t, "sk_dbmark_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo, dir := open(t), t.TempDir()
		opts := Options{Statement: "IMPORT DATABASE CONFIGURATION FROM FILE 'big.yaml'", Instance: "node-a", MaxTxnKeys: 5}

		var commits atomic.Int32
		var dead atomic.Bool
		faulty := fault.Wrap(repo, func(op, key string) fault.Action {
			if dead.Load() || op == "commit" && commits.Add(1) == 4 {
				dead.Store(true) // the process is gone: nothing else is written
				return fault.Action{Err: registry.ErrUnavailable}
			}
			return fault.Action{}
		})
		sess, err := faulty.NewSession(ctx, registry.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		o := opts
		o.Session = sess
		if _, err := Import(ctx, faulty, "big.yaml", configYAML(dir, "half_db", ""), o); !errors.Is(err, registry.ErrUnavailable) {
			t.Fatalf("import dying in its third transaction: %v", err)
		}
		dead.Store(false)
		_ = sess.Close(ctx)
		if loadSnapshot(ctx, t, repo).Databases["half_db"] == nil {
			t.Fatal("the half-written database is not there: the test proves nothing")
		}
		marks, err := IncompleteImports(ctx, repo, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := marks["half_db"]
		if !ok || m.Statement != opts.Statement || m.Instance != "node-a" || m.Started.IsZero() {
			t.Fatalf("marks = %+v", marks)
		}
		advice := m.Advice()
		for _, want := range []string{"half_db is incomplete", "shardkeeper databases drop half_db", opts.Statement} {
			if !strings.Contains(advice, want) {
				t.Errorf("advice %q lacks %q", advice, want)
			}
		}

		// The next import is refused with the advice, writing nothing.
		var e *sqlerr.Error
		if _, err := Import(ctx, repo, "big.yaml", configYAML(dir, "half_db", ""), opts); !errors.As(err, &e) || e.Code != 30001 || !strings.Contains(e.Message, "drop the database") {
			t.Fatalf("import over a half-written database: %v", err)
		}

		// Drop, then the import finishes and leaves no mark.
		dropSess, err := repo.NewSession(ctx, registry.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer dropSess.Close(ctx)
		if err := (metadata.Coordinator{Repo: repo, Session: dropSess, Layout: paths.Layout553}).DropDatabase(ctx, "half_db"); err != nil {
			t.Fatal(err)
		}
		if marks, _ := IncompleteImports(ctx, repo, nil); len(marks) != 0 {
			t.Fatalf("marks after DROP: %v", marks)
		}
		if _, err := Import(ctx, repo, "big.yaml", configYAML(dir, "half_db", ""), opts); err != nil {
			t.Fatal(err)
		}
		if marks, _ := IncompleteImports(ctx, repo, nil); len(marks) != 0 {
			t.Fatalf("marks after a finished import: %v", marks)
		}

		// A mark without its database (the import died before its first
		// transaction) is replaced by the next import.
		key, _ := paths.Import("early_db")
		if _, err := repo.Put(ctx, key, []byte(`{"statement":"IMPORT ..."}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := Import(ctx, repo, "early.yaml", configYAML(dir, "early_db", ""), opts); err != nil {
			t.Fatalf("import over a stale mark: %v", err)
		}
		if marks, _ := IncompleteImports(ctx, repo, nil); len(marks) != 0 {
			t.Fatalf("marks after replacing a stale one: %v", marks)
		}
	})
}
