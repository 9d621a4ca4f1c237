package console

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rules"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// dumpRules returns every key and value under /metadata and /rules.
func dumpRules(t *testing.T, repo registry.Repository) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, root := range []string{"/metadata", "/rules"} {
		kvs, err := repo.List(testenv.Context(t), root)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			out[kv.Key] = string(kv.Value)
		}
	}
	return out
}

// TestReadwriteSplittingAndGlobalRules creates, alters, shows, counts and
// drops a readwrite-splitting rule, sets the default single table unit and
// alters global rules through the engine on real etcd and ZooKeeper; bad
// input gets upstream's codes and leaves the registry byte-identical.
func TestReadwriteSplittingAndGlobalRules(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		repo := open(t)
		n := startNode(t, repo, "rw", nil)
		persistShardingDB(t, repo, n)
		s := newSession()
		exec(t, n, s, "USE sharding_db")

		before := dumpRules(t, repo)
		for _, c := range []struct {
			sql   string
			code  uint16
			state string
			msg   string
		}{
			{"CREATE READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_9))", 10102, "44000", "Storage units '[ds_9]' do not exist in database 'sharding_db'."},
			{"CREATE READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1)), rw (WRITE_STORAGE_UNIT=ds_1, READ_STORAGE_UNITS(ds_0))", 10204, "42S01", "Duplicate Readwrite-splitting rule names '[rw]' in database 'sharding_db'."},
			{"CREATE READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1), TYPE(NAME='nope'))", 30000, "HY000", "SPI-00001: No implementation class load from SPI 'org.apache.shardingsphere.infra.algorithm.loadbalancer.core.LoadBalanceAlgorithm' with type 'nope'."},
			{"ALTER READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1))", 10202, "42S02", "Readwrite-splitting rules '[rw]' do not exist in database 'sharding_db'."},
			{"DROP READWRITE_SPLITTING RULE rw", 10202, "42S02", "Readwrite-splitting rules '[rw]' do not exist in database 'sharding_db'."},
			{"CREATE READWRITE_SPLITTING RULE `a/b` (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1))", 10200, "44000", "Invalid 'Readwrite-splitting' rule 'a/b', error message is: the name is not a valid registry node name: invalid key: name \"a/b\" contains /"},
			{"SET DEFAULT SINGLE TABLE STORAGE UNIT = ds_9", 10102, "44000", "Storage units '[ds_9]' do not exist in database 'sharding_db'."},
			{"ALTER TRANSACTION RULE (DEFAULT='XA', TYPE(NAME='nope'))", 30000, "HY000", "SPI-00001: No implementation class load from SPI 'org.apache.shardingsphere.transaction.spi.ShardingSphereDistributedTransactionManager' with type 'nope'."},
		} {
			e := execError(t, n, s, c.sql)
			if e.Code != c.code || e.SQLState != c.state || e.Message != c.msg {
				t.Errorf("%s:\n got %d %s %q\nwant %d %s %q", c.sql, e.Code, e.SQLState, e.Message, c.code, c.state, c.msg)
			}
		}
		if after := dumpRules(t, repo); !reflect.DeepEqual(before, after) {
			t.Fatalf("refused statements changed the registry")
		}

		exec(t, n, s, "CREATE READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1, ds_spare), TYPE(NAME='random', PROPERTIES('a'='1')))")
		res := exec(t, n, s, "SHOW READWRITE_SPLITTING RULES")
		wantCols := []string{"name", "write_storage_unit_name", "read_storage_unit_names", "transactional_read_query_strategy", "load_balancer_type", "load_balancer_props"}
		if got := columnNames(res); !reflect.DeepEqual(got, wantCols) {
			t.Errorf("columns %v", got)
		}
		if got, want := rowStrings(res), [][]string{{"rw", "ds_0", "ds_1,ds_spare", "PRIMARY", "RANDOM", `{"a":"1"}`}}; !reflect.DeepEqual(got, want) {
			t.Errorf("after CREATE: %v, want %v", got, want)
		}
		if got, want := rowStrings(exec(t, n, s, "SHOW STATUS FROM READWRITE_SPLITTING RULES")), [][]string{{"rw", "ds_1", "ENABLED"}, {"rw", "ds_spare", "ENABLED"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("SHOW STATUS: %v, want %v", got, want)
		}
		key, err := paths.QualifiedDataSource("sharding_db", "rw", "ds_spare")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Put(testenv.Context(t), key, metadata.EncodeDataSourceState(metadata.StateDisabled)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "SHOW STATUS to show ds_spare disabled", func() bool {
			got := rowStrings(exec(t, n, s, "SHOW STATUS FROM READWRITE_SPLITTING RULE rw"))
			return reflect.DeepEqual(got, [][]string{{"rw", "ds_1", "ENABLED"}, {"rw", "ds_spare", "DISABLED"}})
		})
		// Upstream's ALTER READWRITE_SPLITTING RULE g ENABLE|DISABLE unit,
		// with its checks.
		exec(t, n, s, "ALTER READWRITE_SPLITTING RULE rw ENABLE ds_spare FROM sharding_db")
		testenv.Eventually(t, "ENABLE to show ds_spare enabled", func() bool {
			got := rowStrings(exec(t, n, s, "SHOW STATUS FROM READWRITE_SPLITTING RULE rw"))
			return reflect.DeepEqual(got, [][]string{{"rw", "ds_1", "ENABLED"}, {"rw", "ds_spare", "ENABLED"}})
		})
		exec(t, n, s, "ALTER READWRITE_SPLITTING RULE rw DISABLE ds_spare")
		testenv.Eventually(t, "DISABLE to show ds_spare disabled", func() bool {
			got := rowStrings(exec(t, n, s, "SHOW STATUS FROM READWRITE_SPLITTING RULE rw"))
			return reflect.DeepEqual(got, [][]string{{"rw", "ds_1", "ENABLED"}, {"rw", "ds_spare", "DISABLED"}})
		})
		if e := execError(t, n, s, "ALTER READWRITE_SPLITTING RULE nope DISABLE ds_spare"); e.Code != 10202 || e.SQLState != "42S02" {
			t.Errorf("DISABLE in an unknown rule: %+v", e)
		}
		exec(t, n, s, "CREATE READWRITE_SPLITTING RULE IF NOT EXISTS rw (WRITE_STORAGE_UNIT=ds_1, READ_STORAGE_UNITS(ds_0))")
		if e := execError(t, n, s, "CREATE READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_1, READ_STORAGE_UNITS(ds_0))"); e.Code != 10204 {
			t.Errorf("CREATE of an existing rule: %+v", e)
		}
		if got, want := rowStrings(exec(t, n, s, "COUNT READWRITE_SPLITTING RULE")), [][]string{{"readwrite_splitting", "sharding_db", "1"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("COUNT: %v", got)
		}
		if got, want := rowStrings(exec(t, n, s, "SHOW RULES USED STORAGE UNIT ds_spare")), [][]string{{"readwrite_splitting", "rw"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("SHOW RULES USED STORAGE UNIT: %v", got)
		}
		exec(t, n, s, "ALTER READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_0), TRANSACTIONAL_READ_QUERY_STRATEGY='FIXED')")
		if got, want := rowStrings(exec(t, n, s, "SHOW READWRITE_SPLITTING RULE rw")), [][]string{{"rw", "ds_0", "ds_0", "FIXED", "", ""}}; !reflect.DeepEqual(got, want) {
			t.Errorf("after ALTER: %v, want %v", got, want)
		}
		exec(t, n, s, "DROP READWRITE_SPLITTING RULE rw")
		if got := rowStrings(exec(t, n, s, "SHOW READWRITE_SPLITTING RULES")); len(got) != 0 {
			t.Errorf("after DROP: %v", got)
		}
		if got := rowStrings(exec(t, n, s, "COUNT READWRITE_SPLITTING RULE")); len(got) != 0 {
			t.Errorf("COUNT after DROP: %v", got)
		}
		exec(t, n, s, "DROP READWRITE_SPLITTING RULE IF EXISTS rw")

		exec(t, n, s, "SET DEFAULT SINGLE TABLE STORAGE UNIT = ds_1")
		if got := rowStrings(exec(t, n, s, "SHOW DEFAULT SINGLE TABLE STORAGE UNIT")); !reflect.DeepEqual(got, [][]string{{"ds_1"}}) {
			t.Errorf("default single unit: %v", got)
		}
		exec(t, n, s, "SET DEFAULT SINGLE TABLE STORAGE UNIT = RANDOM")
		if got := rowStrings(exec(t, n, s, "SHOW DEFAULT SINGLE TABLE STORAGE UNIT")); !reflect.DeepEqual(got, [][]string{{"RANDOM"}}) {
			t.Errorf("default single unit after RANDOM: %v", got)
		}

		if got, want := rowStrings(exec(t, n, s, "SHOW SQL_PARSER RULE")), [][]string{{"initialCapacity: 128, maximumSize: 1024", "initialCapacity: 2000, maximumSize: 65535"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("SQL_PARSER defaults: %v", got)
		}
		exec(t, n, s, "ALTER SQL_PARSER RULE (SQL_STATEMENT_CACHE(INITIAL_CAPACITY=1000, MAXIMUM_SIZE=2000))")
		if got, want := rowStrings(exec(t, n, s, "SHOW SQL_PARSER RULE")), [][]string{{"initialCapacity: 128, maximumSize: 1024", "initialCapacity: 1000, maximumSize: 2000"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("SQL_PARSER after ALTER: %v", got)
		}
		exec(t, n, s, "ALTER TRANSACTION RULE (DEFAULT='XA', TYPE(NAME='Narayana'))")
		if got, want := rowStrings(exec(t, n, s, "SHOW TRANSACTION RULE")), [][]string{{"XA", "Narayana", ""}}; !reflect.DeepEqual(got, want) {
			t.Errorf("TRANSACTION after ALTER: %v", got)
		}
		exec(t, n, s, "ALTER GLOBAL CLOCK RULE (TYPE='TSO', PROVIDER='redis', ENABLED=true)")
		if got, want := rowStrings(exec(t, n, s, "SHOW GLOBAL CLOCK RULE")), [][]string{{"TSO", "redis", "true", ""}}; !reflect.DeepEqual(got, want) {
			t.Errorf("GLOBAL CLOCK after ALTER: %v", got)
		}
		exec(t, n, s, "ALTER SQL_FEDERATION RULE (SQL_FEDERATION_ENABLED=true, EXECUTION_PLAN_CACHE(INITIAL_CAPACITY=10, MAXIMUM_SIZE=20))")
		if got, want := rowStrings(exec(t, n, s, "SHOW SQL_FEDERATION RULE")), [][]string{{"true", "false", "initialCapacity: 10, maximumSize: 20"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("SQL_FEDERATION after ALTER: %v", got)
		}
		if got, want := rowStrings(exec(t, n, s, "SHOW SQL_TRANSLATOR RULE")), [][]string{{"NATIVE", "", "true"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("SQL_TRANSLATOR before ALTER: %v", got)
		}
		exec(t, n, s, "ALTER SQL_TRANSLATOR RULE (TYPE(NAME='jooq', PROPERTIES('dialect'='mysql')), USE_ORIGINAL_SQL_WHEN_TRANSLATING_FAILED=false)")
		if got, want := rowStrings(exec(t, n, s, "SHOW SQL_TRANSLATOR RULE")), [][]string{{"JOOQ", `{"dialect":"mysql"}`, "false"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("SQL_TRANSLATOR after ALTER: %v", got)
		}
		if e := execError(t, n, s, "ALTER SQL_TRANSLATOR RULE (TYPE(NAME='nope'))"); e.Code != 30000 {
			t.Errorf("SQL_TRANSLATOR of an unknown type: %+v", e)
		}

		exec(t, n, s, "CREATE DATABASE made_here")
		if e := execError(t, n, s, "CREATE DATABASE made_here"); e.Code != 1007 {
			t.Errorf("CREATE DATABASE twice: %+v", e)
		}
		exec(t, n, s, "DROP DATABASE made_here")
		if e := execError(t, n, s, "DROP DATABASE made_here"); e.Code != 1008 {
			t.Errorf("DROP DATABASE twice: %+v", e)
		}
	})
}

// TestRuleChangeShownOnEveryNodeOnReturn runs three nodes with their
// acknowledgements on real etcd and ZooKeeper: a rule created, altered
// or dropped on one node is shown so by the others as soon as the
// statement returns, with no warning.
func TestRuleChangeShownOnEveryNodeOnReturn(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		repo := open(t)
		var nodes []*testNode
		for _, id := range []string{"rw-1", "rw-2", "rw-3"} {
			n := startNode(t, repo, id, nil)
			a, err := distvar.StartAcker(testenv.Context(t), repo, distvar.AckerConfig{InstanceID: id, Node: n.node, Store: n.store, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(a.Close)
			nodes = append(nodes, n)
		}
		persistShardingDB(t, repo, nodes[0])
		for _, n := range nodes[1:] {
			testenv.Eventually(t, "every node to load sharding_db", func() bool { return n.store.Current().Databases["sharding_db"] != nil })
		}
		s1, s3 := newSession(), newSession()
		exec(t, nodes[0], s1, "USE sharding_db")
		exec(t, nodes[2], s3, "USE sharding_db")
		for _, step := range []struct{ change, show, want string }{
			{"CREATE READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1))", "SHOW READWRITE_SPLITTING RULES", "[[rw ds_0 ds_1 PRIMARY  ]]"},
			{"ALTER READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_1, READ_STORAGE_UNITS(ds_0))", "SHOW READWRITE_SPLITTING RULES", "[[rw ds_1 ds_0 PRIMARY  ]]"},
			{"DROP READWRITE_SPLITTING RULE rw", "SHOW READWRITE_SPLITTING RULES", "[]"},
			{"SET DEFAULT SINGLE TABLE STORAGE UNIT = ds_0", "SHOW DEFAULT SINGLE TABLE STORAGE UNIT", "[[ds_0]]"},
			{"ALTER SQL_PARSER RULE (PARSE_TREE_CACHE(INITIAL_CAPACITY=64, MAXIMUM_SIZE=512))", "SHOW SQL_PARSER RULE", "[[initialCapacity: 64, maximumSize: 512 initialCapacity: 2000, maximumSize: 65535]]"},
		} {
			res := exec(t, nodes[0], s1, step.change)
			if len(res.Warnings) > 0 {
				t.Errorf("%s: warnings %v", step.change, res.Warnings)
			}
			if got := fmt.Sprint(rowStrings(exec(t, nodes[2], s3, step.show))); got != step.want {
				t.Errorf("after %s, node 3 shows %s, want %s", step.change, got, step.want)
			}
		}
	})
}

// TestRuleChangeFromAStaleViewLosesNothing writes a readwrite-splitting
// group straight to the registry, as another node would, and at once
// changes another through the engine, whose view may not have the first
// yet: both stay (the statement is made again from the caught-up view,
// never written from the stale one).
func TestRuleChangeFromAStaleViewLosesNothing(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		ctx := testenv.Context(t)
		repo := open(t)
		n := startNode(t, repo, "stale", nil)
		persistShardingDB(t, repo, n)
		s := newSession()
		exec(t, n, s, "USE sharding_db")
		exec(t, n, s, "CREATE READWRITE_SPLITTING RULE mine (WRITE_STORAGE_UNIT=ds_1, READ_STORAGE_UNITS(ds_0))")
		sess := n.node.Session()
		reads := []string{"ds_0", "ds_spare"}
		mine := func(read string) map[string]any {
			return map[string]any{"writeDataSourceName": "ds_1", "readDataSourceNames": []any{read}, "transactionalReadQueryStrategy": "PRIMARY"}
		}
		groups := map[string]any{"mine": mine("ds_0")}
		for i := range 10 {
			// The other node's change, made from the registry's rule.
			other := fmt.Sprintf("other_%d", i)
			groups[other] = map[string]any{"writeDataSourceName": "ds_0", "readDataSourceNames": []any{"ds_1"}, "transactionalReadQueryStrategy": "PRIMARY"}
			if _, err := rules.ChangeRule(ctx, repo, "sharding_db", "readwrite_splitting", func(_ metadata.RuleRead, c map[string]any, _ *rule.Edits) (map[string]any, error) {
				g, _ := c["dataSourceGroups"].(map[string]any)
				if g == nil {
					g = map[string]any{}
				}
				g[other] = groups[other]
				c["dataSourceGroups"] = g
				return c, nil
			}, rules.ChangeOptions{Layout: paths.DefaultLayout, Session: sess}); err != nil {
				t.Fatal(err)
			}
			// At once, this node's change.
			read := reads[(i+1)%2]
			exec(t, n, s, "ALTER READWRITE_SPLITTING RULE mine (WRITE_STORAGE_UNIT=ds_1, READ_STORAGE_UNITS("+read+"))")
			groups["mine"] = mine(read)
			var got []string
			for _, r := range rowStrings(exec(t, n, s, "SHOW READWRITE_SPLITTING RULES")) {
				got = append(got, r[0]+":"+r[2])
			}
			var want []string
			for _, g := range slices.Sorted(maps.Keys(groups)) {
				want = append(want, g+":"+rule.Text(rule.Map(groups[g])["readDataSourceNames"]))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: groups %v, want %v", i, got, want)
			}
		}
	})
}

// slowRegistry delays, after reading, each Get under /metadata (a node's
// check whether a database still exists when an announcement goes) and,
// before deleting, each Delete under /metadata: the widest gaps the network can open
// between a DROP DATABASE and the nodes that follow it.
type slowRegistry struct {
	registry.Repository
	get, delete time.Duration
}

func (r slowRegistry) Get(ctx context.Context, key string) (registry.KV, error) {
	kv, err := r.Repository.Get(ctx, key)
	if registry.IsUnder(key, paths.MetadataRoot) {
		time.Sleep(r.get)
	}
	return kv, err
}

func (r slowRegistry) Delete(ctx context.Context, key string) error {
	if registry.IsUnder(key, paths.MetadataRoot) {
		time.Sleep(r.delete)
	}
	return r.Repository.Delete(ctx, key)
}

// TestDroppedDatabaseStaysDropped, on real etcd and ZooKeeper: once DROP
// DATABASE returned, the node's view never shows the database again, even
// when the node reads whether it exists (as the DROP announcement goes)
// before the delete and applies the answer after the statement returned;
// a second DROP is 1008.
func TestDroppedDatabaseStaysDropped(t *testing.T) {
	backends(t, func(t *testing.T, open func(t *testing.T) registry.Repository) {
		ctx := testenv.Context(t)
		repo := open(t)
		view, err := metadata.Bootstrap(ctx, slowRegistry{Repository: repo, get: 600 * time.Millisecond}, nil, nil, metadata.Options{Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = view.Run(runCtx) }()
		defer func() { stop(); <-done }()
		n := startNode(t, repo, "drop", nil, func(d *Deps) {
			d.Repo = slowRegistry{Repository: repo, delete: 300 * time.Millisecond}
			d.Metadata = view
		})
		s := newSession()
		exec(t, n, s, "CREATE DATABASE dropped_db")
		var returned, shownAgain atomic.Bool
		cancel := view.Subscribe(func(snap *metadata.Snapshot, _ []metadata.Change) {
			if returned.Load() && snap.Databases["dropped_db"] != nil {
				shownAgain.Store(true)
			}
		})
		defer cancel()
		exec(t, n, s, "DROP DATABASE dropped_db")
		returned.Store(true)
		time.Sleep(2 * time.Second)
		if shownAgain.Load() {
			t.Fatal("the view showed the database again after DROP DATABASE returned")
		}
		if e := execError(t, n, s, "DROP DATABASE dropped_db"); e.Code != 1008 {
			t.Fatalf("DROP DATABASE twice: %+v", e)
		}
	})
}
