package rules

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestApplyReadsTheRegistry: the readwrite-splitting, single-table and
// global rule statements compute the next rule from the registry's (a
// group another node wrote stays; a global rule's settings not given
// keep the registry's value), read the units' tables through
// Options.Introspect, and refuse with upstream's codes.
func TestApplyReadsTheRegistry(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	db := config.Database{Name: "db", DataSources: map[string]config.DataSource{
		"ds_0": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_0", "root", ""),
		"ds_1": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_1", "root", ""),
		"ds_2": config.NewDataSource("jdbc:mysql://127.0.0.1:3306/ds_2", "root", ""),
	}, Rules: []config.Rule{{Type: "readwrite_splitting", Content: map[string]any{"dataSourceGroups": map[string]any{
		"theirs": map[string]any{"writeDataSourceName": "ds_2", "readDataSourceNames": []any{"ds_1"}, "transactionalReadQueryStrategy": "PRIMARY"}}}}}}
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, db); err != nil {
		t.Fatal(err)
	}
	var asked []string
	opts := Options{Layout: paths.DefaultLayout, Introspect: func(_ context.Context, d config.Database) ([]datasource.Schema, error) {
		for u := range d.DataSources {
			asked = append(asked, u)
			if u == "ds_1" {
				return nil, errors.New("connection refused")
			}
		}
		return []datasource.Schema{{Name: "db", Tables: map[string]datasource.Table{"t_user": {}}}}, nil
	}}
	apply := func(q string) (Outcome, error) {
		t.Helper()
		st, err := families.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		return Apply(ctx, repo, "db", st, opts)
	}
	code := func(err error) int {
		var se *sqlerr.Error
		if errors.As(err, &se) {
			return int(se.Code)
		}
		return 0
	}
	for _, tc := range []struct {
		statement string
		code      int
	}{
		{"CREATE READWRITE_SPLITTING RULE mine (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1))", 0},
		{"CREATE READWRITE_SPLITTING RULE other (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_1))", 10200}, // ds_0 is mine's write unit
		{"DROP READWRITE_SPLITTING RULE nope", 10202},
		{"LOAD SINGLE TABLE ds_0.t_user", 0},
		{"LOAD SINGLE TABLE ds_0.t_none", 10501},
		{"LOAD SINGLE TABLE ds_1.t_user", 10502},
		{"LOAD SINGLE TABLE ds_9.t_user", 10102},
		{"SET DEFAULT SINGLE TABLE STORAGE UNIT = theirs", 0},
	} {
		if _, err := apply(tc.statement); code(err) != tc.code || (tc.code == 0) != (err == nil) {
			t.Fatalf("%s: %v, want code %d", tc.statement, err, tc.code)
		}
	}
	if !reflect.DeepEqual(asked, []string{"ds_0", "ds_0", "ds_1"}) {
		t.Errorf("units introspected: %v", asked)
	}
	d, _, err := metadata.ReadDatabase(ctx, repo, "db")
	if err != nil {
		t.Fatal(err)
	}
	if groups := ReadwriteGroups(d.Rules["readwrite_splitting"].Content); len(groups) != 2 || groups["theirs"] == nil || groups["mine"] == nil {
		t.Errorf("readwrite-splitting groups %v, want theirs and mine", groups)
	}
	if want := map[string]any{"tables": []any{"ds_0.t_user"}, "defaultDataSource": "theirs"}; !reflect.DeepEqual(d.Rules["single"].Content, want) {
		t.Errorf("single rule %v, want %v", d.Rules["single"].Content, want)
	}
	// A group a single rule names is in use.
	if _, err := apply("DROP READWRITE_SPLITTING RULE theirs"); code(err) != 10203 {
		t.Errorf("DROP of a group the single rule names: %v, want 10203", err)
	}

	// A global rule statement: db is ignored, the settings merge into the
	// registry's rule.
	if err := metadata.PersistGlobal(ctx, repo, []config.Rule{{Type: "sql_parser", Content: map[string]any{
		"sqlStatementCache": map[string]any{"initialCapacity": 100, "maximumSize": 200}}}}, nil); err != nil {
		t.Fatal(err)
	}
	st, _ := families.Parse("ALTER SQL_PARSER RULE (PARSE_TREE_CACHE(INITIAL_CAPACITY=64, MAXIMUM_SIZE=512))")
	if !IsGlobal(st) || !Is(st) {
		t.Fatalf("IsGlobal/Is of ALTER SQL_PARSER RULE")
	}
	out, err := Apply(ctx, repo, "", st, opts)
	if err != nil || !out.Changed || !out.Global || out.RuleType != "sql_parser" {
		t.Fatalf("ALTER SQL_PARSER RULE: %+v %v", out, err)
	}
	global, _, err := metadata.ReadGlobalRules(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"sqlStatementCache": map[string]any{"initialCapacity": 100, "maximumSize": 200},
		"parseTreeCache": map[string]any{"initialCapacity": 64, "maximumSize": 512}}
	if !reflect.DeepEqual(global["sql_parser"].Content, want) {
		t.Errorf("sql_parser rule %v, want %v", global["sql_parser"].Content, want)
	}
	st, _ = families.Parse("ALTER TRANSACTION RULE (DEFAULT='XA', TYPE(NAME='nope'))")
	if _, err := Apply(ctx, repo, "", st, opts); code(err) != 30000 {
		t.Errorf("ALTER TRANSACTION RULE of an unknown provider: %v, want 30000", err)
	}
}
