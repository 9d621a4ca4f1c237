package rules

import (
	"slices"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestNoOpWaitsForEveryNode: a statement that IF NOT EXISTS or IF EXISTS
// leaves a no-op is acknowledged, like a change, only once every online
// node acknowledges the rules it was decided on, or with the nodes that
// did not named (Pending). The chaos harness's DistSQL workload found the
// case on etcd at seed 1: a CREATE ... IF NOT EXISTS on n1 found the table
// another client had just created (that client still waiting for n2) and
// was acknowledged at once, and n2's SHOW did not show the table 20 ms
// later, nothing naming n2.
func TestNoOpWaitsForEveryNode(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	db := config.Database{Name: "db", DataSources: map[string]config.DataSource{
		"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", ""),
	}}
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, db); err != nil {
		t.Fatal(err)
	}
	opts := Options{Layout: paths.DefaultLayout, Timeout: 300 * time.Millisecond}
	apply := func(q string) Outcome {
		t.Helper()
		st, err := families.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Apply(ctx, repo, "db", st, opts)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return out
	}
	digest := func() string {
		t.Helper()
		d, _, err := metadata.ReadDatabase(ctx, repo, "db")
		if err != nil {
			t.Fatal(err)
		}
		return d.RulesDigest()
	}
	sess, err := repo.NewSession(ctx, registry.SessionOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close(ctx) })
	ack := func(id, digest string) {
		t.Helper()
		online, _ := paths.Online(paths.Proxy, id)
		applied, _ := paths.PropsApplied(id)
		if err := sess.PutEphemeral(ctx, online, []byte("attribute: 127.0.0.1@3307\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Put(ctx, applied, []byte(distvar.Ack{Props: 0, Rules: map[string]string{"db": digest}}.String())); err != nil {
			t.Fatal(err)
		}
	}

	before := digest() // no broadcast table
	// Another client's CREATE is committed; node "behind" has not applied
	// it, node "ahead" has.
	if out := apply("CREATE BROADCAST TABLE RULE t_b"); !out.Changed {
		t.Fatalf("CREATE: %+v, want a change", out)
	}
	created := digest()
	ack("ahead", created)
	ack("behind", before)
	out := apply("CREATE BROADCAST TABLE RULE IF NOT EXISTS t_b")
	if out.Changed || !slices.Equal(out.Applied, []string{"ahead"}) || !slices.Equal(out.Pending, []string{"behind"}) {
		t.Fatalf("CREATE IF NOT EXISTS of a table a node does not show yet: changed %v, applied %v, pending %v; want a no-op, applied [ahead], pending [behind]",
			out.Changed, out.Applied, out.Pending)
	}
	if w := out.Warnings("db"); len(w) != 1 || !slices.Contains(w, "the broadcast rule of db is in the registry, but 1 node(s) did not confirm applying it in time: behind") {
		t.Errorf("warnings %q, want the one that names behind", w)
	}

	// Once both show it, the no-op answers with both applied.
	ack("behind", created)
	if out := apply("CREATE BROADCAST TABLE RULE IF NOT EXISTS t_b"); out.Changed || len(out.Pending) != 0 || !slices.Equal(out.Applied, []string{"ahead", "behind"}) {
		t.Errorf("CREATE IF NOT EXISTS that every node shows: changed %v, applied %v, pending %v", out.Changed, out.Applied, out.Pending)
	}

	// The same for DROP IF EXISTS of a table a node still shows.
	if out := apply("DROP BROADCAST TABLE RULE t_b"); !out.Changed {
		t.Fatalf("DROP: %+v, want a change", out)
	}
	ack("ahead", digest())
	out = apply("DROP BROADCAST TABLE RULE IF EXISTS t_b")
	if out.Changed || !slices.Equal(out.Applied, []string{"ahead"}) || !slices.Equal(out.Pending, []string{"behind"}) {
		t.Errorf("DROP IF EXISTS of a table a node still shows: changed %v, applied %v, pending %v; want a no-op, applied [ahead], pending [behind]",
			out.Changed, out.Applied, out.Pending)
	}
}
