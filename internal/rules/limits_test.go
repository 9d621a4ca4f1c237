package rules

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

// twoUnitDatabase creates database db with units ds_0 and ds_1.
func twoUnitDatabase(ctx context.Context, t *testing.T, repo registry.Repository) {
	t.Helper()
	db := config.Database{Name: "db", DataSources: map[string]config.DataSource{
		"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", ""),
		"ds_1": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_1", "root", ""),
	}}
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, db); err != nil {
		t.Fatal(err)
	}
}

// createTables is CREATE SHARDING TABLE RULE of n tables named prefix0...
func createTables(prefix string, n int) string {
	var b strings.Builder
	b.WriteString("CREATE SHARDING TABLE RULE ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s%d (DATANODES('ds_${0..1}.%s%d'))", prefix, i, prefix, i)
	}
	return b.String()
}

func dump(ctx context.Context, t *testing.T, repo registry.Repository) []byte {
	t.Helper()
	kvs, err := repo.List(ctx, "/metadata")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, kv := range kvs {
		fmt.Fprintf(&b, "%s=%q@%d\n", kv.Key, kv.Value, kv.Version)
	}
	return b.Bytes()
}

// TestRuleStatementBeyondOneTransaction, on real etcd and ZooKeeper: a
// rule statement whose change needs more keys than one registry
// transaction holds (100 tables in one CREATE: etcd refuses more than 128
// operations in a Txn) is refused up front with 30001 naming the limit,
// and the registry is left byte-identical; a statement within the limit
// is written.
func TestRuleStatementBeyondOneTransaction(t *testing.T) {
	realtest.Each(t, "sk_rules_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo := open(t)
		twoUnitDatabase(ctx, t, repo)
		apply := func(q string) (Outcome, error) {
			st, err := families.Parse(q)
			if err != nil {
				t.Fatal(err)
			}
			return Apply(ctx, repo, "db", st, Options{Layout: paths.DefaultLayout, Timeout: time.Second})
		}
		before := dump(ctx, t, repo)
		_, err := apply(createTables("t_big_", 100))
		var se *sqlerr.Error
		if !errors.As(err, &se) || se.Code != 30001 || !strings.Contains(se.Message, fmt.Sprintf("(%d keys", dbconfig.DefaultMaxTxnKeys)) {
			t.Fatalf("CREATE of 100 table rules: %v, want 30001 naming the transaction limit", err)
		}
		if after := dump(ctx, t, repo); !bytes.Equal(before, after) {
			t.Fatalf("the refused statement changed the registry:\nbefore\n%s\nafter\n%s", before, after)
		}
		if out, err := apply(createTables("t_ok_", 40)); err != nil || !out.Changed {
			t.Fatalf("CREATE of 40 table rules: %+v %v", out, err)
		}
	})
}

// TestConcurrentAltersOnSeveralNodes, on real etcd and ZooKeeper: 30
// ALTERs of one rule at once through three clients (three nodes) each
// either succeed or answer the retryable conflict (17010, 40001), never
// another error (which the consoles answer as 30000), and the rule ends
// as one of them wrote it.
func TestConcurrentAltersOnSeveralNodes(t *testing.T) {
	realtest.Each(t, "sk_rules_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		nodes := []registry.Repository{open(t), open(t), open(t)}
		twoUnitDatabase(ctx, t, nodes[0])
		st, err := families.Parse("CREATE SHARDING TABLE RULE t (DATANODES('ds_0.t_0'))")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Apply(ctx, nodes[0], "db", st, Options{Layout: paths.DefaultLayout, Timeout: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		const alters = 30
		errs := make([]error, alters)
		var wg sync.WaitGroup
		for i := range alters {
			wg.Go(func() {
				st, err := families.Parse(fmt.Sprintf("ALTER SHARDING TABLE RULE t (DATANODES('ds_%d.t_%d'))", i%2, i+1))
				if err != nil {
					errs[i] = err
					return
				}
				_, errs[i] = Apply(ctx, nodes[i%len(nodes)], "db", st, Options{Layout: paths.DefaultLayout, Timeout: time.Second})
			})
		}
		wg.Wait()
		ok, conflicts := 0, 0
		for i, err := range errs {
			var se *sqlerr.Error
			switch {
			case err == nil:
				ok++
			case errors.As(err, &se) && se.Code == CodeConflict && se.SQLState == "40001":
				conflicts++
			default:
				t.Errorf("ALTER %d: %v (%T), want success or the retryable conflict", i, err, err)
			}
		}
		t.Logf("%d ALTERs: %d written, %d answered the conflict", alters, ok, conflicts)
		d, _, err := metadata.ReadDatabase(ctx, nodes[0], "db")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := rule.Map(rule.Map(d.Rules["sharding"].Content["tables"])["t"])["actualDataNodes"].(string)
		if got == "ds_0.t_0" || !strings.HasPrefix(got, "ds_") {
			t.Fatalf("after the ALTERs the rule's data nodes are %q, want one an ALTER wrote", got)
		}
	})
}

// losingSession fails every Commit as if another node had changed a key
// read before it.
type losingSession struct {
	registry.Session
	commits int
}

func (s *losingSession) Commit(_ context.Context, txn registry.Txn) (registry.Version, error) {
	s.commits++
	return 0, &registry.OpError{Op: "commit", Key: txn.Conds[0].Key, Err: registry.ErrBadVersion}
}

// TestChangeThatKeepsLosing: a rule change whose commit fails on a changed
// key every time is tried a bounded number of times, with pauses between,
// and then answers the retryable conflict (17010, 40001) that still wraps
// registry.ErrBadVersion; nothing is written.
func TestChangeThatKeepsLosing(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	defer repo.Close()
	twoUnitDatabase(ctx, t, repo)
	sess, err := repo.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	losing := &losingSession{Session: sess}
	st, err := families.Parse("CREATE SHARDING TABLE RULE t (DATANODES('ds_0.t_0'))")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Apply(ctx, repo, "db", st, Options{Layout: paths.DefaultLayout, Timeout: time.Millisecond, Session: losing})
	took := time.Since(start)
	var se *sqlerr.Error
	if !errors.As(err, &se) || se.Code != CodeConflict || se.SQLState != "40001" || !errors.Is(err, registry.ErrBadVersion) {
		t.Fatalf("a change that always loses: %v, want the retryable conflict wrapping ErrBadVersion", err)
	}
	if losing.commits < 5 || losing.commits > 20 {
		t.Fatalf("%d commits, want a bounded retry", losing.commits)
	}
	if took < 100*time.Millisecond {
		t.Fatalf("%d commits in %v: the attempts did not pause", losing.commits, took)
	}
	d, _, err := metadata.ReadDatabase(ctx, repo, "db")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Rules["sharding"]; ok {
		t.Fatalf("the refused change was written: %v", d.Rules)
	}
}
