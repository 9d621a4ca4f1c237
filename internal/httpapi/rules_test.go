package httpapi

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rules"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestRuleStatementRoutes: POST /api/v1/databases/{db}/rules runs every
// database rule statement rules.Apply runs (readwrite-splitting and single
// tables as well as sharding), POST /api/v1/rules the global rule
// statements, each with upstream's codes; a statement of the other route,
// or no rule statement, is 400 saying where it goes, and both routes want
// the token.
func TestRuleStatementRoutes(t *testing.T) {
	repo := memory.New()
	n := startNode(t, repo, "rules", nil)
	ctx := context.Background()
	units := map[string]config.DataSource{
		"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", ""),
		"ds_1": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_1", "root", ""),
	}
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "rw_db", DataSources: units}); err != nil {
		t.Fatal(err)
	}
	post := func(path, statement string) response {
		t.Helper()
		return do(t, n, "POST", path, testToken, `{"statement":"`+statement+`"}`)
	}
	const dbRoute, globalRoute = "/api/v1/databases/rw_db/rules", "/api/v1/rules"

	var out ruleChange
	r := post(dbRoute, "CREATE READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1))")
	if r.status != 200 {
		t.Fatalf("CREATE READWRITE_SPLITTING RULE: %d %s", r.status, r.body)
	}
	r.json(t, &out)
	if !out.Changed || out.Rule != "readwrite_splitting" || out.Database != "rw_db" || out.Global {
		t.Fatalf("CREATE READWRITE_SPLITTING RULE answered %s", r.body)
	}
	d, _, err := metadata.ReadDatabase(ctx, repo, "rw_db")
	if err != nil {
		t.Fatal(err)
	}
	if g := rule.Map(rules.ReadwriteGroups(d.Rules["readwrite_splitting"].Content)["rw"]); rule.Text(g["writeDataSourceName"]) != "ds_0" {
		t.Fatalf("the registry's readwrite-splitting rule: %v", d.Rules["readwrite_splitting"].Content)
	}
	post(dbRoute, "CREATE READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_1, READ_STORAGE_UNITS(ds_0))").
		apiError(t, 400, 10204, "Duplicate Readwrite-splitting rule names '[rw]' in database 'rw_db'.")
	post(dbRoute, "SET DEFAULT SINGLE TABLE STORAGE UNIT = ds_9").apiError(t, 400, 10102, "Storage units '[ds_9]' do not exist in database 'rw_db'.")
	if r := post(dbRoute, "SET DEFAULT SINGLE TABLE STORAGE UNIT = rw"); r.status != 200 {
		t.Fatalf("SET DEFAULT SINGLE TABLE STORAGE UNIT: %d %s", r.status, r.body)
	}
	post("/api/v1/databases/nope_db/rules", "DROP READWRITE_SPLITTING RULE rw").apiError(t, 404, 0, "Unknown database 'nope_db'.")
	post("/api/v1/databases/nope_db/rules", "DROP READWRITE_SPLITTING RULE rw FROM rw_db").
		apiError(t, 400, 0, "the statement names database rw_db: run it with POST /api/v1/databases/rw_db/rules")

	const alter = "ALTER SQL_PARSER RULE (PARSE_TREE_CACHE(INITIAL_CAPACITY=64, MAXIMUM_SIZE=512))"
	post(dbRoute, alter).apiError(t, 400, 0, "POST /api/v1/rules")
	post(globalRoute, "DROP READWRITE_SPLITTING RULE rw").apiError(t, 400, 0, "POST /api/v1/databases/{db}/rules")
	post(globalRoute, "SHOW COMPUTE NODES").apiError(t, 400, 0, "not a rule statement")
	post(globalRoute, "ALTER TRANSACTION RULE (DEFAULT='XA', TYPE(NAME='nope'))").apiError(t, 400, 30000, "with type 'nope'")
	do(t, n, "POST", globalRoute, "", `{"statement":"`+alter+`"}`).apiError(t, 401, 0, "")
	r = post(globalRoute, alter)
	if r.status != 200 {
		t.Fatalf("%s: %d %s", alter, r.status, r.body)
	}
	out = ruleChange{}
	r.json(t, &out)
	if !out.Changed || out.Rule != "sql_parser" || !out.Global || out.Database != "" {
		t.Fatalf("%s answered %s", alter, r.body)
	}
	global, _, err := metadata.ReadGlobalRules(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rule.Map(global["sql_parser"].Content["parseTreeCache"]), map[string]any{"initialCapacity": 64, "maximumSize": 512}; !reflect.DeepEqual(got, want) {
		t.Fatalf("the registry's sql_parser rule: %v", global["sql_parser"].Content)
	}
}

// TestRuleRefusalAgreesWithTheNodesView: a rule statement the HTTP API
// refuses (or leaves a no-op) from what the registry holds is answered only
// once the node's own view holds that state, as on the consoles, so that
// what the node shows next does not contradict the answer, even when the
// node sees the registry's changes late and another node changed the rule
// just before. The CLI's rules command with --server goes through it.
func TestRuleRefusalAgreesWithTheNodesView(t *testing.T) {
	repo := memory.New()
	if err := metadatatest.CreateDatabase(context.Background(), repo, paths.DefaultLayout, config.Database{Name: "sharding_db", DataSources: map[string]config.DataSource{}}); err != nil {
		t.Fatal(err)
	}
	lag := &fault.LagEvent{Match: "/rules/", Delay: 1500 * time.Millisecond}
	late := startNode(t, fault.Observe(repo, lag), "late", nil)
	other := startNode(t, repo, "other", nil)
	post := func(n *testNode, statement string) response {
		t.Helper()
		return do(t, n, "POST", "/api/v1/databases/sharding_db/rules", testToken, `{"statement":"`+statement+`"}`)
	}
	shows := func(table string) bool {
		d := late.srv.cfg.Store.Current().Databases["sharding_db"]
		return d != nil && slices.Contains(rule.List(d.Rules["broadcast"].Content["tables"]), table)
	}
	for _, tc := range []struct{ table, stmt string }{
		{"t_refused", "DROP BROADCAST TABLE RULE t_refused"},
		{"t_noop", "DROP BROADCAST TABLE RULE IF EXISTS t_noop"},
	} {
		if r := post(late, "CREATE BROADCAST TABLE RULE "+tc.table); r.status != 200 || !shows(tc.table) {
			t.Fatalf("CREATE BROADCAST TABLE RULE %s: %d %s; the node's view shows it: %v", tc.table, r.status, r.body, shows(tc.table))
		}
		lag.Arm()
		if r := post(other, "DROP BROADCAST TABLE RULE "+tc.table); r.status != 200 {
			t.Fatalf("DROP on the other node: %d %s", r.status, r.body)
		}
		r := post(late, tc.stmt)
		if strings.Contains(tc.stmt, "IF EXISTS") {
			if r.status != 200 {
				t.Fatalf("%s: %d %s", tc.stmt, r.status, r.body)
			}
		} else {
			r.apiError(t, 400, 10202, tc.table)
		}
		if shows(tc.table) {
			t.Fatalf("%s answered while the node's view still shows %s", tc.stmt, tc.table)
		}
	}
}
