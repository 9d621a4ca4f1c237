package dbconfig

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// follower is a node that follows rule changes another node makes, wired
// as internal/daemon wires it: its metadata store's Run, WarnBeyondBounds
// and the acknowledgement (distvar.Acker) of its cluster node, on a
// memory registry of its own.
type follower struct {
	repo  registry.Repository // the writer's client
	own   registry.Repository // the follower's
	store *metadata.Store
	ack   string // the acknowledgement's key
}

// startFollower writes a database of n sharding tables through repo and
// starts a follower of it on own, a client of the same registry.
func startFollower(b *testing.B, repo, own registry.Repository, tables int) *follower {
	b.Helper()
	ctx := testenv.Context(b)
	quiet := slog.New(slog.DiscardHandler)
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "scale_db",
		DataSources: map[string]config.DataSource{"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", ""),
			"ds_1": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_1", "root", "")}}); err != nil {
		b.Fatal(err)
	}
	if err := metadatatest.WriteShardingTables(ctx, repo, "scale_db", 0, tables); err != nil {
		b.Fatal(err)
	}
	node, err := cluster.Open(ctx, own, cluster.Config{InstanceID: "follower", Reservation: 10 * time.Second, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = node.Close(context.Background()) })
	store, err := metadata.Load(ctx, own, quiet)
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = store.Run(runCtx) }()
	b.Cleanup(func() { stop(); <-done })
	b.Cleanup(WarnBeyondBounds(store, quiet))
	a, err := distvar.StartAcker(ctx, own, distvar.AckerConfig{InstanceID: "follower", Node: node, Store: store, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(a.Close)
	key, _ := paths.PropsApplied("follower")
	return &follower{repo: repo, own: own, store: store, ack: key}
}

// The steps of a change cycle: CREATE SHARDING TABLE RULE t_bench, ALTER
// of it, DROP.
const (
	stepCreate = iota
	stepAlter
	stepDrop
)

// change writes the rule items a step writes (the table t_bench and its
// algorithm) in one transaction: new at version 0 (CREATE), at version 1
// with the active version moved and version 0 deleted (ALTER), or deleted
// (DROP); and returns once the follower acknowledged the rules digest its
// store then holds.
func (f *follower) change(b *testing.B, step int) {
	ctx := testenv.Context(b)
	before := f.store.Current().Databases["scale_db"].RulesDigest()
	column := []string{"id", "uid", "id"}[step]
	kvs, err := metadata.DatabaseWrites(paths.DefaultLayout, config.Database{Name: "scale_db", Rules: []config.Rule{{Type: "sharding", Content: map[string]any{
		"tables":             map[string]any{"t_bench": map[string]any{"actualDataNodes": "ds_${0..1}.t_bench_${0..1}", "tableStrategy": map[string]any{"standard": map[string]any{"shardingColumn": column, "shardingAlgorithmName": "t_bench_inline"}}}},
		"shardingAlgorithms": map[string]any{"t_bench_inline": map[string]any{"type": "INLINE", "props": map[string]any{"algorithm-expression": "t_bench_${" + column + " % 2}"}}},
	}}}})
	if err != nil {
		b.Fatal(err)
	}
	var conds []registry.Cond
	var ops []registry.Op
	for _, kv := range kvs[1:] {
		switch {
		case step == stepCreate:
			conds = append(conds, registry.Cond{Key: kv.Key})
			ops = append(ops, registry.Op{Key: kv.Key, Value: kv.Value})
		case strings.HasSuffix(kv.Key, "/active_version"):
			cur, err := f.repo.Get(ctx, kv.Key)
			if err != nil {
				b.Fatal(err)
			}
			conds = append(conds, registry.Cond{Key: kv.Key, Version: cur.Version})
			if step == stepAlter {
				ops = append(ops, registry.Op{Key: kv.Key, Value: []byte("1")})
			} else {
				ops = append(ops, registry.Op{Key: kv.Key, Delete: true})
			}
		default: // versions/0: ALTER moves it to versions/1, DROP deletes what is there
			old := kv.Key
			if step == stepDrop {
				old = strings.TrimSuffix(kv.Key, "/0") + "/1"
			}
			cur, err := f.repo.Get(ctx, old)
			if err != nil {
				b.Fatal(err)
			}
			conds = append(conds, registry.Cond{Key: old, Version: cur.Version})
			ops = append(ops, registry.Op{Key: old, Delete: true})
			if step == stepAlter {
				next := strings.TrimSuffix(kv.Key, "/0") + "/1"
				conds = append(conds, registry.Cond{Key: next})
				ops = append(ops, registry.Op{Key: next, Value: kv.Value})
			}
		}
	}
	if err := metadatatest.Commit(ctx, f.repo, conds, ops); err != nil {
		b.Fatal(err)
	}
	snap, err := f.store.Wait(ctx, func(s *metadata.Snapshot) bool {
		c := s.Databases["scale_db"].Rules["sharding"].Content
		tables, _ := c["tables"].(map[string]any)
		algorithms, _ := c["shardingAlgorithms"].(map[string]any)
		if step == stepDrop {
			return tables["t_bench"] == nil && algorithms["t_bench_inline"] == nil
		}
		got, _ := rule.Map(rule.Map(rule.Map(tables["t_bench"])["tableStrategy"])["standard"])["shardingColumn"].(string)
		return got == column && algorithms["t_bench_inline"] != nil && s.Databases["scale_db"].RulesDigest() != before
	})
	if err != nil {
		b.Fatal(err)
	}
	want := snap.Databases["scale_db"].RulesDigest()
	for {
		kv, err := f.own.Get(ctx, f.ack)
		if err == nil && strings.Contains(string(kv.Value), want) {
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// cpu is the process's user and system time.
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFollowerChange measures what a node that did not run a rule
// statement spends on it: a CREATE of one sharding table (its table and
// algorithm items in one transaction), an ALTER of it and its DROP, applied
// by the node's store from its watch, checked by WarnBeyondBounds and
// acknowledged by its Acker, next to 0 and 10,000 existing tables (a node
// each, in the same run), on the memory registry. It reports the
// process's CPU per CREATE+ALTER+DROP for each (the registry's and the
// writer's share included, the same for both) and their ratio.
//
//	go test ./internal/dbconfig -run '^$' -bench 'FollowerChange$' -benchtime 200x
func BenchmarkFollowerChange(b *testing.B) {
	benchFollower(b, func(b *testing.B) (registry.Repository, registry.Repository) {
		repo := memory.New()
		b.Cleanup(func() { _ = repo.Close() })
		return repo, repo
	})
}

// BenchmarkFollowerChangeZooKeeper is BenchmarkFollowerChange on real
// ZooKeeper (a namespace per size; the writer and the follower each with a
// client of their own), where a follower re-reads what changed level by
// level and lists the children of a changed parent (the 10,000 tables').
//
//	source scripts/servers.sh && start_servers && go test ./internal/dbconfig -run '^$' -bench FollowerChangeZooKeeper -benchtime 50x
func BenchmarkFollowerChangeZooKeeper(b *testing.B) {
	s := zktest.New(b)
	benchFollower(b, func(b *testing.B) (registry.Repository, registry.Repository) {
		ns := s.Namespace(b, "sk_follower_")
		return s.Open(b, ns), s.Open(b, ns)
	})
}

func benchFollower(b *testing.B, open func(b *testing.B) (writer, follower registry.Repository)) {
	sizes := []int{0, 10000}
	fs := make([]*follower, len(sizes))
	for i, n := range sizes {
		w, own := open(b)
		fs[i] = startFollower(b, w, own, n)
		testenv.Eventually(b, fmt.Sprintf("the follower to load %d tables", n), func() bool {
			db := fs[i].store.Current().Databases["scale_db"]
			if db == nil {
				return false
			}
			tables, _ := db.Rules["sharding"].Content["tables"].(map[string]any)
			return len(tables) == n
		})
	}
	spent := make([]time.Duration, len(sizes))
	b.ResetTimer()
	for b.Loop() {
		for i, f := range fs {
			t0 := cpu()
			for _, step := range []int{stepCreate, stepAlter, stepDrop} {
				f.change(b, step)
			}
			spent[i] += cpu() - t0
		}
	}
	for i, n := range sizes {
		b.ReportMetric(float64(spent[i].Microseconds())/1000/float64(b.N), fmt.Sprintf("cpu-ms/op-%d", n))
	}
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "ratio")
}
